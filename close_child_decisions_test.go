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

// closeAtRead closes the runtime at one read a resumed drive makes once it
// has stored its run running: the read of run getID (a child, read to record
// the decisions given for its call), or a session load when session is set.
// The read waits for the Close to cancel it, as a shutdown at that instant
// would.
type closeAtRead struct {
	store.Store
	runID   string // the resumed run: stored running arms the close
	getID   string
	session bool
	rt      atomic.Pointer[actoviq.Runtime]
	running atomic.Bool
	closed  atomic.Bool
}

func (s *closeAtRead) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	res, err := s.Store.RunWrite(ctx, p)
	if err == nil && s.rt.Load() != nil && p.RunID == s.runID && p.Run != nil && p.Run.Status == store.RunRunning {
		s.running.Store(true)
	}
	return res, err
}

// closeHere closes the runtime and waits for the read's context to end.
func (s *closeAtRead) closeHere(ctx context.Context) error {
	go s.rt.Load().Close()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return nil
	}
}

func (s *closeAtRead) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if p.ID == s.getID && s.running.Load() && s.closed.CompareAndSwap(false, true) {
		if err := s.closeHere(ctx); err != nil {
			return nil, err
		}
	}
	return s.Store.RunGet(ctx, p)
}

func (s *closeAtRead) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if s.session && s.running.Load() && s.closed.CompareAndSwap(false, true) {
		if err := s.closeHere(ctx); err != nil {
			return nil, err
		}
	}
	return s.Store.SessionLoad(ctx, p)
}

// A campaign run (pg/readchild, seed 6216022446404091702) saw Resume fail
// with "decisions for child run ...: context canceled" when the runtime
// was closed while the parent's drive recorded its child's decisions: a
// shutdown must read as ErrClosed, the run left resumable, as everywhere
// else in a drive.
func TestCloseWhileRecordingChildDecisionsIsErrClosed(t *testing.T) {
	s := newSetup(t)
	st := &closeAtRead{Store: sqliteStore(t), runID: "p1", getID: "p1.c1"}
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
