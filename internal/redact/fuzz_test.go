package redact_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// reference is the obvious, slow implementation: decode, replace the value
// of every secret key, compare. It cannot check key order or number
// spelling (JSON's tests do), but it checks that nothing secret survives and
// nothing else changes.
func reference(r *redact.Redactor, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if r.IsSecretKey(k) {
				v[k] = redact.Placeholder
			} else {
				v[k] = reference(r, x)
			}
		}
	case []any:
		afterFlag := false
		for i, x := range v {
			str, isStr := x.(string)
			if afterFlag && isStr && !strings.HasPrefix(str, "-") {
				v[i] = redact.Placeholder
				afterFlag = false
				continue
			}
			afterFlag = isStr && strings.HasPrefix(str, "-") && r.SecretFlag(str)
			v[i] = reference(r, x)
		}
	case string:
		return r.Text(v)
	}
	return v
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `1.0`, `"token"`,
		`{"user":"ann","password":"hunter2","api_key":"sk-1"}`,
		`{"n":12345678901234567890,"f":1.0,"token":{"a":[1,{"b":"}"}]}}`,
		`[[{"headers":[{"Authorization":"Bearer x"}]}],[[{"X-Api-Key":"k"}]]]`,
		`{"usage":{"input_tokens":10,"tokens_used":15}}`,
		`{"api\u005fkey":"k","pass\"word":"p","note":"\"secret\":1"}`,
		`{"token":"[REDACTED]","token":"b","secret":null}`,
		"{\n \"a\" : [ 1 , { \"cookie\" : \"c\" } ] }\n",
		`{"cmd":"x password=p pin: 1","dsn":"postgres://u:p@h/d","k":"-----BEGIN EC PRIVATE KEY-----\nAA\n"}`,
		`{"argv":["login","--password","p","-token","--user","ann","--token",7,"--api-key","[REDACTED]","\u002d-secret","s"]}`,
		`{"cmd":"deploy --token t1 --password-file /run/p --mnemonic 'a b c' -v","seed_phrase":["w1","w2"]}`,
	} {
		f.Add([]byte(s))
	}
	r := redact.New("session")
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed, err := r.JSON(in)
		if len(in) == 0 {
			return
		}
		if !json.Valid(in) {
			if err == nil {
				t.Fatalf("invalid input %q accepted", in)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid input %q: %v", in, err)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q -> %q", in, out)
		}
		if m := r.MarshaledJSON(in); !bytes.Equal(m, out) {
			t.Fatalf("MarshaledJSON(%q) = %q, JSON gives %q", in, m, out)
		}
		if !changed && !bytes.Equal(in, out) {
			t.Fatalf("changed=false but %q -> %q", in, out)
		}
		if changed && bytes.Equal(in, out) {
			t.Fatalf("changed=true but output equals input %q", in)
		}
		again, changed2, err := r.JSON(out)
		if err != nil || changed2 || !bytes.Equal(again, out) {
			t.Fatalf("redacting twice differs from once: %q -> %q -> %q (changed=%v, err=%v)", in, out, again, changed2, err)
		}
		want := reference(r, decode(t, in))
		if got := decode(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q -> %q\n got %#v\nwant %#v", in, out, got, want)
		}
	})
}
