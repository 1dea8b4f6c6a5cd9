package providertest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/providertest"
	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// An adapter's test runs the whole suite. New builds the provider against
// the fake server with a clock that never sleeps; the fixtures are the
// adapter's own testdata files.
func ExampleRun() {
	_ = func(t *testing.T) {
		providertest.Run(t, providertest.Backend{
			Name:            "openai.chat",
			Model:           "gpt-test",
			NoToolsModel:    "no-tools",
			RequestIDHeader: "X-Request-Id",
			New: func(t *testing.T, env providertest.Env) llm.Provider {
				fc := wiretest.NewFakeClock()
				p, err := openai.NewChat(&openai.Config{
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
			Fixtures: providertest.Fixtures{
				TextStream:        wiretest.Fixture(t, "chat_text.sse"),
				ServerErrorStatus: http.StatusServiceUnavailable,
				// ... the other fixtures; see llm/openai/conformance_test.go.
			},
		})
	}
}
