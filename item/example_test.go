package item_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/item"
)

func Example() {
	transcript := []item.Item{
		item.UserText("What is the weather in Paris?"),
		item.NewToolCall("call_1", "get_weather", json.RawMessage(`{"city":"Paris"}`)),
		item.NewToolResult("call_1", "sunny, 21°C", false),
		item.AssistantText("It is sunny and 21°C in Paris."),
	}
	b, _ := json.Marshal(transcript[1])
	fmt.Println(string(b))

	var back item.Item
	if err := json.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.ToolCall.Name, string(back.ToolCall.Arguments))
	// Output:
	// {"type":"tool_call","role":"assistant","tool_call":{"id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}}
	// get_weather {"city":"Paris"}
}

func ExampleUnknownTypeError() {
	var it item.Item
	err := json.Unmarshal([]byte(`{"type":"hologram"}`), &it)
	fmt.Println(errors.Is(err, item.ErrUnknownType))
	fmt.Println(err)
	// Output:
	// true
	// item: unknown type "hologram"
}

func ExampleReasoning() {
	// Opaque provider data is kept byte for byte, even when it is not UTF-8.
	it := item.Item{Type: item.TypeReasoning, Reasoning: &item.Reasoning{Provider: "anthropic", Opaque: []byte{0xff, 0x00, 0x80}}}
	b, _ := json.Marshal(it)
	fmt.Println(string(b))
	var back item.Item
	_ = json.Unmarshal(b, &back)
	fmt.Printf("%x\n", back.Reasoning.Opaque)
	// Output:
	// {"type":"reasoning","reasoning":{"provider":"anthropic","opaque":"/wCA"}}
	// ff0080
}

func ExampleUsage_Add() {
	total := item.Usage{InputTokens: 100, OutputTokens: 20}.Add(item.Usage{InputTokens: 50, OutputTokens: 10})
	fmt.Println(total.InputTokens, total.OutputTokens, total.Total())
	// Output: 150 30 180
}
