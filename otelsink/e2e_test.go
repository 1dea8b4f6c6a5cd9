package otelsink_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/codes"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/otelsink"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// lookupAgent is an agent whose scripted model calls one read tool, then
// answers.
func lookupAgent(t *testing.T) *actoviq.AgentSpec {
	t.Helper()
	p := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}},
		scripted.Turn{Text: "done"},
	)
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read},
		func(ctx context.Context, in struct {
			Q string `json:"q"`
		}) (string, error) {
			return "found " + in.Q, nil
		})
	return &actoviq.AgentSpec{ID: "a", Provider: p, Model: "m", Tools: []tool.Tool{lookup}}
}

func TestRuntimeEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })

	res, err := rt.Run(t.Context(), lookupAgent(t), &actoviq.Input{Items: []item.Item{item.UserText("hi")}}, b.sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("run status %s, want completed", res.Status)
	}

	spans := b.rec.Ended()
	if n := len(b.rec.Started()); n != len(spans) {
		t.Errorf("%d spans started, %d ended", n, len(spans))
	}
	run := one(t, spans, otelsink.SpanRun)
	tool := one(t, spans, otelsink.SpanTool+" lookup")
	turns := byName(spans, otelsink.SpanTurn)
	if len(turns) != 2 || len(spans) != 4 {
		t.Fatalf("want 1 run, 1 tool and 2 turn spans, got %d spans (%d turns)", len(spans), len(turns))
	}
	for _, s := range append(turns, tool) {
		if s.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the run span", s.Name())
		}
	}
	wantAttr(t, run, otelsink.AttrRunID, res.RunID)
	wantAttr(t, run, otelsink.AttrAgentID, "a")
	wantAttr(t, run, otelsink.AttrStatus, "completed")
	if run.Status().Code != codes.Unset {
		t.Errorf("run status %v", run.Status())
	}
	wantAttr(t, tool, otelsink.AttrCallID, "c1")
	wantAttr(t, tool, otelsink.AttrEffect, "read")
	wantAttr(t, tool, otelsink.AttrState, "committed")
	wantAttr(t, tool, otelsink.AttrIdempotencyKey, res.RunID+":c1")
	for i, turn := range turns {
		wantAttr(t, turn, otelsink.AttrTurn, int64(i+1))
		if _, ok := attrs(turn)[otelsink.AttrInputTokens]; !ok {
			t.Errorf("turn %d has no token usage", i+1)
		}
	}
	if b.sink.OpenRuns() != 0 {
		t.Error("run still held after it completed")
	}
}
