package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// A new version of an agent is deployed while a run waits for approval.
// Reworded instructions and descriptions, another model and an added tool
// take the run over as they are. A change to what the waiting call depends
// on (here the pay tool's input schema) is refused field by field, until an
// operator accepts it; the acceptance is recorded and voids the call's
// approval, so it asks again.
func Example_agentUpgrade() {
	ctx := context.Background()
	st := storemem.New(nil)
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":500}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	payV1 := tool.Func(tool.Spec{Name: "pay", Description: "Pays.", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) { return "sent", nil })
	v1 := &actoviq.AgentSpec{ID: "payer", Instructions: "Pay invoices.", Provider: model, Model: "model-a",
		Tools: []tool.Tool{payV1}, Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	res, _ := rt.Run(ctx, v1, &actoviq.Input{RunID: "run-9", Items: []item.Item{item.UserText("pay ada 500")}})
	fmt.Println(res.Status, res.Interruptions[0].Kind)

	// Version 2: free changes only.
	payV2 := tool.Func(tool.Spec{Name: "pay", Description: "Pays an invoice in cents.", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) { return "sent", nil })
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read},
		func(ctx context.Context, p payment) (string, error) { return "invoice 42", nil })
	v2 := *v1
	v2.Instructions, v2.Model, v2.Tools = "Pay invoices. Be brief.", "model-b", []tool.Tool{payV2, lookup}
	_ = rt.Decide(ctx, "run-9", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideApprove, By: "alice"})

	// Version 3 also adds a field to pay's input schema: the waiting,
	// approved call depends on it.
	type memoPayment struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
		Memo   string `json:"memo,omitempty"`
	}
	payV3 := tool.Func(tool.Spec{Name: "pay", Description: "Pays an invoice in cents.", Effect: tool.SideEffect},
		func(ctx context.Context, p memoPayment) (string, error) { return "sent", nil })
	v3 := v2
	v3.Tools = []tool.Tool{payV3, lookup}
	_, err := rt.Resume(ctx, &v3, "run-9", nil)
	var ce *actoviq.AgentChangeError
	if errors.As(err, &ce) {
		for _, c := range ce.Refused {
			fmt.Println("refused:", c.Tool, c.Field, c.Calls)
		}
	}

	// The operator takes version 3 over; the approval is void and the call asks again.
	res, err = rt.Resume(ctx, &v3, "run-9", &actoviq.ResumeOptions{
		AcceptAgentChange: &actoviq.AcceptAgentChange{By: "bob", Note: "memo field, release 3"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Interruptions[0].Kind)
	res, _ = rt.Resume(ctx, &v3, "run-9", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "call_1", Kind: actoviq.DecideApprove, By: "alice"}}})
	info, _ := rt.Get(ctx, "run-9")
	last := info.AgentChanges[len(info.AgentChanges)-1]
	fmt.Println(res.Status, "accepted by", last.By, "voided", last.Voided)
	// Output:
	// interrupted approval
	// refused: pay input_schema [call_1 (prepared)]
	// interrupted approval
	// completed accepted by bob voided [call_1]
}
