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

func TestFlagValues(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	for _, tc := range []struct{ in, want string }{
		{"mysql -u app --password hunter2 -h db", "mysql -u app --password [REDACTED] -h db"},
		{"deploy --token tk-1 --env prod", "deploy --token [REDACTED] --env prod"},
		{"gh auth login --with-token ghp_abc", "gh auth login --with-token [REDACTED]"},
		{"vault login -token s.abc -method x", "vault login -token [REDACTED] -method x"},
		{`run --api-key "sk 1 2" --v`, `run --api-key "[REDACTED]" --v`},
		{"run --client-secret 'a b'", "run --client-secret '[REDACTED]'"},
		{"curl --auth-token Bearer abc", "curl --auth-token Bearer [REDACTED]"},
		{"wallet --mnemonic 'abandon ability able'", "wallet --mnemonic '[REDACTED]'"},
		{"wallet import --seed-phrase zoo", "wallet import --seed-phrase [REDACTED]"},
		{"--password p1", "--password [REDACTED]"},
		{`{"cmd": "--token t1"}`, `{"cmd": "--token [REDACTED]"}`},
		{"login\t--password\tp2", "login\t--password\t[REDACTED]"},
		// The = form is an assignment.
		{"login --password=p3 now", "login --password=[REDACTED] now"},
		// No value: the next word is another flag.
		{"psql --password --host db", "psql --password --host db"},
		// The value is not the secret, or not there.
		{"docker login --password-stdin registry.example", "docker login --password-stdin registry.example"},
		{"app --token-file /run/secrets/t", "app --token-file /run/secrets/t"},
		{"psql --no-password mydb", "psql --no-password mydb"},
		// Not secret flags; and three dashes are no flag.
		{"go test --count 3 -run TestX --max-tokens 10", "go test --count 3 -run TestX --max-tokens 10"},
		{"a ---password x", "a ---password x"},
		// Not a flag: a dash inside a word.
		{"foo-password bar", "foo-password bar"},
		{"--password [REDACTED] already", "--password [REDACTED] already"},
	} {
		if got := r.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if got := r.Text(r.Text(tc.in)); got != r.Text(tc.in) {
			t.Errorf("Text not idempotent on %q: %q", tc.in, got)
		}
	}
}

func TestSecretFlag(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	for name, want := range map[string]bool{
		"--password": true, "-password": true, "--token": true, "-p": false, "password": false, "---password": false,
		"--password-stdin": false, "--token-file": false, "--no-password": false, "--password=x": false,
		"--max-tokens": false, "--mnemonic": true, "--seed-phrase": true, "--": false, "-": false,
	} {
		if got := r.SecretFlag(name); got != want {
			t.Errorf("SecretFlag(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestJSONArgumentVector(t *testing.T) {
	t.Parallel()
	r := redact.New()
	for _, tc := range []struct{ in, want string }{
		{`{"argv":["login","--password","hunter2","--user","ann"]}`, `{"argv":["login","--password","[REDACTED]","--user","ann"]}`},
		{`["-token","t1","-v"]`, `["-token","[REDACTED]","-v"]`},
		// The next flag is no value; a number after a flag is left.
		{`["--password","--host","db","--token",7]`, `["--password","--host","db","--token",7]`},
		{`["--password-stdin","registry"]`, `["--password-stdin","registry"]`},
		{`["\u002d-secret","s1"]`, `["\u002d-secret","[REDACTED]"]`},
		{`["--token=t2","x"]`, `["--token=[REDACTED]","x"]`},
		{`["--password","[REDACTED]"]`, `["--password","[REDACTED]"]`},
	} {
		out, _, err := r.JSON(json.RawMessage(tc.in))
		if err != nil || string(out) != tc.want {
			t.Errorf("JSON(%s)\n got %s (%v)\nwant %s", tc.in, out, err, tc.want)
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
