package redact

import "testing"

func TestCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"401: invalid key sk-abc123def456 given":              "401: invalid key [REDACTED] given",
		"GET https://x.test/v1?api_key=s3cr3t&model=m failed": "GET https://x.test/v1?api_key=[REDACTED]&model=m failed",
		"header Authorization: Bearer abc.def-ghi":            "header Authorization: [REDACTED]",
		"nothing secret here, max_tokens=5":                   "nothing secret here, max_tokens=5",
	} {
		if got := Credentials(in); got != want {
			t.Errorf("Credentials(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValues(t *testing.T) {
	if got := Values("key abcdef and abc", "abc", "abcdef", ""); got != "key [REDACTED] and [REDACTED]" {
		t.Errorf("Values = %q", got)
	}
	if got := Values("unchanged"); got != "unchanged" {
		t.Errorf("Values with no secrets = %q", got)
	}
}
