package actoviq_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// scriptedFaults answers the run writes that match with the next of
// faults (nil: pass to the store), each once; the others pass.
type scriptedFaults struct {
	store.Store
	match  func(p *store.RunWriteParams) bool
	mu     sync.Mutex
	faults []error
}

func (s *scriptedFaults) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if s.match(p) {
		s.mu.Lock()
		var f error
		if len(s.faults) > 0 {
			f, s.faults = s.faults[0], s.faults[1:]
		}
		s.mu.Unlock()
		if f != nil {
			return nil, f
		}
	}
	return s.Store.RunWrite(ctx, p)
}

// A tool's result whose write fails with an error of unknown outcome
// (nothing was stored), is read back absent and sent again (a9a61b1), and
// that second try meets a busy store (on PostgreSQL: the first try's
// transaction still holding the run's lock, a lock timeout; on SQLite the
// file locked): the result is known and the write's budget is not spent,
// so it is made again as any busy write of a result is (add430b), the
// call committed, the tool run once. Sent to reconciliation instead, the
// known result is lost.
func TestReview8aReadBackThenBusyKeepsTheResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		f := &scriptedFaults{Store: st, match: func(p *store.RunWriteParams) bool { return hasEntry(p, "c1", store.LedgerCommitted) },
			faults: []error{errors.New("injected: unexpected EOF"), &store.BusyError{Err: errors.New("injected: lock timeout")}}}
		rt, err := actoviq.New(f, &actoviq.Config{CommitTimeout: 10 * time.Second, Holder: "A"})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		pay := &payTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
			Tools: []toolT{pay}}
		res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "rb1", Items: input("pay").Items})
		en, gerr := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "rb1", CallID: "c1"})
		if err != nil || res.Status != actoviq.StatusCompleted || gerr != nil || en.State != store.LedgerCommitted || pay.count() != 1 {
			t.Fatalf("Run: %+v %v; c1: %+v %v; the tool ran %d times", res, err, en, gerr, pay.count())
		}
	})
}
