package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// A decision posted on a parent for a call its page lists as open (its
// child's call) is recorded on the child, as Runtime.Decide does; it is
// not answered 404 (issue 23, break 9).
func TestDecisionOnParentForChildCall(t *testing.T) {
	t.Parallel()
	f := setup(t, &setupOpts{noResume: true})
	ctx := context.Background()
	at, err := actoviq.AgentTool(f.agent, nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := &actoviq.AgentSpec{ID: "lead", Model: "scripted", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: at.Spec().Name, Arguments: json.RawMessage(`{"input":"pay ada 5"}`)}}},
		scripted.Turn{Text: "done"}), Tools: []tool.Tool{at}}
	res, err := f.rt.Run(ctx, parent, &actoviq.Input{RunID: "lead-1", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("parent: %+v %v", res, err)
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/lead-1", tokenAnon, "").json(t, &run)
	if len(run.Interruptions) != 1 || run.Interruptions[0].CallID != "call_1" || run.Interruptions[0].RunID != "lead-1.c1" {
		t.Fatalf("the parent's page lists %+v, want the child's call_1", run.Interruptions)
	}
	r := f.call("POST", "/api/v1/runs/lead-1/decisions", tokenAlice, `{"call_id":"call_1","kind":"approve"}`)
	if r.status != http.StatusOK {
		t.Fatalf("decision on the parent for its child's open call: %d %s", r.status, r.body)
	}
	info, err := f.rt.Get(ctx, "lead-1.c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Ledger) != 1 || info.Ledger[0].Approval == nil || info.Ledger[0].Approval.By != "alice" {
		t.Fatalf("the child's call after the decision: %+v", info.Ledger)
	}
}
