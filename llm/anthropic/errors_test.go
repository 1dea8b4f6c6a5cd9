package anthropic_test

import (
	"context"
	"testing"

	"github.com/actoviq/actoviq-go/llm/anthropic"
)

// A 401 says what failed once and names where the key came from.
func TestAuthErrorText(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 401, "error_401.json"))
	p := newMessages(t, b, func(c *anthropic.Config) { c.APIKeySource = "ANTHROPIC_API_KEY" })
	_, err := p.Generate(context.Background(), textRequest())
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	want := "anthropic: status 401 authentication_error: invalid x-api-key; check the API key in ANTHROPIC_API_KEY [request req_abc123]"
	if msg != want {
		t.Errorf("error = %s\nwant    %s", msg, want)
	}
}
