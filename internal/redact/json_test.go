package redact_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/actoviq/actoviq-go/internal/redact"
)

func TestJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string
		changed bool
	}{
		{"scalar", `42`, `42`, false},
		{"string", `"password"`, `"password"`, false},
		{"null", `null`, `null`, false},
		{"empty object", `{}`, `{}`, false},
		{"empty array", ` [ ] `, ` [ ] `, false},
		{"no secrets", `{"b":1,"a":[true,false,null]}`, `{"b":1,"a":[true,false,null]}`, false},
		{"flat",
			`{"user":"ann","password":"hunter2","api_key":"sk-1"}`,
			`{"user":"ann","password":"[REDACTED]","api_key":"[REDACTED]"}`, true},
		{"key order kept",
			`{"z":1,"token":"t","a":2,"m":{"y":1,"secret":"s","b":2}}`,
			`{"z":1,"token":"[REDACTED]","a":2,"m":{"y":1,"secret":"[REDACTED]","b":2}}`, true},
		{"numbers kept textually",
			`{"n":12345678901234567890,"f":1.0,"e":1E+3,"neg":-0.000,"max_tokens":4096,"api_key":12345678901234567890}`,
			`{"n":12345678901234567890,"f":1.0,"e":1E+3,"neg":-0.000,"max_tokens":4096,"api_key":"[REDACTED]"}`, true},
		{"any value type",
			`{"secret":{"a":[1,{"b":"}"}]},"password":[1,2],"token":true,"cookie":null,"passwd":3.5}`,
			`{"secret":"[REDACTED]","password":"[REDACTED]","token":"[REDACTED]","cookie":"[REDACTED]","passwd":"[REDACTED]"}`, true},
		{"nested arrays",
			`[[{"headers":[{"Authorization":"Bearer x"},{"Accept":"*/*"}]}],[[{"X-Api-Key":"k"}]]]`,
			`[[{"headers":[{"Authorization":"[REDACTED]"},{"Accept":"*/*"}]}],[[{"X-Api-Key":"[REDACTED]"}]]]`, true},
		{"usage counters kept",
			`{"usage":{"input_tokens":10,"output_tokens":5,"tokens_used":15,"totalTokenCount":15}}`,
			`{"usage":{"input_tokens":10,"output_tokens":5,"tokens_used":15,"totalTokenCount":15}}`, false},
		{"whitespace kept",
			"{\n  \"a\" : 1 ,\n  \"token\" :\t\"x\" ,\n  \"b\" : [ 1 , 2 ]\n}\n",
			"{\n  \"a\" : 1 ,\n  \"token\" :\t\"[REDACTED]\" ,\n  \"b\" : [ 1 , 2 ]\n}\n", true},
		{"escaped key",
			`{"api\u005fkey":"k","pass\"word":"p"}`,
			`{"api\u005fkey":"[REDACTED]","pass\"word":"[REDACTED]"}`, true},
		{"tricky strings",
			`{"note":"\"password\":\"x\"","secret":"a\"b\\","k":"]}"}`,
			`{"note":"\"password\":\"[REDACTED]\"","secret":"[REDACTED]","k":"]}"}`, true},
		{"duplicate keys",
			`{"token":"a","token":"b"}`,
			`{"token":"[REDACTED]","token":"[REDACTED]"}`, true},
		{"already redacted",
			`{"token":"[REDACTED]","password":"[REDACTED]"}`,
			`{"token":"[REDACTED]","password":"[REDACTED]"}`, false},
		{"already redacted, escaped",
			`{"token":"\u005bREDACTED]"}`,
			`{"token":"\u005bREDACTED]"}`, false},
		{"partly redacted",
			`{"token":"[REDACTED]","password":"p"}`,
			`{"token":"[REDACTED]","password":"[REDACTED]"}`, true},
		{"name=value inside a string",
			`{"cmd":"login --user ann password=hunter2 --pin=1234","ok":"amount=5 to=ann"}`,
			`{"cmd":"login --user ann password=[REDACTED] --pin=[REDACTED]","ok":"amount=5 to=ann"}`, true},
		{"connection strings",
			`{"dsn":"postgres://app:s3cr3t@db.internal:5432/x?sslmode=disable","ado":"Server=db;User Id=app;Pwd=s3cr3t;","my":"app:s3cr3t@tcp(db:3306)/x","plain":"https://example.com/a:b@c"}`,
			`{"dsn":"postgres://app:[REDACTED]@db.internal:5432/x?sslmode=disable","ado":"Server=db;User Id=app;Pwd=[REDACTED];","my":"app:[REDACTED]@tcp(db:3306)/x","plain":"https://example.com/a:b@c"}`, true},
		{"PEM private key in a string",
			`["-----BEGIN RSA PRIVATE KEY-----\nMIIEow\u003d\u003d\n-----END RSA PRIVATE KEY-----\n","-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"]`,
			`["-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----\n","-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"]`, true},
		{"new keys",
			`{"passphrase":"p","db_pwd":"p","pin":"1234","card_pin":1234,"cvv":"123","user_pass":"p","otp":"1","shipping":"x","mapping":"y","ping":3}`,
			`{"passphrase":"[REDACTED]","db_pwd":"[REDACTED]","pin":"[REDACTED]","card_pin":"[REDACTED]","cvv":"[REDACTED]","user_pass":"[REDACTED]","otp":"[REDACTED]","shipping":"x","mapping":"y","ping":3}`, true},
		{"bearer inside a string, HTML kept",
			`{"h":"sent Bearer abcdefgh1234 <ok> & done"}`,
			`{"h":"sent Bearer [REDACTED] <ok> & done"}`, true},
		{"times and ids untouched",
			`{"at":"2026-12-01T23:33:00Z","id":"run-1:call_1","u":"https://example.com:8443/x"}`,
			`{"at":"2026-12-01T23:33:00Z","id":"run-1:call_1","u":"https://example.com:8443/x"}`, false},
		{"secret key with secret-looking nested keys",
			`{"credentials":{"password":"p"},"x":{"credentials":[{"token":"t"}]}}`,
			`{"credentials":"[REDACTED]","x":{"credentials":"[REDACTED]"}}`, true},
	}
	r := redact.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, changed, err := r.JSON(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("JSON(%s): %v", tt.in, err)
			}
			if string(out) != tt.want || changed != tt.changed {
				t.Fatalf("JSON(%s)\n got %s, changed=%v\nwant %s, changed=%v", tt.in, out, changed, tt.want, tt.changed)
			}
			again, changed2, err := r.JSON(out)
			if err != nil || changed2 || string(again) != string(out) {
				t.Fatalf("second pass: %s, changed=%v, err=%v", again, changed2, err)
			}
		})
	}
}

func TestJSONDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"password":"hunter2"}`)
	out, changed, err := redact.New().JSON(in)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	if string(in) != `{"password":"hunter2"}` {
		t.Errorf("input modified: %s", in)
	}
	if string(out) != `{"password":"[REDACTED]"}` {
		t.Errorf("out = %s", out)
	}
}

func TestJSONInvalid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{" ", "{", `{"a":}`, `{"a":1,}`, `[1 2]`, "nul", `{"password":"x"} {}`, `'a'`} {
		out, changed, err := redact.New().JSON(json.RawMessage(in))
		if !errors.Is(err, redact.ErrInvalidJSON) {
			t.Errorf("JSON(%q) err = %v, want ErrInvalidJSON", in, err)
		}
		if out != nil || changed {
			t.Errorf("JSON(%q) returned output %q alongside an error", in, out)
		}
	}
	for _, in := range []json.RawMessage{nil, {}} {
		out, changed, err := redact.New().JSON(in)
		if err != nil || changed || len(out) != 0 {
			t.Errorf("JSON(empty) = %q, %v, %v", out, changed, err)
		}
	}
}

func TestJSONExtraKeysAndNil(t *testing.T) {
	t.Parallel()
	out, _, err := redact.New("tenant_ref").JSON(json.RawMessage(`{"tenantRef":"s","id":"i"}`))
	if err != nil || string(out) != `{"tenantRef":"[REDACTED]","id":"i"}` {
		t.Errorf("extra: %s, %v", out, err)
	}
	var r *redact.Redactor
	out, _, err = r.JSON(json.RawMessage(`{"tenantRef":"s","token":"t"}`))
	if err != nil || string(out) != `{"tenantRef":"s","token":"[REDACTED]"}` {
		t.Errorf("nil: %s, %v", out, err)
	}
}
