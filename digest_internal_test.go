package actoviq

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// argsDigest hashes the compact form of the arguments, whether or not
// they came compact.
func FuzzArgsDigest(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1}`, "{\"a\":\"x y\\\" \\\\\",\n\"b\":[1, 2]}", `{"k":"\t"}`, `[ ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(c.Bytes())
		if want := "sha256:" + hex.EncodeToString(sum[:]); argsDigest(b) != want {
			t.Fatalf("%q: %s, want %s", b, argsDigest(b), want)
		}
		if isCompact(b) != bytes.Equal(c.Bytes(), b) {
			t.Fatalf("%q: isCompact %v", b, isCompact(b))
		}
	})
}
