package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

func ExampleValidateTranscript() {
	transcript := []item.Item{
		item.UserText("Refund order 42"),
		item.NewToolCall("call_1", "refund", json.RawMessage(`{"order":42}`)),
		// No tool result yet: this transcript must not be sent.
	}
	err := llm.ValidateTranscript(transcript)
	fmt.Println(errors.Is(err, llm.ErrDanglingToolCall))
	fmt.Println(err)

	transcript = append(transcript, item.NewToolResult("call_1", "refunded", false))
	fmt.Println(llm.ValidateTranscript(transcript))
	// Output:
	// true
	// llm: transcript item 1: tool call "call_1": no_result
	// <nil>
}

func ExampleCapabilities_Check() {
	caps := llm.Capabilities{Tools: true, Streaming: true}
	req := &llm.Request{
		Model:        "small-model",
		Items:        []item.Item{item.UserText("hi")},
		OutputSchema: json.RawMessage(`{"type":"object"}`),
	}
	err := caps.Check(req)
	fmt.Println(errors.Is(err, llm.ErrUnsupported), err)
	// Output: true llm: model "small-model" does not support structured_output
}

func ExampleCollect() {
	answer := item.AssistantText("Hello!")
	stream := func(yield func(llm.StreamEvent, error) bool) {
		_ = yield(llm.StreamEvent{Type: llm.EventTextDelta, Delta: "Hel"}, nil) &&
			yield(llm.StreamEvent{Type: llm.EventTextDelta, Delta: "lo!"}, nil) &&
			yield(llm.StreamEvent{Type: llm.EventItemDone, Item: &answer}, nil) &&
			yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{
				Items: []item.Item{answer}, StopReason: llm.StopEndTurn,
			}}, nil)
	}
	resp, err := llm.Collect(stream)
	fmt.Println(resp.Text(), resp.StopReason, err)
	// Output: Hello! end_turn <nil>
}
