package actoviq_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// busyOnCommit answers store.ErrBusy (writing nothing) to every write that
// commits a call, until open is closed; before each busy answer it calls
// during once.
type busyOnCommit struct {
	store.Store
	mu     sync.Mutex
	open   bool
	busy   atomic.Int64
	during func()
	once   sync.Once
}

func (b *busyOnCommit) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	b.mu.Lock()
	open := b.open
	b.mu.Unlock()
	if !open {
		for _, w := range p.Ledger {
			if w.Entry.State == store.LedgerCommitted {
				b.busy.Add(1)
				if b.during != nil {
					b.once.Do(b.during)
				}
				return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
			}
		}
	}
	return b.Store.RunWrite(ctx, p)
}

// ClaimRenew is refused as busy too while the store is locked: the lease
// of the drive runs out.
func (b *busyOnCommit) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	b.mu.Lock()
	open := b.open
	b.mu.Unlock()
	if !open && b.busy.Load() > 0 {
		return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
	}
	return b.Store.ClaimRenew(ctx, p)
}

// The committed write of a side effect meets a busy store for longer than
// the drive's lease; meanwhile another runtime takes the run over (the
// lease expired) and finds the call started. The first drive's write,
// made again with its old fence, must be refused: the call is never
// recorded twice, the tool ran once, and the run waits for a
// reconciliation.
func TestReview7BusyRetryFencedAfterTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
			Tools: []toolT{pay}}
		b := &busyOnCommit{Store: st}
		rtA, err := actoviq.New(b, &actoviq.Config{LeaseTTL: 150 * time.Millisecond, CommitTimeout: 3 * time.Second, Holder: "A"})
		if err != nil {
			t.Fatal(err)
		}
		defer rtA.Close()
		rtB := newRT(t, st, "B", time.Minute)
		took := make(chan error, 1)
		var resB *actoviq.RunResult
		b.during = func() {
			go func() {
				defer close(took)
				// The lease of A expires (its heartbeat goes on: wait until B can take it).
				deadline := time.Now().Add(2 * time.Second)
				for {
					res, err := rtB.Resume(ctx, &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(scripted.Turn{Text: "x"}),
						Tools: []toolT{pay}}, "r1", nil)
					var held *actoviq.RunHeldError
					if errors.As(err, &held) && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					resB = res
					took <- err
					b.mu.Lock()
					b.open = true
					b.mu.Unlock()
					return
				}
			}()
		}
		resA, errA := rtA.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
		errB := <-took
		if errB != nil || resB == nil || resB.Status != actoviq.StatusInterrupted || len(resB.Interruptions) != 1 ||
			resB.Interruptions[0].Kind != actoviq.InterruptReconciliation {
			t.Fatalf("B's takeover: %+v %v", resB, errB)
		}
		if !errors.Is(errA, store.ErrFenced) {
			t.Fatalf("A's Run: %+v %v, want its write fenced out", resA, errA)
		}
		if b.busy.Load() < 2 {
			t.Fatalf("%d busy answers: the write was not made again", b.busy.Load())
		}
		if n := pay.count(); n != 1 {
			t.Fatalf("the tool ran %d times", n)
		}
		info, err := rtB.Get(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != actoviq.StatusInterrupted || len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerStarted ||
			len(toolResults(t, info)) != 0 {
			t.Fatalf("after the takeover: %s, ledger %+v", info.Status, info.Ledger)
		}
	})
}

// busyOnStart answers store.ErrBusy to a call's started write, tries
// times (forever when tries < 0).
type busyOnStart struct {
	store.Store
	tries int64
	busy  atomic.Int64
}

func (b *busyOnStart) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	for _, w := range p.Ledger {
		if w.Entry.State == store.LedgerStarted && (b.tries < 0 || b.busy.Load() < b.tries) {
			b.busy.Add(1)
			return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
		}
	}
	return b.Store.RunWrite(ctx, p)
}

// A call's started write refused as busy is made again before the tool
// runs: the tool runs once, and only once started is stored. When the
// store stays busy past the budget, the tool never runs and nothing of
// the model's response is stored (a lone call's started write carries
// the response: drive_fold.go): another drive asks the model again and
// runs the call it answers, once.
func TestReview7BusyStartedWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		for _, tries := range []int64{3, -1} {
			b := &busyOnStart{Store: st, tries: tries}
			var seen atomic.Value
			pay := &payTool{name: "pay"}
			// Busy three times: a budget and a lease that load cannot
			// spend (three retries and real writes took over 600 ms at a
			// load of 10). Busy for good: a short budget, and a lease
			// that lapses before the second drive resumes.
			budget, ttl := 10*time.Second, 10*time.Second
			if tries < 0 {
				budget, ttl = 600*time.Millisecond, 200*time.Millisecond
			}
			rt, err := actoviq.New(b, &actoviq.Config{CommitTimeout: budget, LeaseTTL: ttl, Holder: "A"})
			if err != nil {
				t.Fatal(err)
			}
			id := "s" + string(rune('0'+tries+1))
			read := make(chan struct{})
			if tries > 0 {
				pay.started = make(chan struct{})
				go func() {
					defer close(read)
					<-pay.started
					en, err := st.LedgerGet(ctx, &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: "c1"})
					if err != nil {
						seen.Store("error " + err.Error())
						return
					}
					seen.Store(string(en.State))
				}()
			}
			a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
				Tools: []toolT{pay}}
			res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
			rt.Close()
			if tries > 0 {
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
					t.Fatalf("busy %d times: %+v %v, tool ran %d times", tries, res, err, pay.count())
				}
				<-read
				// Read as the tool ran (or just after it: committed follows started).
				if s, _ := seen.Load().(string); s != string(store.LedgerStarted) && s != string(store.LedgerCommitted) {
					t.Fatalf("the tool ran with its entry %q", s)
				}
				continue
			}
			if !errors.Is(err, store.ErrBusy) || pay.count() != 0 || b.busy.Load() < 2 {
				t.Fatalf("busy past the budget: %+v %v, tool ran %d times, %d busy", res, err, pay.count(), b.busy.Load())
			}
			en, err := st.LedgerGet(ctx, &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: "c1"})
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the call after a started write (with the response) given up: %+v %v", en, err)
			}
			time.Sleep(250 * time.Millisecond) // the lease of the drive that gave up
			rt2 := newRT(t, st, "B", time.Minute)
			a.Provider = scripted.New( // asked again: the response was not stored
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
			res, err = rt2.Resume(ctx, a, id, nil)
			if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
				t.Fatalf("resume: %+v %v, tool ran %d times", res, err, pay.count())
			}
		}
	})
}
