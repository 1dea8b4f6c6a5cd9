package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString compares AppendString with json.Marshal byte for byte.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<a href=\"x\">&amp;</a>",
		"héllo wörld 日本", "\u2028\u2029\u2027\u202a", "\xff\xfe", "a\xe2\x80", "\xed\xa0\x80", "\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("%q:\n got %s\nwant %s", s, got[1:], want)
		}
	})
}

// FuzzPlain checks that whenever Plain says so, json.Marshal copies a
// valid raw value unchanged.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,true,null,"x y"]}`, `{"a": 1}`, `{"a":"<b>"}`, "{\"a\":\"\u2028\"}",
		`{"a":"\"}"}`, `"\\"`, `[ ]`, "{\"a\":\"\t\"}", `{"a":"\u003c"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !Plain(raw) {
			return
		}
		got, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("Plain(%q), but json.Marshal gives %q", raw, got)
		}
	})
}

// The common values are plain, so the fast paths take them.
func TestPlainCommon(t *testing.T) {
	for _, s := range []string{`{}`, `{"to":"ada","amount":[1,2.5,true,null],"note":"café \"x\""}`} {
		if !Plain([]byte(s)) {
			t.Errorf("Plain(%s) = false", s)
		}
	}
	for _, s := range []string{`{"a": 1}`, `{"a":"<"}`, "{\"a\":\"\u2028\"}", "{\n}"} {
		if Plain([]byte(s)) {
			t.Errorf("Plain(%q) = true", s)
		}
	}
}
