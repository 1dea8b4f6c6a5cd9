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

// In a tenant other than "default", the key carries the tenant, so two
// tenants that pick the same run id never share a key.
func ExampleConfig_tenant() {
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) {
			fmt.Println("Idempotency-Key", tool.IdempotencyKey(ctx))
			return "sent", nil
		})
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	rt, _ := actoviq.New(storemem.New(nil), &actoviq.Config{Tenant: "acme"})
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
	rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay")}})
	_, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "acct:7"})
	fmt.Println(errors.Is(err, actoviq.ErrInvalidID))
	// Output:
	// Idempotency-Key acme/run-1:call_1
	// true
}

// A cancelled run is over, but what really happened to a call it left
// started or unknown can still be recorded, for the audit trail.
func ExampleRuntime_Cancel() {
	ctx := context.Background()
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) {
			return "", fmt.Errorf("bank timed out: %w", tool.ErrOutcomeUnknown)
		})
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
	res, _ := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay ada 5")}})
	fmt.Println(res.Status, res.Interruptions[0].Kind)

	_ = rt.Cancel(ctx, "run-1")
	err := rt.Decide(ctx, "run-1", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideReexecute, By: "ops"})
	fmt.Println("re-execute:", errors.Is(err, actoviq.ErrRunFinished))
	err = rt.Decide(ctx, "run-1", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideCommitted, By: "ops",
		Reason: "the bank shows the payment", Result: "sent"})
	info, _ := rt.Get(ctx, "run-1")
	fmt.Println("committed:", err, info.Status, info.Ledger[0].State, "by", info.Ledger[0].Resolution.By)
	// Output:
	// interrupted reconciliation
	// re-execute: true
	// committed: <nil> cancelled committed by ops
}
