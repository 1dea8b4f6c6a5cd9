package actoviq_test

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// lockingModel is a scripted model that, as its first answer is given,
// has another handle of the SQLite file take the file's write lock and
// keep it until free is closed: the write of that answer (no tool has
// run) meets a busy file.
type lockingModel struct {
	*scripted.Provider
	db   *sql.DB
	once sync.Once
	free chan struct{}
	done chan struct{} // closed once the lock is given up (or was never taken)
	err  error
}

func (l *lockingModel) lock() {
	l.once.Do(func() {
		tx, err := l.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE: the write lock
		if err != nil {
			l.err = err
			close(l.done)
			return
		}
		go func() {
			<-l.free
			_ = tx.Rollback()
			close(l.done)
		}()
	})
}

func (l *lockingModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r, err := l.Provider.Generate(ctx, req)
	l.lock()
	return r, err
}

func (l *lockingModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		defer l.lock()
		for ev, err := range l.Provider.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// waitFor polls cond for at most a minute.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// resumeWhenFree resumes id in rt, waiting for the claim a stopped drive
// could not release (the file was locked) to expire.
func resumeWhenFree(t *testing.T, rt *actoviq.Runtime, a *actoviq.AgentSpec, id string) (*actoviq.RunResult, error) {
	t.Helper()
	for end := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		res, err := rt.Resume(context.Background(), a, id, nil)
		var held *actoviq.RunHeldError
		if errors.As(err, &held) && time.Now().Before(end) {
			continue
		}
		return res, err
	}
}

// Runtime.Close while the drive makes again a write the store refused as
// busy, a write that records no tool's outcome (the model's answer, which
// asks for a side effect that has not run): the retries stop at Close, the
// drive stops as Close says (ErrClosed, the run resumable), and the run
// goes on in another runtime once the file is free, its tool run once.
// The file stays locked until Close has returned. On main Close waited
// out the write's whole budget (CommitTimeout, 5 s here) and Run returned
// the busy error.
func TestCloseStopsTheRetriesOfABusyWrite(t *testing.T) {
	st, other := openBusyPair(t)
	pay := &payTool{name: "pay"}
	model := &lockingModel{Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}},
		scripted.Turn{Text: "done"}), db: other, free: make(chan struct{}), done: make(chan struct{})}
	rt, err := actoviq.New(st, &actoviq.Config{CommitTimeout: 5 * time.Second, LeaseTTL: 300 * time.Millisecond, Holder: "A"})
	if err != nil {
		t.Fatal(err)
	}
	a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: model, Tools: []toolT{pay}}
	var busyAtClose atomic.Int64
	closed := make(chan struct{})
	go func() {
		defer close(model.free)
		defer close(closed)
		waitFor(func() bool { return st.busy.Load() >= 2 })
		busyAtClose.Store(st.busy.Load())
		rt.Close()
	}()
	_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "cb1", Items: input("pay").Items})
	<-closed
	<-model.done
	if model.err != nil {
		t.Fatalf("the other handle could not lock the file: %v", model.err)
	}
	var ce *actoviq.ClosedError
	if !errors.As(err, &ce) || !ce.Driven {
		t.Fatalf("Run: %v, want the ClosedError of a driven run", err)
	}
	if pay.count() != 0 {
		t.Fatalf("the tool ran %d times before its call was recorded", pay.count())
	}
	t.Logf("%d busy tries before Close, %d in all", busyAtClose.Load(), st.busy.Load())
	rt2 := newRT(t, st.Store, "B", time.Minute)
	a.Provider = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
	res, err := resumeWhenFree(t, rt2, a, "cb1")
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("resume: %+v %v, the tool ran %d times", res, err, pay.count())
	}
}

