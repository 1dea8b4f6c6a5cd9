package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// A streamed tool call: the input fragments are joined and parsed once.
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_1","model":"claude-x","content":[],"usage":{"input_tokens":20,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"pay","input":{}}}`,
			`{"type":"ping"}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"amou"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"nt\": 42}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":15}}`,
			`{"type":"message_stop"}`,
		} {
			var head struct{ Type string }
			_ = json.Unmarshal([]byte(ev), &head)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, ev)
		}
	}))
	defer srv.Close()

	claude, err := anthropic.New(&anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL, Options: transport.Options{HTTPClient: srv.Client()}})
	if err != nil {
		panic(err)
	}
	req := &llm.Request{Model: "claude-x", Items: []item.Item{item.UserText("Pay 42")},
		Tools: []llm.ToolDef{{Name: "pay", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	resp, err := llm.Collect(claude.Stream(context.Background(), req))
	if err != nil {
		panic(err)
	}
	for _, c := range resp.ToolCalls() {
		fmt.Println(c.ID, c.Name, string(c.Arguments))
	}
	fmt.Println(resp.StopReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// toolu_1 pay {"amount":42}
	// tool_use 20 15
}
