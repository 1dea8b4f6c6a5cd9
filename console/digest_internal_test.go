package console

import (
	"encoding/json"
	"testing"
)

func TestWithoutArgsDigest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"args_digest":"sha256:aa","a":[{"args_digest":"x","k":"<&>"},2.50,null,true]}`, `{"b":1,"a":[{"k":"<&>"},2.50,null,true]}`},
		{`{"args_digest":"sha256:aa"}`, `{}`},
		{`[{"n":{"args_digest":{"deep":1},"m":"args_digest"}}]`, `[{"n":{"m":"args_digest"}}]`},
		{`{"kept":"no digest here"}`, `{"kept":"no digest here"}`},
		{`{"args_digest":`, `{"args_digest":`}, // not JSON: as it was
	} {
		got := string(withoutArgsDigest(json.RawMessage(c.in)))
		if got != c.want {
			t.Errorf("withoutArgsDigest(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
