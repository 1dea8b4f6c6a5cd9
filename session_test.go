package actoviq_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A run overtaken by another run of its session used to stay interrupted
// for ever with nothing to decide, and each resume called the model again
// only to lose the session append again. It ends failed, typed
// (ErrSessionConflict), without a model call or a tool call, and resumes
// after that do nothing.
func TestOvertakenRunEndsTyped(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	pA := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})
	a := approvalAgent(pA, pay)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "rA", SessionID: "s1", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	// Meanwhile another run of the session completes and appends.
	pB := scripted.New(scripted.Turn{Text: "hello from B"})
	if res, err := s.rt.Run(s.ctx, agent(pB), &actoviq.Input{RunID: "rB", SessionID: "s1", Items: []item.Item{item.UserText("hi")}}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	calls := pA.Calls()
	res, err = s.rt.Resume(s.ctx, a, "rA", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil {
		t.Fatalf("resume of the overtaken run: %v", err)
	}
	if res.Status != actoviq.StatusFailed || res.Error == nil || !errors.Is(res.Error, actoviq.ErrSessionConflict) ||
		!strings.Contains(res.Error.Message, "run rB") || res.Error.Hint == "" {
		t.Fatalf("overtaken run: %+v error %+v", res, res.Error)
	}
	if pA.Calls() != calls || pay.count() != 0 {
		t.Fatalf("the overtaken run called the model (%d calls) or the tool (%d)", pA.Calls()-calls, pay.count())
	}
	if res, err := s.rt.Resume(s.ctx, a, "rA", nil); err != nil || res.Status != actoviq.StatusFailed || pA.Calls() != calls {
		t.Fatalf("second resume: %+v %v, %d model calls", res, err, pA.Calls()-calls)
	}
	st, _ := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s1"})
	for _, en := range st.Entries {
		if en.RunID == "rA" {
			t.Fatalf("the overtaken run appended to the session: %+v", en)
		}
	}
}

// An append lost at completion (another writer got in while the run
// drove) ends the run the same way, with its answer kept in its output.
func TestOvertakenAtCompletionKeepsAnswer(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})
	done := make(chan *actoviq.RunResult, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "rA", SessionID: "s1", Items: []item.Item{item.UserText("pay")}})
		done <- res
		errc <- err
	}()
	<-pay.started
	if _, err := s.st.SessionAppend(s.ctx, &store.SessionAppendParams{Tenant: "default", SessionID: "s1", RunID: "other",
		Items: []json.RawMessage{json.RawMessage(`{"type":"text","role":"user","text":"x"}`)}}); err != nil {
		t.Fatal(err)
	}
	close(pay.block)
	res, err := <-done, <-errc
	if err != nil || res.Status != actoviq.StatusFailed || !errors.Is(res.Error, actoviq.ErrSessionConflict) ||
		len(res.Output) != 1 || res.Output[0].Text != "paid" {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "rA")
	if info.Status != actoviq.StatusFailed || len(info.Output) != 1 || info.Output[0].Text != "paid" {
		t.Fatalf("stored %s output %+v", info.Status, info.Output)
	}
}
