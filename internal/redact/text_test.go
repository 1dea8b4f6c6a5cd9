package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/internal/redact"
)

func TestText(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	cases := map[string]string{
		"POST /v1/charge failed: api_key=sk-live-1 rejected":                                   "POST /v1/charge failed: api_key=[REDACTED] rejected",
		"Authorization: Bearer abcdefgh12345 was refused":                                      "Authorization: Bearer [REDACTED] was refused",
		`upstream said {"client_secret": "cs-9", "id": 4}`:                                     `upstream said {"client_secret": "[REDACTED]", "id": 4}`,
		"x-api-key: k-123; retry later":                                                        "x-api-key: [REDACTED]; retry later",
		"cookie session_id=abc123&theme=dark":                                                  "cookie session_id=[REDACTED]&theme=dark",
		"got header 'auth_tokens'='t1'":                                                        "got header 'auth_tokens'='[REDACTED]'",
		"call with tokenValue=tv-7 failed":                                                     "call with tokenValue=[REDACTED] failed",
		"sent Bearer eyJhbGciOiJIUzI1NiJ9.e30.x to the server":                                 "sent Bearer [REDACTED] to the server",
		"max_tokens=512 reached, input_tokens: 20, status=429":                                 "max_tokens=512 reached, input_tokens: 20, status=429",
		"nothing secret here: amount=5":                                                        "nothing secret here: amount=5",
		"password=[REDACTED] already":                                                          "password=[REDACTED] already",
		"private_key: \"-----BEGIN KEY-----\" leaked":                                          "private_key: \"[REDACTED]\" leaked",
		"connect postgres://app:pw1@db/x failed":                                               "connect postgres://app:[REDACTED]@db/x failed",
		"dial redis://:pw2@cache:6379 refused":                                                 "dial redis://:[REDACTED]@cache:6379 refused",
		"Server=db;Database=x;User Id=app;Password=pw3;":                                       "Server=db;Database=x;User Id=app;Password=[REDACTED];",
		"host=db user=app password=pw4 dbname=x":                                               "host=db user=app password=[REDACTED] dbname=x",
		"passphrase: correct-horse and pin=0000":                                               "passphrase: [REDACTED] and pin=[REDACTED]",
		"key -----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY----- end": "key -----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY----- end",
		"cut -----BEGIN PRIVATE KEY-----\nMIIE":                                                "cut -----BEGIN PRIVATE KEY-----[REDACTED]",
		"shipping: 3 days, mapping=ok, ping: 4ms":                                              "shipping: 3 days, mapping=ok, ping: 4ms",
		"mail ann@example.com at 10:30":                                                        "mail ann@example.com at 10:30",
	}
	for in, want := range cases {
		if got := r.Text(in); got != want {
			t.Errorf("Text(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestJSONText(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	in := json.RawMessage(`{"kind":"execution","message":"auth failed: api_key=sk-9 (Authorization: Bearer abcdefghijk)","token":"t"}`)
	out := string(r.JSONText(in))
	if strings.Contains(out, "sk-9") || strings.Contains(out, "abcdefghijk") || strings.Contains(out, `"t"`) || !json.Valid([]byte(out)) {
		t.Fatalf("JSONText: %s", out)
	}
	if got := string(r.JSONText(json.RawMessage(`{"api_key":"sk`))); strings.Contains(got, "sk\"") || !json.Valid([]byte(got)) {
		t.Fatalf("invalid JSON: %s", got)
	}
	if got := string(r.JSONText(json.RawMessage(`{"a":1}`))); got != `{"a":1}` {
		t.Fatalf("unchanged: %s", got)
	}
}

func FuzzText(f *testing.F) {
	f.Add("api_key=sk-1 Authorization: Bearer abcdefghij")
	f.Add(`{"client_secret": "x\"y"}`)
	f.Add("password=postgres://u:p@h/d -----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY----- app:p@tcp(h)/d")
	var r *redact.Redactor
	f.Fuzz(func(t *testing.T, s string) {
		out := r.Text(s)
		if r.Text(out) != out {
			t.Fatalf("not idempotent: %q → %q → %q", s, out, r.Text(out))
		}
	})
}
