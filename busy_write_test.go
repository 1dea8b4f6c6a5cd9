package actoviq_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// busyCounter counts the run writes a store refused as busy.
type busyCounter struct {
	store.Store
	busy atomic.Int64
}

func (b *busyCounter) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	res, err := b.Store.RunWrite(ctx, p)
	if errors.Is(err, store.ErrBusy) {
		b.busy.Add(1)
	}
	return res, err
}

// lockingTool is a side effect that, as it returns, has another handle
// of the SQLite file take the write lock and keep it for hold, or, when
// until is set, until it reports true (at most 30 s): the committed write
// of its result meets a busy file.
type lockingTool struct {
	db    *sql.DB // the other handle
	hold  time.Duration
	until func() bool
	calls atomic.Int64
	wg    sync.WaitGroup
	err   error
}

func (l *lockingTool) Spec() tool.Spec {
	return tool.Spec{Name: "pay", Description: "pays, and leaves the file locked a while", Effect: tool.SideEffect}
}

func (l *lockingTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	l.calls.Add(1)
	tx, err := l.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		l.err = err
		return tool.Result{}, err
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer tx.Rollback()
		if l.until == nil {
			time.Sleep(l.hold)
			return
		}
		for end := time.Now().Add(30 * time.Second); !l.until() && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return tool.Result{Content: "paid"}, nil
}

// openBusyPair opens a SQLite file with a short busy timeout, and a
// second handle of it.
func openBusyPair(t *testing.T) (*busyCounter, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	st, err := storesqlite.Open(path, &storesqlite.Config{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	other, err := storesqlite.Open(path, &storesqlite.Config{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return &busyCounter{Store: st}, other.DB()
}

// A call's committed write that meets the SQLite file locked by another
// handle for longer than the store's busy timeout (50 ms here; the lock
// is held until the store refused two tries) is made again, with the same
// revision and fence, until the lock is free: the result is recorded, the call is committed and
// the run completes. The tool ran once. On main the busy write stopped
// the drive and left the call started: the run went to reconciliation
// with the tool's result lost.
func TestBusyFileKeepsKnownResult(t *testing.T) {
	st, other := openBusyPair(t)
	pay := &lockingTool{db: other}
	pay.until = func() bool { return st.busy.Load() >= 2 }
	rt, err := actoviq.New(st, &actoviq.Config{CommitTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a := &actoviq.AgentSpec{ID: "busy", Model: "scripted-1", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{pay}}
	res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "b1", Items: []item.Item{item.UserText("pay")}})
	pay.wg.Wait()
	if pay.err != nil {
		t.Fatalf("the other handle could not lock the file: %v", pay.err)
	}
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run: %+v %v", res, err)
	}
	if n := pay.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if st.busy.Load() < 2 {
		t.Fatalf("%d writes met the busy file, want 2", st.busy.Load())
	}
	info, err := rt.Get(context.Background(), "b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted || string(info.Ledger[0].Result) != `{"content":"paid"}` {
		t.Fatalf("ledger %+v", info.Ledger)
	}
	t.Logf("%d busy tries before the write was made", st.busy.Load())
}

// When the file stays locked past the write's budget
// (Config.CommitTimeout), the write gives up with an error matching
// store.ErrBusy, and the call is left started: a resume, once the
// drive's lease expired, sends it to reconciliation and never runs the
// tool again.
func TestBusyFilePastCommitBudget(t *testing.T) {
	st, other := openBusyPair(t)
	pay := &lockingTool{db: other, hold: 2500 * time.Millisecond}
	rt, err := actoviq.New(st, &actoviq.Config{CommitTimeout: time.Second, LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a := &actoviq.AgentSpec{ID: "busy", Model: "scripted-1", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{pay}}
	_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "b2", Items: []item.Item{item.UserText("pay")}})
	pay.wg.Wait()
	// The last try may be cut by the budget itself on a loaded machine
	// (its error is then the context's, the busy tries before it named:
	// writeAgain); seen once in a go test ./... run at load ~8.
	if !errors.Is(err, store.ErrBusy) && !(errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "met a busy store")) {
		t.Fatalf("run: %v, want an error matching store.ErrBusy, or the budget's deadline after busy tries", err)
	}
	// How many tries fit the budget depends on the machine's load (a try
	// waits the 50 ms busy timeout, and more on a loaded machine);
	// TestBusyFileKeepsKnownResult shows that a write is made again.
	t.Logf("%d busy tries in the budget", st.busy.Load())
	// The drive's release met the locked file too: its lease expires.
	time.Sleep(400 * time.Millisecond)
	res, err := rt.Resume(context.Background(), a, "b2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("resume: %+v", res)
	}
	if n := pay.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}
