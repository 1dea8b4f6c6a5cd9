package redact_test

import (
	"maps"
	"testing"

	"github.com/actoviq/actoviq-go/internal/redact"
)

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	secret := []string{
		"authorization", "Authorization", "Proxy-Authorization",
		"api_key", "apiKey", "APIKey", "X-Api-Key", "x-goog-api-key", "API KEY", "api.key", "OPENAI_API_KEY", "apikeys",
		"token", "access_token", "accessToken", "X-Auth-Token", "refresh_token", "id_token", "GITHUB_TOKEN", "accesstoken",
		"secret", "client_secret", "clientSecret", "AWS_SECRET_ACCESS_KEY", "secrets", "secret_key",
		"password", "Password", "db_password", "password_hash", "passwords",
		"passwd", "cookie", "Cookie", "Set-Cookie", "cookies",
		"private_key", "privateKey", "PRIVATE-KEY-PEM",
		"credential", "credentials", "GoogleCredentials",
		// Variants a review found unredacted (issue 10, break 3).
		"auth_tokens", "tokenValue", "token_value", "access_tokens", "AuthTokens", "x-api-key", "client_secret",
		"private_key", "session_id", "sessionId", "JSESSIONID", "PHPSESSID", "session_key", "sessionToken",
		// Issue 27: what a security probe found stored in clear, and its kin.
		"passphrase", "key_passphrase", "pwd", "DB_PWD", "userPwd", "pin", "PIN", "card_pin", "pinCode", "pin-code",
		"pass", "db_pass", "mysqlPass", "otp", "cvv", "cvc", "card_cvv2", "privkey", "ssh_privkey",
		// A wallet's recovery words.
		"mnemonic", "Mnemonic", "wallet_mnemonic", "seed_phrase", "seedPhrase", "SEED-PHRASE", "bip39_seed_words",
		"recovery_phrase", "recoveryPhrase",
	}
	notSecret := []string{
		"", "-", "name", "url", "key", "id", "value", "auth",
		// Usage counters: "token" is matched only at the end.
		"max_tokens", "input_tokens", "output_tokens", "tokens_used", "tokens", "total_tokens",
		"totalTokenCount", "prompt_token_count", "token_type", "tokenizer", "max_completion_tokens",
		"keyboard", "monkey",
		"cached_tokens", "reasoning_tokens", "cache_write_tokens", "cached_input_tokens", "tokens_per_minute",
		"token_count", "tokenCount", "num_tokens", "token_url", "TokenURL", "session", "session_base", "session_prefix",
		"shipping", "mapping", "ping", "pinned", "spinner", "bypass", "compass", "passed", "passenger", "topic",
		// A sampling seed is not a wallet seed.
		"seed", "random_seed", "phrase", "search_phrase",
	}
	var r *redact.Redactor // nil uses the defaults
	for _, k := range secret {
		if !r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
	for _, k := range notSecret {
		if r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true, want false", k)
		}
	}
}

func TestExtraKeys(t *testing.T) {
	t.Parallel()
	r := redact.New("Tenant-Ref", "billing_ids", "", "--", "_")
	for _, k := range []string{"tenant_ref", "X-Tenant-Ref", "tenantref", "billing_ids", "api_key"} {
		if !r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false", k)
		}
	}
	// Separator-only extras are ignored, not "match everything".
	for _, k := range []string{"name", "max_tokens", "tenant"} {
		if r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true", k)
		}
	}
	if (&redact.Redactor{}).IsSecretKey("tenant_ref") {
		t.Error("zero Redactor matched an extra key")
	}
}

func TestMap(t *testing.T) {
	t.Parallel()
	in := map[string]string{
		"Authorization": "Bearer sk-live",
		"X-Api-Key":     "k",
		"Content-Type":  "application/json",
		"MCP_TOKEN":     "t",
		"PATH":          "/usr/bin",
	}
	orig := maps.Clone(in)
	got := redact.New().Map(in)
	want := map[string]string{
		"Authorization": redact.Placeholder,
		"X-Api-Key":     redact.Placeholder,
		"Content-Type":  "application/json",
		"MCP_TOKEN":     redact.Placeholder,
		"PATH":          "/usr/bin",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Map = %v, want %v", got, want)
	}
	if !maps.Equal(in, orig) {
		t.Errorf("Map modified its input: %v", in)
	}
	if redact.New().Map(nil) != nil {
		t.Error("Map(nil) != nil")
	}
	var nilR *redact.Redactor
	if got := nilR.Map(map[string]string{"password": "p"}); got["password"] != redact.Placeholder {
		t.Errorf("nil Redactor Map = %v", got)
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	tests := []struct {
		s       string
		secrets []string
		want    string
	}{
		{"no secrets", nil, "no secrets"},
		{"key sk-123 failed", []string{"sk-123"}, "key [REDACTED] failed"},
		{"sk-123 and sk-123", []string{"sk-123"}, "[REDACTED] and [REDACTED]"},
		{"empty secret is ignored", []string{""}, "empty secret is ignored"},
		// The longer secret wins where they overlap: no tail "def" leaks.
		{"abcdef", []string{"abc", "abcdef"}, "[REDACTED]"},
		{"abc abcdef", []string{"abc", "abcdef", "abc"}, "[REDACTED] [REDACTED]"},
		{"a=k1 b=k2", []string{"k1", "k2"}, "a=[REDACTED] b=[REDACTED]"},
	}
	for _, tt := range tests {
		if got := r.String(tt.s, tt.secrets...); got != tt.want {
			t.Errorf("String(%q, %q) = %q, want %q", tt.s, tt.secrets, got, tt.want)
		}
	}
}

// encoding/json matches keys case-insensitively with Unicode folding, so a
// key spelled with a long s or a Kelvin sign still fills a Password or
// Token field: it must be redacted too.
func TestFoldedKeysAreSecret(t *testing.T) {
	r := redact.New()
	for _, k := range []string{"paſsword", "\u212aey_token", "API_\u212aEY"} {
		if !r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false", k)
		}
	}
}
