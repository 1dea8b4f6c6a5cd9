package actoviq_test

import (
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// A Close while a resumed drive loads its run's session reads as ErrClosed
// with the run left resumable, as anywhere else in a drive, not as the
// store's bare "context canceled" wrapped in "load session".
func TestCloseWhileResumeLoadsSessionIsErrClosed(t *testing.T) {
	s := newSetup(t)
	st := &closeAtRead{Store: sqliteStore(t), runID: "rA", session: true}
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
		scripted.Turn{Text: "paid"}), pay)
	a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	res, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "rA", SessionID: "s1", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %+v %v", res, err)
	}
	st.rt.Store(rt)
	approve := actoviq.Decision{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}
	_, err = rt.Resume(s.ctx, a, "rA", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{approve}})
	if !st.closed.Load() {
		t.Fatalf("the session was never loaded after the run was stored running (Resume: %v)", err)
	}
	if !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("Resume interrupted by Close: %v, want ErrClosed", err)
	}
	if len(pay.calls) != 0 {
		t.Fatalf("pay ran %d times", len(pay.calls))
	}
	// The run stays resumable: a new runtime finishes it, paying once.
	rt2, err := actoviq.New(st.Store, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op2"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	res, err = rt2.Resume(s.ctx, a, "rA", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume after the close: %+v %v", res, err)
	}
	if len(pay.calls) != 1 {
		t.Fatalf("pay ran %d times, want 1", len(pay.calls))
	}
}
