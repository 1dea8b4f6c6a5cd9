package openai_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// A non-streaming chat.completion lists parallel tool calls in
// message.tool_calls without an "index" field (only stream deltas carry
// one). Both calls must come back, each with its own id and arguments.
func TestChatGenerateParallelCalls(t *testing.T) {
	body := `{"id":"chatcmpl-p","object":"chat.completion","created":1767225600,"model":"gpt-test",
 "choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
  "tool_calls":[
   {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
   {"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  "logprobs":null,"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	})
	p := newChat(t, b, nil)
	req := &llm.Request{Model: "gpt-test", Items: []item.Item{item.UserText("Paris and Oslo?")}, Tools: []llm.ToolDef{weatherTool}}
	resp, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var ids []string
	for _, it := range resp.Items {
		if it.Type == item.TypeToolCall {
			ids = append(ids, it.ToolCall.ID+"="+string(it.ToolCall.Arguments))
		}
	}
	if len(ids) != 2 {
		t.Fatalf("tool calls = %v, want call_a and call_b", ids)
	}
}
