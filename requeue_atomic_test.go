package actoviq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// queueDeathStore is a process that dies at the write that hands a run to
// the queue: while armed, that write fails and nothing of it is stored.
type queueDeathStore struct {
	store.Store
	armed  atomic.Bool
	writes atomic.Int32 // successful writes while counting
}

var errDiedAtQueue = errors.New("the process died at the write that queues the run")

func (s *queueDeathStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if s.armed.Load() && p.Run != nil && p.Run.Status == store.RunQueued {
		return nil, errDiedAtQueue
	}
	res, err := s.Store.RunWrite(ctx, p)
	if err == nil {
		s.writes.Add(1)
	}
	return res, err
}

// The campaign's takeover scenario left about 1 run in 15 interrupted with
// no open interruption: Requeue recorded the operator's decisions in one
// write and queued the run in a second one, so a process that died in
// between left a run whose questions were answered, which no worker claims
// (it is not queued, nor stalled) and no person is asked about (nothing is
// open). The decisions and the queued status are one write now: a Requeue
// that dies leaves the question open, and the next one goes through.
func TestRequeueThatDiesLeavesTheQuestionOpen(t *testing.T) {
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			s := newSetup(t)
			var base store.Store = s.st
			if kind == "sqlite" {
				base = sqliteStore(t)
			}
			st := &queueDeathStore{Store: base}
			rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op"})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			pay := &payTool{name: "pay"}
			a := approvalAgent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}},
				scripted.Turn{Text: "done"}), pay)
			res, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1", Items: input("go").Items})
			if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
				t.Fatalf("run: %+v %v", res, err)
			}
			approve := actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}

			st.armed.Store(true)
			if err := rt.Requeue(s.ctx, "r1", approve); !errors.Is(err, errDiedAtQueue) {
				t.Fatalf("Requeue that died at its write: %v", err)
			}
			st.armed.Store(false)
			info, err := rt.Get(s.ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if info.Status != actoviq.StatusInterrupted || len(info.Interruptions) != 1 || info.Interruptions[0].CallID != "c1" {
				t.Fatalf("after a Requeue that died: status %s, open interruptions %+v; want interrupted with c1 still open "+
					"(a run interrupted with nothing open is claimed by no worker and shown to no person)", info.Status, info.Interruptions)
			}
			for _, en := range info.Ledger {
				if en.Approval != nil {
					t.Fatalf("after a Requeue that died, call %s holds the approval %+v", en.CallID, en.Approval)
				}
			}

			before := st.writes.Load()
			if err := rt.Requeue(s.ctx, "r1", approve); err != nil {
				t.Fatal(err)
			}
			if n := st.writes.Load() - before; n != 1 {
				t.Fatalf("Requeue with a decision took %d writes, want 1", n)
			}
			if err := rt.Register(a); err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(s.ctx)
			done := make(chan error, 1)
			go func() { done <- rt.Work(wctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond}) }()
			waitCtx, cancel := context.WithTimeout(s.ctx, time.Minute)
			defer cancel()
			out, err := rt.Wait(waitCtx, "r1")
			stop()
			if werr := <-done; werr != nil && !errors.Is(werr, context.Canceled) {
				t.Fatal(werr)
			}
			if err != nil || out.Status != actoviq.StatusCompleted {
				t.Fatalf("after the second Requeue: %+v %v", out, err)
			}
			if len(pay.calls) != 1 {
				t.Fatalf("pay ran %d times: %v", len(pay.calls), pay.calls)
			}
		})
	}
}
