package redact_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/actoviq/actoviq-go/internal/redact"
)

func TestSecretsText(t *testing.T) {
	t.Parallel()
	s := redact.NewSecrets("Bearer abc", "pa ss/w\"rd long-enough-word", "", "  ")
	for _, tc := range []struct{ in, want string }{
		{"sent Bearer abc", "sent [REDACTED]"},
		// The credential after a scheme, however short, leaks alone too.
		{"token abc echoed", "token [REDACTED] echoed"},
		// A long word of a value is a secret on its own; a short one is not.
		{"just long-enough-word here, pa", "just [REDACTED] here, pa"},
		// Escaped forms.
		{`{"v":"pa ss/w\"rd long-enough-word"}`, `{"v":"[REDACTED]"}`},
		{"q=pa+ss%2Fw%22rd+long-enough-word", "q=[REDACTED]"},
		{"nothing", "nothing"},
	} {
		if got := s.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var nilS *redact.Secrets
	if nilS.Text("Bearer abc") != "Bearer abc" || (&redact.Secrets{}).Text("x") != "x" {
		t.Error("an empty Secrets changed text")
	}
}

func TestSecretsLongestWins(t *testing.T) {
	t.Parallel()
	s := redact.NewSecrets("abc")
	s.Add("abcdef") // added later, still wins where they overlap
	if got := s.Text("abcdef abc"); got != "[REDACTED] [REDACTED]" {
		t.Errorf("Text = %q", got)
	}
}

func TestSecretsJSON(t *testing.T) {
	t.Parallel()
	s := redact.NewSecrets("tok-123456")
	in := json.RawMessage(`{"n":12345678901234567890,"tok-123456":["x tok-123456 y",1.50]}`)
	out := string(s.JSON(in))
	if want := `{"[REDACTED]":["x [REDACTED] y",1.50],"n":12345678901234567890}`; out != want {
		t.Errorf("JSON = %s, want %s", out, want)
	}
	clean := json.RawMessage(`{"b":1,"a":2}`)
	if got := s.JSON(clean); string(got) != string(clean) {
		t.Errorf("JSON changed a document with no secret: %s", got)
	}
	if got := s.JSON(json.RawMessage(`{"a":"tok-123456`)); string(got) != `{"a":"tok-123456` {
		t.Errorf("invalid JSON is returned as it was, got %s", got)
	}
}

func TestSecretsConcurrentAdd(t *testing.T) {
	t.Parallel()
	s := redact.NewSecrets()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); s.Add(strings.Repeat("k", 8+i)) }()
		go func() { defer wg.Done(); _ = s.Text("kkkkkkkk") }()
	}
	wg.Wait()
	if got := s.Text("kkkkkkkkkkkkkkk"); got != "[REDACTED]" {
		t.Errorf("Text = %q", got)
	}
}

func TestKeyValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key    string
		values []string
		want   []string
	}{
		{"API_KEY", []string{"k1", ""}, []string{"k1", ""}},
		{"GITHUB_TOKEN", []string{"t"}, []string{"t"}},
		{"DEBUG", []string{"1", "true", "12345678901"}, nil},
		{"NAME", []string{"short", "a-long-value"}, []string{"a-long-value"}},
	} {
		if got := redact.KeyValues(tc.key, tc.values...); !slices.Equal(got, tc.want) {
			t.Errorf("KeyValues(%q, %q) = %q, want %q", tc.key, tc.values, got, tc.want)
		}
	}
	got := redact.URLValues("https://u:pw@mcp.example/x?token=t1&page=2&sig=0123456789abcdef")
	slices.Sort(got)
	if want := []string{"0123456789abcdef", "pw", "t1"}; !slices.Equal(got, want) {
		t.Errorf("URLValues = %q, want %q", got, want)
	}
	if redact.URLValues("://bad") != nil {
		t.Error("URLValues of an invalid URL")
	}
}
