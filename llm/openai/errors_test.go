package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// The live API nests a stream error's fields under "error" (the reference
// shows them at the top level). insufficient_quota is a final 429 in
// either shape: the transport must not retry it as if it were a 500.
func TestResponsesNestedErrorEventIsFinal(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_error_nested.sse"), sse(t, "resp_text.sse"))
	p := newResponses(t, b)
	_, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %T %v, want *llm.ProviderError", err, err)
	}
	if pe.Status != 429 || pe.Retryable || pe.Code != "insufficient_quota" || !strings.Contains(pe.Message, "exceeded your current quota") {
		t.Errorf("ProviderError = %+v, want Status 429, final, code insufficient_quota and the message", pe)
	}
	if n := len(b.srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1: a final error is not retried", n)
	}
	if errors.Is(err, llm.ErrStreamInterrupted) {
		t.Errorf("the first event failed: not an interruption: %v", err)
	}
}

// A 401 says what failed once (the body's message is not repeated by the
// transport's text) and names the key's source.
func TestAuthErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		source string
		want   string
	}{
		{"Config.APIKey", "", "check the API key in Config.APIKey"},
		{"named source", "OPENAI_API_KEY", "check the API key in OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonBody(t, 401, "error_401.json"))
			p := newChat(t, b, func(c *openai.Config) { c.APIKeySource = tc.source })
			_, err := p.Generate(context.Background(), textRequest("gpt-test"))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if n := strings.Count(msg, "Incorrect API key provided"); n != 1 {
				t.Errorf("the body's message appears %d times, want once:\n%s", n, msg)
			}
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, testKey) {
				t.Errorf("error = %s\nwant it to say %q and not show the key", msg, tc.want)
			}
			want := "openai.chat: status 401 invalid_request_error (invalid_api_key): Incorrect API key provided: [REDACTED]."
			if !strings.HasPrefix(msg, want) {
				t.Errorf("error = %s\nwant prefix %s", msg, want)
			}
			var se *transport.StatusError
			if !errors.As(err, &se) || se.Status != 401 {
				t.Errorf("the transport's *StatusError is no longer reachable with errors.As: %v", err)
			}
		})
	}
}

// A failure with no status (nothing answered) reads "provider: transport:
// …", never "provider:: transport: …", and a retryable failure with
// retries off does not claim to have given up "after 1 attempts".
func TestTransportErrorText(t *testing.T) {
	t.Parallel()
	srv := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	url := srv.srv.URL
	srv.srv.Close() // connection refused from now on
	cfg := &openai.Config{APIKey: testKey, BaseURL: url, Options: transport.Options{MaxRetries: transport.Retries(0)}}
	p, err := openai.NewChat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Generate(context.Background(), textRequest("gpt-test"))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "openai.chat: transport: POST ") || strings.Contains(msg, "::") {
		t.Errorf("error = %s\nwant \"openai.chat: transport: POST …\" with no double colon", msg)
	}
	if strings.Contains(msg, "1 attempts") || !strings.Contains(msg, "retries are off") {
		t.Errorf("error = %s\nwant it to say retries are off, not \"after 1 attempts\"", msg)
	}
}
