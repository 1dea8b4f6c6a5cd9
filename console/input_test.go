package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// askTool asks a person before it acts: it records where it stands, then
// returns a tool.InputError; Resume acts with the answer.
type askTool struct{ acted []string }

func (a *askTool) Spec() tool.Spec {
	return tool.Spec{Name: "transfer", Description: "Move money after a confirmation", Effect: tool.SideEffect}
}

func (a *askTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := tool.RecordHandle(ctx, tool.Handle{Kind: "ask.confirm", Data: json.RawMessage(`{"step":"asked"}`), Evidence: "asked for a confirmation"}); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{}, &tool.InputError{Prompt: "Move 5 EUR to Ada?", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)}
}

func (a *askTool) Resume(ctx context.Context, key string, args json.RawMessage, h tool.Handle) (tool.Result, error) {
	ans := tool.Answer(ctx)
	if ans == nil {
		return a.Call(ctx, args)
	}
	a.acted = append(a.acted, string(ans))
	return tool.Result{Content: "moved: " + string(ans)}, nil
}

// An input interruption shows its question on the run page; an answer
// recorded through the API continues the call when the run is resumed.
func TestInputInterruptionAnswer(t *testing.T) {
	t.Parallel()
	ask := &askTool{}
	agent := &actoviq.AgentSpec{ID: "asker", Model: "scripted-1", Tools: []tool.Tool{ask}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "transfer", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"})}
	f := setup(t, &setupOpts{cfg: func(c *console.Config) { c.Resume = nil }})
	f.interruptedWith(f.rt, agent, "run-q")
	b, _ := f.login("bob", tokenAnon)
	page := f.callWith(b.c, "GET", "/runs/run-q", "", "")
	for _, want := range []string{"Answer the question", "Move 5 EUR to Ada?", `data-kind="answer"`} {
		if !strings.Contains(string(page.body), want) {
			t.Fatalf("the run page lacks %q", want)
		}
	}
	if strings.Contains(string(page.body), `data-kind="reexecute"`) {
		t.Fatal("an input interruption offers re-execute")
	}
	for _, c := range []struct{ body, code string }{
		{`{"call_id":"call_1","kind":"answer"}`, "bad_request"},
		{`{"call_id":"call_1","kind":"answer","answer":true}`, "bad_request"},
		{`{"call_id":"call_1","kind":"failed","message":"no","answer":{"ok":true}}`, "bad_request"},
	} {
		if r := f.call("POST", "/api/v1/runs/run-q/decisions", tokenAlice, c.body); r.errCode(t) != c.code {
			t.Fatalf("%s: %d %s", c.body, r.status, r.body)
		}
	}
	r := f.call("POST", "/api/v1/runs/run-q/decisions", tokenAlice, `{"call_id":"call_1","kind":"answer","answer":{"ok":true}}`)
	if r.status != 200 {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	res, err := f.rt.Resume(context.Background(), agent, "run-q", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if fmt.Sprint(ask.acted) != `[{"ok":true}]` {
		t.Fatalf("the tool acted %v", ask.acted)
	}
}