// Runtime.Close while the write of a tool's result meets the busy file:
// that write keeps its retries (its result is known and exists nowhere
// else), Close waits for it, and the result is recorded once the file is
// free. The file is freed only after two more busy tries, made after Close
// was called.
func TestCloseKeepsRetryingAKnownResult(t *testing.T) {
	st, other := openBusyPair(t)
	pay := &lockingTool{db: other}
	var atClose atomic.Int64
	atClose.Store(-1)
	pay.until = func() bool { n := atClose.Load(); return n >= 0 && st.busy.Load() >= n+2 }
	rt, err := actoviq.New(st, &actoviq.Config{CommitTimeout: 20 * time.Second, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a := &actoviq.AgentSpec{ID: "busy", Model: "scripted-1", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{}`)}},
		scripted.Turn{Text: "done"}),
		Tools: []toolT{pay}}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		waitFor(func() bool { return st.busy.Load() >= 1 })
		atClose.Store(st.busy.Load())
		rt.Close()
	}()
	_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "ck1", Items: input("pay").Items})
	<-closed
	pay.wg.Wait()
	if pay.err != nil {
		t.Fatalf("the other handle could not lock the file: %v", pay.err)
	}
	if !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("Run: %v, want ErrClosed", err)
	}
	if n := st.busy.Load(); n < atClose.Load()+2 {
		t.Fatalf("%d busy tries, %d at Close: the result's write was not made again after Close", n, atClose.Load())
	}
	en, err := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "ck1", CallID: "c1"})
	if err != nil || en.State != store.LedgerCommitted || string(en.Result) != `{"content":"paid"}` {
		t.Fatalf("the call after Close: %+v %v", en, err)
	}
	if n := pay.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// When the file stays locked past the budget of a result's write made
// after Close, Run's error says both: the runtime was closed and the
// write was refused as busy (the call is left started, for
// reconciliation). On main it matched store.ErrBusy only.
func TestCloseWithAResultPastItsBudget(t *testing.T) {
	st, other := openBusyPair(t)
	pay := &lockingTool{db: other}
	closed := make(chan struct{})
	pay.until = func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	}
	rt, err := actoviq.New(st, &actoviq.Config{CommitTimeout: time.Second, LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a := &actoviq.AgentSpec{ID: "busy", Model: "scripted-1", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{}`)}},
		scripted.Turn{Text: "done"}),
		Tools: []toolT{pay}}
	var atClose atomic.Int64
	go func() {
		defer close(closed)
		waitFor(func() bool { return st.busy.Load() >= 1 })
		atClose.Store(st.busy.Load())
		rt.Close()
	}()
	_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "cp1", Items: input("pay").Items})
	<-closed
	pay.wg.Wait()
	if pay.err != nil {
		t.Fatalf("the other handle could not lock the file: %v", pay.err)
	}
	if !errors.Is(err, actoviq.ErrClosed) || !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Run: %v, want an error matching ErrClosed and store.ErrBusy", err)
	}
	if st.busy.Load() <= atClose.Load() {
		t.Fatalf("%d busy tries, %d at Close: the result's write was not made again after Close", st.busy.Load(), atClose.Load())
	}
	en, err := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "cp1", CallID: "c1"})
	if err != nil || en.State != store.LedgerStarted {
		t.Fatalf("the call: %+v %v, want it left started", en, err)
	}
	if n := pay.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// busyOnResponse answers store.ErrBusy (writing nothing) to every write
// that stores the run running (the model's answer), until open.
type busyOnResponse struct {
	store.Store
	open atomic.Bool
	busy atomic.Int64
}

func (b *busyOnResponse) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if !b.open.Load() && p.Run != nil && p.Run.Status == store.RunRunning {
		b.busy.Add(1)
		return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
	}
	return b.Store.RunWrite(ctx, p)
}

// A cancellation (the caller's context, Runtime.Cancel) while the drive
// makes again a busy write that records no tool's outcome stops those
// retries, and the run ends cancelled: the cancellation's own write is
// made (it is not refused here). On main the drive kept retrying the
// model's answer for the whole budget (2 s here) and Run returned the busy
// error, the run not ended cancelled by that drive.
func TestCancelStopsTheRetriesOfABusyWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, how := range []string{"context", "Runtime.Cancel"} {
			t.Run(how, func(t *testing.T) {
				b := &busyOnResponse{Store: st}
				rt, err := actoviq.New(b, &actoviq.Config{CommitTimeout: 2 * time.Second, Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
					Tools: []toolT{pay}}
				id := "cc-" + how
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cancelled := make(chan error, 1)
				go func() {
					waitFor(func() bool { return b.busy.Load() >= 2 })
					if how == "context" {
						cancel()
						cancelled <- nil
						return
					}
					cancelled <- rt.Cancel(context.Background(), id)
				}()
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if cerr := <-cancelled; cerr != nil {
					t.Fatalf("Cancel: %v", cerr)
				}
				if err != nil || res.Status != actoviq.StatusCancelled {
					t.Fatalf("Run: %+v %v, want the run ended cancelled", res, err)
				}
				info, err := rt.Get(context.Background(), id)
				if err != nil || info.Status != actoviq.StatusCancelled || len(info.Ledger) != 0 || pay.count() != 0 {
					t.Fatalf("the run: %+v %v, the tool ran %d times", info, err, pay.count())
				}
			})
		}
	})
}
