package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

type payment struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// A side-effect tool gets a stable idempotency key, <runID>:<callID>, that
// it hands to the system it calls, so that system can dedupe.
func ExampleRuntime_Run() {
	ctx := context.Background()
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) {
			fmt.Println("bank called with Idempotency-Key", tool.IdempotencyKey(ctx))
			return fmt.Sprintf("sent %d to %s", p.Amount, p.To), nil
		})
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil {
		panic(err)
	}
	info, _ := rt.Get(ctx, "run-1")
	fmt.Println(res.Status, res.Output[0].Text)
	fmt.Println(info.Ledger[0].State, info.Ledger[0].IdempotencyKey, "attempt", info.Ledger[0].Attempt)
	// Output:
	// bank called with Idempotency-Key run-1:call_1
	// completed Paid.
	// committed run-1:call_1 attempt 1
}

// Calls that need approval stop the run before they start. The approval is
// recorded durably (it survives a restart) and bound to the call's
// arguments and the policy version.
func Example_approval() {
	ctx := context.Background()
	st := storemem.New(nil)
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) { return "sent", nil })
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":500}`)}}},
		scripted.Turn{Text: "Done."},
	)
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}

	rt, _ := actoviq.New(st, nil)
	res, _ := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-2", Items: []item.Item{item.UserText("pay ada 500")}})
	in := res.Interruptions[0]
	fmt.Println(res.Status, in.Kind, in.Tool, string(in.Args))
	rt.Close()

	// Later, maybe in another process: approve, then resume.
	rt2, _ := actoviq.New(st, nil)
	defer rt2.Close()
	_ = rt2.Decide(ctx, "run-2", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideApprove, By: "alice", Reason: "invoice 42"})
	res, _ = rt2.Resume(ctx, agent, "run-2", nil)
	info, _ := rt2.Get(ctx, "run-2")
	fmt.Println(res.Status, "approved by", info.Ledger[0].Approval.By)
	// Output:
	// interrupted approval pay {"to":"ada","amount":500}
	// completed approved by alice
}

// bank is a payments tool with a probe: after a crash, or a lost
// connection, the runtime asks it whether the payment with this key exists
// before asking a person.
type bank struct{ payments map[string]string }

func (b *bank) Spec() tool.Spec {
	return tool.Spec{Name: "pay", Effect: tool.SideEffect, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (b *bank) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	b.payments[tool.IdempotencyKey(ctx)] = "p-77"
	// The bank took the payment, but the answer was lost on the way back.
	return tool.Result{}, fmt.Errorf("connection reset: %w", tool.ErrOutcomeUnknown)
}

func (b *bank) Reconcile(ctx context.Context, key string, args json.RawMessage) (tool.Probe, error) {
	if id, ok := b.payments[key]; ok {
		return tool.Probe{Outcome: tool.ProbeCommitted, Result: &tool.Result{Content: "payment " + id}, Evidence: "found by key " + key}, nil
	}
	return tool.Probe{Outcome: tool.ProbeNotExecuted, Evidence: "no payment with key " + key}, nil
}

// A side effect whose outcome is unknown is never run again on the
// runtime's own initiative. Here the tool's probe settles it on resume.
func Example_reconciliationByProbe() {
	ctx := context.Background()
	b := &bank{payments: map[string]string{}}
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{b}}
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()

	res, _ := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-3", Items: []item.Item{item.UserText("pay")}})
	fmt.Println(res.Status, res.Interruptions[0].Kind, res.Interruptions[0].State)

	res, _ = rt.Resume(ctx, agent, "run-3", nil)
	info, _ := rt.Get(ctx, "run-3")
	en := info.Ledger[0]
	fmt.Println(res.Status, "settled by", en.Resolution.By, "after", en.Attempt, "attempt;", len(b.payments), "payment")
	// Output:
	// interrupted reconciliation unknown
	// completed settled by probe:pay after 1 attempt; 1 payment
}
