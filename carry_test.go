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
	"github.com/actoviq/actoviq-go/tool"
)

// tripCounter counts a store's round trips by method.
type tripCounter struct {
	store.Store
	creates, writes, acquires, releases atomic.Int32
}

func (c *tripCounter) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	c.creates.Add(1)
	return c.Store.RunCreate(ctx, p)
}

func (c *tripCounter) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	c.writes.Add(1)
	return c.Store.RunWrite(ctx, p)
}

func (c *tripCounter) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	c.acquires.Add(1)
	return c.Store.ClaimAcquire(ctx, p)
}

func (c *tripCounter) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	c.releases.Add(1)
	return c.Store.ClaimRelease(ctx, p)
}

func calls(n int, tool string) []scripted.ToolCall {
	var tc []scripted.ToolCall
	for i := range n {
		tc = append(tc, call(fmt.Sprintf("c%d", i), tool, fmt.Sprintf(`{"amount":%d}`, i+1)))
	}
	return tc
}

// A run of n side-effect calls in one model turn costs n+2 store round
// trips besides its create: the response with the first call's started
// record (drive_fold.go), one write per later call (its started record
// carries the previous call's committed one), the last committed write,
// and the end, which also gives the claim up. Its create takes the claim.
// (Before: 2n+3 writes, a claim and a release; then n+3.)
func TestRunRoundTrips(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		const n = 10
		ctx := context.Background()
		c := &tripCounter{Store: st}
		pay := &payTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: []toolT{pay},
			Provider: scripted.New(scripted.Turn{ToolCalls: calls(n, "pay")}, scripted.Turn{Text: "done"})}
		rt := newRT(t, c, "A", time.Minute)
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != n {
			t.Fatalf("Run: %+v %v, %d payments", res, err, pay.count())
		}
		if got := [4]int32{c.creates.Load(), c.writes.Load(), c.acquires.Load(), c.releases.Load()}; got != [4]int32{1, n + 2, 0, 0} {
			t.Fatalf("creates, writes, claims, releases = %v, want [1 %d 0 0]", got, n+2)
		}
		// Every call's record and event is stored, in order.
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, ev := range evs {
			if ev.Type == actoviq.EvToolStarted || ev.Type == actoviq.EvToolCommitted {
				var d actoviq.ToolCallData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				order = append(order, d.CallID+":"+string(d.State))
			}
		}
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("c%d:started", i), fmt.Sprintf("c%d:committed", i))
		}
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Fatalf("call events: %v, want %v", order, want)
		}
		ledger, err := st.LedgerList(ctx, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: "r1"})
		if err != nil || len(ledger) != n {
			t.Fatalf("ledger: %d entries, %v", len(ledger), err)
		}
		for _, en := range ledger {
			if en.State != store.LedgerCommitted || en.Attempt != 1 {
				t.Fatalf("entry %s: %s attempt %d", en.CallID, en.State, en.Attempt)
			}
		}
	})
}

// seenStore answers what the store holds for a run's calls.
type ledgerPeek struct {
	st    store.Store
	runID string
}

func (l ledgerPeek) states(ctx context.Context) map[string]store.LedgerState {
	out := map[string]store.LedgerState{}
	entries, _ := l.st.LedgerList(ctx, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: l.runID})
	for _, en := range entries {
		out[en.CallID] = en.State
	}
	return out
}

// When a call's tool runs, the store already holds the call itself
// started and every call before it committed: a committed record that
// travels with the next call's started write is durable before that
// call's tool is invoked.
func TestCommittedIsStoredBeforeTheNextToolRuns(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		peek := ledgerPeek{st: st, runID: "r1"}
		var mu sync.Mutex
		var seen []map[string]store.LedgerState
		look := tool.Func(tool.Spec{Name: "look", Effect: tool.SideEffect}, func(ctx context.Context, in struct {
			Amount int `json:"amount"`
		}) (string, error) {
			mu.Lock()
			seen = append(seen, peek.states(ctx))
			mu.Unlock()
			return "ok", nil
		})
		a := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: []toolT{look},
			Provider: scripted.New(scripted.Turn{ToolCalls: calls(4, "look")}, scripted.Turn{Text: "done"})}
		rt := newRT(t, st, "A", time.Minute)
		if res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("go").Items}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		if len(seen) != 4 {
			t.Fatalf("the tool ran %d times, want 4", len(seen))
		}
		for i, states := range seen {
			for j := range 4 {
				want := store.LedgerPrepared
				switch {
				case j < i:
					want = store.LedgerCommitted
				case j == i:
					want = store.LedgerStarted
				}
				if got := states[fmt.Sprintf("c%d", j)]; got != want {
					t.Fatalf("while c%d ran, the store had c%d %s, want %s (all: %v)", i, j, got, want, states)
				}
			}
		}
	})
}

// failWrite fails the first RunWrite that has a record of call `call` in
// state `state`, storing nothing of it.
type failWrite struct {
	store.Store
	call   string
	state  store.LedgerState
	failed atomic.Bool
}

func (f *failWrite) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	for _, w := range p.Ledger {
		if w.Entry.CallID == f.call && w.Entry.State == f.state && f.failed.CompareAndSwap(false, true) {
			// A failure the store knows wrote nothing (a full disk): an
			// error whose outcome is not known would be read back and
			// the write made again (drive_write.go readBack).
			return nil, &store.FullError{Err: errors.New("disk on fire")}
		}
	}
	return f.Store.RunWrite(ctx, p)
}

// The write that carries a call's committed record and the next call's
// started one is one atomic write: when it fails, neither is stored, the
// next tool never runs, and the call whose result was lost stays started,
// so a resume stops it for reconciliation instead of paying again.
func TestCarriedCommitFailsWithTheNextStart(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		turns := []scripted.Turn{{ToolCalls: calls(3, "pay")}, {Text: "done"}}
		a := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: []toolT{pay}, Provider: scripted.New(turns...)}
		fw := &failWrite{Store: st, call: "c1", state: store.LedgerStarted}
		rt := newRT(t, fw, "A", time.Minute)
		if _, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items}); err == nil {
			t.Fatal("Run succeeded though its write failed")
		}
		if !fw.failed.Load() || pay.count() != 1 {
			t.Fatalf("failed %v, %d payments, want the write failed and 1 payment", fw.failed.Load(), pay.count())
		}
		states := ledgerPeek{st: st, runID: "r1"}.states(ctx)
		if states["c0"] != store.LedgerStarted || states["c1"] != store.LedgerPrepared || states["c2"] != store.LedgerPrepared {
			t.Fatalf("after the failed write: %v, want c0 started, c1 and c2 prepared", states)
		}
		rt.Close()
		again := newRT(t, st, "B", time.Minute)
		a2 := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: []toolT{pay}, Provider: scripted.New(turns...)}
		res, err := again.Resume(ctx, a2, "r1", nil)
		if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 ||
			res.Interruptions[0].CallID != "c0" || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
			t.Fatalf("resume: %+v %v, want c0 to reconcile", res, err)
		}
		if pay.count() != 1 {
			t.Fatalf("%d payments after the resume, want 1", pay.count())
		}
	})
}
