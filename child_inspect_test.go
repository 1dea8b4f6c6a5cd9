package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// The crash campaign (scenario tree) found this: a parent stopped for its
// child's unknown call went on listing that call as open after the
// decision was recorded on the child (a process killed after the child
// went on and before the parent did). An operator who answered what Get
// showed was refused on every resume ("this one is committed"), and the
// run never moved. Get reads the child's ledger: a settled call is not
// open.
func TestGetChildInterruptionSettledOnTheChild(t *testing.T) {
	ctx := context.Background()
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := tool.Func(tool.Spec{Name: "pay", Description: "pays", Effect: tool.SideEffect},
		func(context.Context, struct{}) (string, error) {
			return "", fmt.Errorf("connection reset: %w", tool.ErrOutcomeUnknown)
		})
	child := &actoviq.AgentSpec{ID: "child", Model: "scripted-1", Tools: []tool.Tool{pay},
		Provider: scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "k1", Name: "pay", Arguments: json.RawMessage(`{}`)}}}, scripted.Turn{Text: "paid"})}
	helper, err := actoviq.AgentTool(child, nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := &actoviq.AgentSpec{ID: "parent", Model: "scripted-1", Tools: []tool.Tool{helper},
		Provider: scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: helper.Spec().Name, Arguments: json.RawMessage(`{"input":"pay"}`)}}}, scripted.Turn{Text: "done"})}
	res, err := rt.Run(ctx, parent, &actoviq.Input{RunID: "p", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].CallID != "k1" {
		t.Fatalf("run: %+v %v; want interrupted for the child's k1", res, err)
	}
	childID := res.Interruptions[0].RunID
	if childID != actoviq.ChildRunID("p", "c1") {
		t.Fatalf("interruption names run %q, want the child %q", childID, actoviq.ChildRunID("p", "c1"))
	}
	// Recorded on the child, as a drive of the child would before dying.
	if err := rt.Decide(ctx, childID, actoviq.Decision{CallID: "k1", Kind: actoviq.DecideCommitted, By: "ops", Result: "paid (bank statement)"}); err != nil {
		t.Fatal(err)
	}
	info, err := rt.Get(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Interruptions) != 0 {
		t.Fatalf("the parent still lists %+v as open after k1 was settled on the child", info.Interruptions)
	}
	res, err = rt.Resume(ctx, parent, "p", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
}
