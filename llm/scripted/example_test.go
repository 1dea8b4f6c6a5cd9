package scripted_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
)

// The provider answers from its script by counting the assistant turns in
// the transcript, so it needs no state and gives the same answer after a
// restart.
func Example() {
	p := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"go"}`)}}},
		scripted.Turn{Text: "Found it."},
	)
	ctx := context.Background()
	transcript := []item.Item{item.UserText("find go")}
	resp, _ := p.Generate(ctx, &llm.Request{Model: "m", Items: transcript})
	fmt.Println(resp.StopReason, resp.ToolCalls()[0].Name)

	// Sending the call without its result is refused loudly.
	transcript = append(transcript, resp.Items...)
	_, err := p.Generate(ctx, &llm.Request{Model: "m", Items: transcript})
	fmt.Println(err != nil)

	transcript = append(transcript, item.NewToolResult("c1", "go.dev", false))
	resp, _ = p.Generate(ctx, &llm.Request{Model: "m", Items: transcript})
	fmt.Println(resp.Text())
	// Output:
	// tool_use lookup
	// true
	// Found it.
}
