package actoviq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// closeAtChildGet closes the runtime when the resumed parent's drive reads
// its child to record the decisions given for the child's call: the read
// waits for the Close to cancel it, as a shutdown at that instant would.
type closeAtChildGet struct {
	store.Store
	rt      atomic.Pointer[actoviq.Runtime]
	running atomic.Bool // the parent was stored running by the Resume
	closed  atomic.Bool
}

func (s *closeAtChildGet) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	res, err := s.Store.RunWrite(ctx, p)
	if err == nil && s.rt.Load() != nil && p.RunID == "p1" && p.Run != nil && p.Run.Status == store.RunRunning {
		s.running.Store(true)
	}
	return res, err
}

func (s *closeAtChildGet) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if p.ID == "p1.c1" && s.running.Load() && s.closed.CompareAndSwap(false, true) {
		go s.rt.Load().Close()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
		}
	}
	return s.Store.RunGet(ctx, p)
}

// A campaign run (pg/readchild, seed 6216022446404091702) saw Resume fail
// with "decisions for child run ...: context canceled" when the runtime
// was closed while the parent's drive recorded its child's decisions: a
// shutdown must read as ErrClosed, the run left resumable, as everywhere
// else in a drive.
func TestCloseWhileRecordingChildDecisionsIsErrClosed(t *testing.T) {
	s := newSetup(t)
	st := &closeAtChildGet{Store: sqliteStore(t)}
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
	st.rt.Store(rt)
	approve := actoviq.Decision{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}
	_, err = rt.Resume(s.ctx, parent, "p1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{approve}})
	if !st.closed.Load() {
		t.Fatalf("the child was never read after the parent was stored running (Resume: %v)", err)
	}
	if !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("Resume interrupted by Close: %v, want ErrClosed", err)
	}
	if len(pay.calls) != 0 {
		t.Fatalf("pay ran %d times", len(pay.calls))
	}
}
