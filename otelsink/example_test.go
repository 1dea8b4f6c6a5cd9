package otelsink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/otelsink"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// A run traced with a span recorder: one run span, a span per model turn
// and a span per tool call, in the order they ended. In production, pass
// your SDK TracerProvider (with a batching exporter) instead.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{
		Sinks: []actoviq.EventSink{otelsink.New(tp, nil)},
	})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read},
		func(ctx context.Context, in struct {
			Q string `json:"q"`
		}) (string, error) {
			return strings.ToUpper(in.Q), nil
		})
	agent := &actoviq.AgentSpec{ID: "a", Model: "m", Tools: []tool.Tool{lookup},
		Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}},
			scripted.Turn{Text: "done"},
		)}
	if _, err := rt.Run(context.Background(), agent, &actoviq.Input{Items: []item.Item{item.UserText("hi")}}); err != nil {
		panic(err)
	}

	for _, s := range rec.Ended() {
		parent := "root"
		if s.Parent().IsValid() {
			parent = "child"
		}
		fmt.Println(s.Name(), parent)
	}
	// Output:
	// actoviq.turn child
	// actoviq.tool lookup child
	// actoviq.turn child
	// actoviq.run root
}
