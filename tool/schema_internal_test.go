package tool

import (
	"encoding/json"
	"testing"
)

// The schemas whose one keyword is "type", and some that look like them
// but are not: their fast check (schema.only) must agree with the
// validator on every instance (FuzzTypeOnlySchema).
var typeOnlySchemas = []string{`{"type":"string"}`, `{"type":"object"}`, ` { "type" : "array" } `, `{"type":"null"}`,
	`{"type":"integer"}`, `{"type":"boolean"}`, `{"type":["string","null"]}`, `{"type":"string","minLength":3}`, `{}`,
	`{"type":"object","required":["a"]}`}

func TestTypeOnly(t *testing.T) {
	want := map[string]byte{`{"type":"string"}`: '"', `{"type":"object"}`: '{', ` { "type" : "array" } `: '[', `{"type":"null"}`: 'n'}
	for _, raw := range typeOnlySchemas {
		sc, err := compileSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatal(raw, err)
		}
		if sc.only != want[raw] {
			t.Errorf("%s: only %q, want %q", raw, sc.only, want[raw])
		}
		if wantEmpty := validateJSON(sc.s, json.RawMessage(`{}`)) == nil; sc.emptyOK != wantEmpty {
			t.Errorf("%s: emptyOK %v", raw, sc.emptyOK)
		}
	}
}

// FuzzTypeOnlySchema: a schema's fast check and the validator agree on
// whether an instance passes, for every schema above.
func FuzzTypeOnlySchema(f *testing.F) {
	for _, s := range []string{`"x"`, ` "x" `, `{}`, `{"a":1}`, `[1]`, `null`, `1`, `true`, `"x`, `{"a":}`, `[1,]`, ``, ` `, `nul`,
		"\"\xff\"", `{"a":"b"} x`, `"a" "b"`} {
		f.Add([]byte(s))
	}
	var scs []*schema
	for _, raw := range typeOnlySchemas {
		sc, err := compileSchema(json.RawMessage(raw))
		if err != nil {
			f.Fatal(err)
		}
		scs = append(scs, sc)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for i, sc := range scs {
			if got, want := sc.validate(raw) == nil, validateJSON(sc.s, raw) == nil; got != want {
				t.Fatalf("schema %s, instance %q: fast check passes %v, validator %v", typeOnlySchemas[i], raw, got, want)
			}
		}
	})
}
