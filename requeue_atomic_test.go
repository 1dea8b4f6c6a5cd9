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
	"github.com/actoviq/actoviq-go/tool"
)

// queueDeathStore is a process that dies at the write that stores a run
// in a status (queued unless dieAt is set): while armed, that write fails
// and nothing of it is stored.
type queueDeathStore struct {
	store.Store
	armed  atomic.Bool
	dieAt  store.RunStatus
	writes atomic.Int32 // successful writes while counting
}

var errDiedAtQueue = errors.New("the process died at the write that queues the run")

func (s *queueDeathStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	at := s.dieAt
	if at == "" {
		at = store.RunQueued
	}
	if s.armed.Load() && p.Run != nil && p.Run.Status == at {
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

// The same break through a child: decisions given to a parent for its
// child's calls were recorded on the child first, then the parent was
// queued (Requeue) or stored running (Resume). A process that died in
// between left the parent interrupted with its child's question answered
// and nothing open. The parent's write comes first now, so a death leaves
// the child's question open, on the child and on its parent.
func TestChildDecisionsThatDieLeaveTheQuestionOpen(t *testing.T) {
	for _, via := range []string{"Requeue", "Resume"} {
		t.Run(via, func(t *testing.T) {
			s := newSetup(t)
			st := &queueDeathStore{Store: sqliteStore(t)}
			if via == "Resume" {
				st.dieAt = store.RunRunning
			}
			rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op"})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			pay := &payTool{name: "pay"}
			child := childAgent("payments", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
				scripted.Turn{Text: "paid"}), pay)
			child.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
			parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "payments", `{"input":"pay 3"}`)}},
				scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
			res, err := rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p1", Items: input("go").Items})
			if err != nil || res.Status != actoviq.StatusInterrupted {
				t.Fatalf("parent: %+v %v", res, err)
			}
			approve := actoviq.Decision{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}
			act := func() error {
				if via == "Requeue" {
					return rt.Requeue(s.ctx, "p1", approve)
				}
				_, err := rt.Resume(s.ctx, parent, "p1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{approve}})
				return err
			}

			st.armed.Store(true)
			if err := act(); !errors.Is(err, errDiedAtQueue) {
				t.Fatalf("%s that died at the parent's write: %v", via, err)
			}
			st.armed.Store(false)
			info, err := rt.Get(s.ctx, "p1")
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Interruptions) != 1 || info.Interruptions[0].CallID != "k1" {
				t.Fatalf("after a %s that died: parent %s with open interruptions %+v; want k1 still open", via, info.Status, info.Interruptions)
			}
			entries, _ := st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: "p1.c1"})
			if len(entries) != 1 || entries[0].State != store.LedgerAwaitingApproval || entries[0].Approval != nil {
				t.Fatalf("after a %s that died, the child's call: %+v", via, entries[0])
			}

			if err := act(); err != nil {
				t.Fatalf("%s again: %v", via, err)
			}
			entries, _ = st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: "p1.c1"})
			if entries[0].Approval == nil || entries[0].Approval.By != "op" {
				t.Fatalf("the child's call after %s: %+v", via, entries[0])
			}
			info, _ = rt.Get(s.ctx, "p1")
			want := actoviq.StatusQueued
			if via == "Resume" {
				want = actoviq.StatusCompleted
			}
			if info.Status != want || len(pay.calls) > 1 {
				t.Fatalf("parent after %s: %s (want %s), pay ran %d times", via, info.Status, want, len(pay.calls))
			}
		})
	}
}
