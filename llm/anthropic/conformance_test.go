package anthropic_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
	"github.com/actoviq/actoviq-go/llm/internal/providertest"
	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// textJSON is the non-streaming body of the answer in text.sse: same text,
// same usage.
const textJSON = `{"id":"msg_t1","type":"message","role":"assistant","model":"claude-test",
 "content":[{"type":"text","text":"Hello, world."}],"stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":5,"cache_creation_input_tokens":10,"cache_read_input_tokens":16,"output_tokens":4}}`

// overloaded is what the API answers with status 529.
const overloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011COver"}`

func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.Backend{
		Name:            "anthropic",
		Model:           "claude-test",
		NoToolsModel:    "no-tools",
		RequestIDHeader: "Request-Id",
		New: func(t *testing.T, env providertest.Env) llm.Provider {
			fc := wiretest.NewFakeClock()
			p, err := anthropic.New(&anthropic.Config{
				APIKey:  env.APIKey,
				BaseURL: env.BaseURL,
				Models:  map[string]llm.Capabilities{"no-tools": {Streaming: true}},
				Options: transport.Options{HTTPClient: env.HTTPClient, MaxRetries: &env.MaxRetries, Clock: fc.Now, Sleep: fc.Sleep, Jitter: func(d time.Duration) time.Duration { return d }},
			})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Fixtures: providertest.Fixtures{
			TextStream:        fixture(t, "text.sse"),
			TextJSON:          []byte(textJSON),
			ToolStream:        fixture(t, "tool.sse"),
			ToolJSON:          fixture(t, "tool.json"),
			ParallelStream:    fixture(t, "parallel.sse"),
			Error400:          fixture(t, "error_400.json"),
			ServerErrorStatus: 529,
			ServerError:       []byte(overloaded),
			ErrorWithMessage: func(msg string) []byte {
				b, _ := json.Marshal(map[string]any{"type": "error",
					"error": map[string]any{"type": "authentication_error", "message": msg}})
				return b
			},
			ErrorEventStream: fixture(t, "overloaded.sse"),
			ErrorEventStatus: 529,
			ServerToolStream: fixture(t, "server_tool.sse"),
			ServerToolJSON:   fixture(t, "server_tool.json"),
			ServerToolInput:  `"query":"weather in Paris"`,
		},
	})
}
