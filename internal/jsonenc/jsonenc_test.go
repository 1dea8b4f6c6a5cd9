package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
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

// ReplaceInvalidUTF8 replaces each byte that is not UTF-8 in a JSON value
// as json.Marshal replaces it in a Go string, and counts them.
func TestReplaceInvalidUTF8(t *testing.T) {
	for _, s := range []string{"plain", "é ok", "bad \xff\xfe end", "cut \xc3", "\xe2\x82 half a euro, € whole", "\xed\xa0\x80 surrogate", "\x00 nul"} {
		want, _ := json.Marshal(s)
		raw := AppendString(nil, s)
		if string(raw) != string(want) {
			t.Fatalf("%q: AppendString %s, json %s", s, raw, want)
		}
		in := append([]byte(`{"k":"`), s...)
		in = append(in, `"}`...)
		if s == "\x00 nul" {
			in = []byte(`{"k":"\u0000 nul"}`)
		}
		got, n := ReplaceInvalidUTF8(in)
		if string(got) != `{"k":`+string(want)+`}` || !utf8.Valid(got) || !Valid(got) {
			t.Errorf("%q: %s, want {\"k\":%s}", s, got, want)
		}
		if wantN := strings.Count(string(want), `\ufffd`); n != wantN {
			t.Errorf("%q: %d replaced, want %d", s, n, wantN)
		}
		var back string
		if err := json.Unmarshal(want, &back); err != nil || ValidString(s) != back {
			t.Errorf("%q: ValidString %q, json reads back %q (%v)", s, ValidString(s), back, err)
		}
	}
}
