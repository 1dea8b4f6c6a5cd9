package openai_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/providertest"
	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// The non-streaming bodies of the answers in chat_text.sse and
// resp_text.sse: same text, same usage.
const (
	chatTextJSON = `{"id":"chatcmpl-t1","object":"chat.completion","created":1767225600,"model":"gpt-test",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Hello, world.","refusal":null},"logprobs":null,"finish_reason":"stop"}],
 "usage":{"prompt_tokens":21,"completion_tokens":4,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":16},"completion_tokens_details":{"reasoning_tokens":2}}}`
	respTextJSON = `{"id":"resp_t1","object":"response","created_at":1767225600,"status":"completed","model":"gpt-test",
 "output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello, world.","annotations":[]}]}],
 "usage":{"input_tokens":21,"input_tokens_details":{"cached_tokens":16},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":25}}`
	overloaded = `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`
)

func errorWithMessage(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}})
	return b
}

func conformanceBackend(name string, build func(*openai.Config) (llm.Provider, error), f providertest.Fixtures) providertest.Backend {
	return providertest.Backend{
		Name:            name,
		Model:           "gpt-test",
		NoToolsModel:    "no-tools",
		RequestIDHeader: "X-Request-Id",
		New: func(t *testing.T, env providertest.Env) llm.Provider {
			fc := wiretest.NewFakeClock()
			p, err := build(&openai.Config{
				APIKey:  env.APIKey,
				BaseURL: env.BaseURL + "/v1",
				Models:  map[string]llm.Capabilities{"no-tools": {Streaming: true}},
				Options: transport.Options{HTTPClient: env.HTTPClient, MaxRetries: &env.MaxRetries, Clock: fc.Now, Sleep: fc.Sleep, Jitter: func(d time.Duration) time.Duration { return d }},
			})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Fixtures: f,
	}
}

func TestConformanceChat(t *testing.T) {
	t.Parallel()
	b := conformanceBackend("openai.chat", func(c *openai.Config) (llm.Provider, error) { return openai.NewChat(c) },
		providertest.Fixtures{
			TextStream:        fixture(t, "chat_text.sse"),
			TextJSON:          []byte(chatTextJSON),
			ToolStream:        fixture(t, "chat_tool.sse"),
			ToolJSON:          fixture(t, "chat_tool.json"),
			ParallelStream:    fixture(t, "chat_parallel.sse"),
			ServerErrorStatus: http.StatusServiceUnavailable,
			ServerError:       []byte(overloaded),
			Error400:          fixture(t, "error_400.json"),
			ErrorWithMessage:  errorWithMessage,
			ErrorEventStream:  fixture(t, "chat_error_event.sse"),
			ErrorEventStatus:  500,
		})
	providertest.Run(t, b)
}

func TestConformanceResponses(t *testing.T) {
	t.Parallel()
	b := conformanceBackend("openai.responses", func(c *openai.Config) (llm.Provider, error) { return openai.NewResponses(c) },
		providertest.Fixtures{
			TextStream:        fixture(t, "resp_text.sse"),
			TextJSON:          []byte(respTextJSON),
			ToolStream:        fixture(t, "resp_tool.sse"),
			ToolJSON:          fixture(t, "resp_generate.json"),
			ParallelStream:    fixture(t, "resp_parallel.sse"),
			ServerErrorStatus: http.StatusServiceUnavailable,
			ServerError:       []byte(overloaded),
			Error400:          fixture(t, "error_400.json"),
			ErrorWithMessage:  errorWithMessage,
			ErrorEventStream:  fixture(t, "resp_error_event.sse"),
			ErrorEventStatus:  500,
		})
	providertest.Run(t, b)
}
