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

// Runtime.Events reads a run's stored events back, in order, in the
// envelope sinks receive: an operator surface shows them as the run's
// timeline. Another tenant's run is not found.
func ExampleRuntime_Events() {
	ctx := context.Background()
	st := storemem.New(nil)
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) { return "sent", nil })
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Paid."},
	)
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	if _, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-4", Items: []item.Item{item.UserText("pay ada 5")}}); err != nil {
		panic(err)
	}
	evs, _ := rt.Events(ctx, "run-4", nil)
	for _, ev := range evs {
		fmt.Println(ev.Seq, ev.Type)
	}
	later, _ := rt.Events(ctx, "run-4", &actoviq.EventsParams{AfterSeq: int64(len(evs) - 1)})
	fmt.Println("after", len(evs)-1, ":", later[0].Type)

	other, _ := actoviq.New(st, &actoviq.Config{Tenant: "acme"})
	defer other.Close()
	_, err := other.Events(ctx, "run-4", nil)
	fmt.Println("tenant acme:", errors.Is(err, actoviq.ErrNotFound))
	// Output:
	// 1 run.started
	// 2 model.response
	// 3 tool.prepared
	// 4 tool.started
	// 5 tool.committed
	// 6 model.response
	// 7 run.completed
	// after 6 : run.completed
	// tenant acme: true
}
