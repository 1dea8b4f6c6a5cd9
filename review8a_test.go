package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// review8a: a store that refuses as busy (writing nothing) the run writes
// that match, while armed; disarm ends it.
type busyWhen struct {
	store.Store
	match  func(p *store.RunWriteParams) bool
	armed  atomic.Bool
	busy   atomic.Int64
	mu     sync.Mutex
	budget int64 // after disarmAfter: how many more refusals (-1: unbounded)
}

func (b *busyWhen) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if b.armed.Load() && b.match(p) {
		b.mu.Lock()
		refuse := b.budget != 0
		if b.budget > 0 {
			b.budget--
		}
		b.mu.Unlock()
		if refuse {
			b.busy.Add(1)
			return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
		}
	}
	return b.Store.RunWrite(ctx, p)
}

// refuseMore lets n more matching writes be refused, then none.
func (b *busyWhen) refuseMore(n int64) {
	b.mu.Lock()
	b.budget = n
	b.mu.Unlock()
}

func hasEntry(p *store.RunWriteParams, callID string, st store.LedgerState) bool {
	for _, w := range p.Ledger {
		if w.Entry != nil && w.Entry.CallID == callID && w.Entry.State == st {
			return true
		}
	}
	return false
}

// Close while the write that records a call started (no tool has run)
// is refused as busy (add430b): the retries stop, Run returns ErrClosed
// promptly (not after the budget), the run is not ended cancelled, the
// tool has not run, and a resume runs it once.
func TestReview8aCloseDuringBusyStartWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		b := &busyWhen{Store: st, budget: -1, match: func(p *store.RunWriteParams) bool { return hasEntry(p, "c1", store.LedgerStarted) }}
		b.armed.Store(true)
		rt, err := actoviq.New(b, &actoviq.Config{CommitTimeout: 30 * time.Second, Holder: "A"})
		if err != nil {
			t.Fatal(err)
		}
		pay := &payTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
			Tools: []toolT{pay}}
		closed := make(chan time.Duration, 1)
		go func() {
			waitFor(func() bool { return b.busy.Load() >= 2 })
			t0 := time.Now()
			rt.Close()
			closed <- time.Since(t0)
		}()
		_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "s1", Items: input("pay").Items})
		took := <-closed
		var ce *actoviq.ClosedError
		if !errors.As(err, &ce) {
			t.Fatalf("Run: %v, want a ClosedError", err)
		}
		if took > 15*time.Second {
			t.Fatalf("Close took %v: it waited out the start write's budget", took)
		}
		if pay.count() != 0 {
			t.Fatalf("the tool ran %d times though its start was never recorded", pay.count())
		}
		b.armed.Store(false)
		rt2 := newRT(t, b, "B", time.Minute)
		info, err := rt2.Get(context.Background(), "s1")
		if err != nil || info.Status == actoviq.StatusCancelled {
			t.Fatalf("after Close: %+v %v, want the run resumable", info, err)
		}
		a.Provider = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
		res, err := resumeWhenFree(t, rt2, a, "s1")
		if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
			t.Fatalf("resume: %+v %v, the tool ran %d times", res, err, pay.count())
		}
	})
}

// Two side effects in one turn: c1's committed write is held and goes
// with c2's first write (drive_carry.go). Close while that write (or the
// writes around it) is refused as busy: c1's result is recorded all the
// same (it exists nowhere else), c1 ran once, c2 never ran before the
// resume and runs once after it.
func TestReview8aCloseDuringBusyCarriedResult(t *testing.T) {
	for _, which := range []string{"c1 committed", "c2 started"} {
		t.Run(which, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st store.Store) {
				b := &busyWhen{Store: st, budget: -1, match: func(p *store.RunWriteParams) bool {
					if which == "c1 committed" {
						return hasEntry(p, "c1", store.LedgerCommitted)
					}
					return hasEntry(p, "c2", store.LedgerStarted)
				}}
				b.armed.Store(true)
				rt, err := actoviq.New(b, &actoviq.Config{CommitTimeout: 20 * time.Second, Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				pay1, pay2 := &payTool{name: "pay1"}, &payTool{name: "pay2"}
				turns := func() *scripted.Provider {
					return scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay1", `{"amount":1}`), call("c2", "pay2", `{"amount":2}`)}},
						scripted.Turn{Text: "done"})
				}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: turns(), Tools: []toolT{pay1, pay2}}
				closed := make(chan struct{})
				go func() {
					defer close(closed)
					waitFor(func() bool { return b.busy.Load() >= 2 })
					b.refuseMore(2) // two more refusals after Close is called, then the store is free
					rt.Close()
				}()
				_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "k1", Items: input("pay").Items})
				<-closed
				if !errors.Is(err, actoviq.ErrClosed) {
					t.Fatalf("Run: %v, want ErrClosed", err)
				}
				en, gerr := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "k1", CallID: "c1"})
				if gerr != nil || en.State != store.LedgerCommitted || pay1.count() != 1 {
					t.Fatalf("c1 after Close: %+v %v, ran %d times: its known result was not recorded", en, gerr, pay1.count())
				}
				if pay2.count() != 0 {
					t.Fatalf("c2 ran %d times after Close", pay2.count())
				}
				b.armed.Store(false)
				rt2 := newRT(t, b, "B", time.Minute)
				a.Provider = turns()
				res, err := resumeWhenFree(t, rt2, a, "k1")
				if err != nil || res.Status != actoviq.StatusCompleted || pay1.count() != 1 || pay2.count() != 1 {
					t.Fatalf("resume: %+v %v, c1 ran %d times, c2 %d", res, err, pay1.count(), pay2.count())
				}
			})
		})
	}
}

