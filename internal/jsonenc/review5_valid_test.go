package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

// Review 5A: Valid against encoding/json on inputs the fuzz seeds do not
// name: escapes and surrogates, bytes that are not UTF-8, whitespace that
// JSON does not allow, numbers of any size, brackets inside strings at the
// nesting limit, and strings whose end is an escaped quote.
func TestReview5ValidAgreesWithEncodingJSON(t *testing.T) {
	deep := func(n int, inner string) string { return strings.Repeat("[", n) + inner + strings.Repeat("]", n) }
	cases := []string{
		`"\ud800"`, `"\udc00\ud800"`, `"\uD834\uDD1E"`, `"\u0000"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xc3\xa9\"",
		"\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x80\xa8\"", "\xef\xbb\xbf{}", "{}\xef\xbb\xbf",
		"\v{}", "{}\f", "\u00a0{}", "{\"a\"\t:\r\n1}", "[1\n,\n2]",
		`1e999999999`, `-1e-999999999`, strings.Repeat("9", 5000), "-" + strings.Repeat("0", 2), `0e5`, `-0.0E+00`, `0.`, `00`,
		`1e`, `1e+`, `1e-0`, `1.e1`, `-.1`, `Infinity`, `NaN`, `-Infinity`, `0x10`,
		`"\\"`, `"\\\""`, `"a\\\"`, `"\"`, `"\/"`, `"\'"`, `"\U0041"`, `"\u004"`, `"\u004G"`,
		deep(maxDepth, `"]]]]"`), deep(maxDepth, `"[[[["`), deep(maxDepth+1, `"]"`), deep(maxDepth-1, `{"[":"]"}`),
		deep(maxDepth, `{}`), deep(maxDepth-1, `{"a":[]}`), strings.Repeat(`{"a":`, maxDepth) + `"}"` + strings.Repeat("}", maxDepth),
		`{"a":1,"a":2}`, `{"a":1}{}`, `[]]`, `[[]`, `{"a":[}`, `{1:2}`, `{null:1}`, `["a":1]`, `[true,]`, `nulll`, `n`,
		"", " \t\r\n ", "\x00", "{}\x00", "[\"a\"\x00]",
	}
	for _, s := range cases {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid = %v", s, got, want)
		}
	}
}