// Runtime.Cancel (and the caller's context) while a tool's result is
// refused as busy: the result is kept and recorded, the run then ends
// cancelled, the tool ran once.
func TestReview8aCancelDuringBusyResult(t *testing.T) {
	for _, how := range []string{"context", "Runtime.Cancel"} {
		t.Run(how, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st store.Store) {
				b := &busyWhen{Store: st, budget: -1, match: func(p *store.RunWriteParams) bool { return hasEntry(p, "c1", store.LedgerCommitted) }}
				b.armed.Store(true)
				rt, err := actoviq.New(b, &actoviq.Config{CommitTimeout: 20 * time.Second, Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
					Tools: []toolT{pay}}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					waitFor(func() bool { return b.busy.Load() >= 2 })
					b.refuseMore(2)
					if how == "context" {
						cancel()
						done <- nil
						return
					}
					done <- rt.Cancel(context.Background(), "x1")
				}()
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "x1", Items: input("pay").Items})
				if cerr := <-done; cerr != nil {
					t.Fatalf("Cancel: %v", cerr)
				}
				en, gerr := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "x1", CallID: "c1"})
				if gerr != nil || en.State != store.LedgerCommitted || pay.count() != 1 {
					t.Fatalf("c1: %+v %v, ran %d times (Run: %+v %v)", en, gerr, pay.count(), res, err)
				}
				info, gerr := rt.Get(context.Background(), "x1")
				if gerr != nil || (info.Status != actoviq.StatusCancelled && info.Status != actoviq.StatusCompleted) {
					t.Fatalf("the run: %+v %v (Run: %+v %v)", info, gerr, res, err)
				}
				if info.Status == actoviq.StatusRunning {
					t.Fatalf("the run left running")
				}
			})
		})
	}
}

// Prune's dry run at the edge of MaxDryRunIDs (e96774e): exactly
// MaxDryRunIDs runs to go is not "more", one more is; the real prune
// removes what the dry run said.
func TestReview8aPruneDryRunEdge(t *testing.T) {
	for _, n := range []int{actoviq.MaxDryRunIDs, actoviq.MaxDryRunIDs + 1} {
		for _, batch := range []int{300, 1000} {
			t.Run(fmt.Sprintf("%d runs, batch %d", n, batch), func(t *testing.T) {
				eachBackend(t, func(t *testing.T, st store.Store) { pruneDryRunEdge(t, st, n, batch) })
			})
		}
	}
}

func pruneDryRunEdge(t *testing.T, st store.Store, n, batch int) {
	ctx := context.Background()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range n {
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: fmt.Sprintf("r%05d", i),
			AgentID: "a", AgentDigest: "d", Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	cut := time.Now().Add(time.Hour)
	dry, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: batch, DryRun: true})
	more := n > actoviq.MaxDryRunIDs
	if err != nil || dry.More != more || dry.Runs != int64(min(n, actoviq.MaxDryRunIDs)) || len(dry.RunIDs) != int(dry.Runs) {
		t.Fatalf("dry run: runs %d, %d ids, more %v (want %v), %v", dry.Runs, len(dry.RunIDs), dry.More, more, err)
	}
	got, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: batch, Unpaced: true})
	if err != nil || got.Runs != int64(n) {
		t.Fatalf("prune: %+v %v", got, err)
	}
}
