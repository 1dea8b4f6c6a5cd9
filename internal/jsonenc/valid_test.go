package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{``, ` `, `{}`, `[]`, `{"a":[1,2.5,true,null,"x y"]}`, ` {"a" : 1 } `, `{"a":1,}`, `[1,]`, `[,1]`,
	`{"a"}`, `{"a":}`, `{,}`, `{"a":1 "b":2}`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\u00g0"`, `"\x"`, "\"\x01\"", "\"\xff\xfe\"",
	`-0`, `-01`, `01`, `1.`, `1.5e`, `1e+5`, `1E-05`, `-`, `.5`, `+1`, `1.0e5.0`, `truex`, `tru`, `nul`, `false `, `true false`,
	`{"a":{"b":[{"c":[]}]}}`, `[[[[]]]]`, `[[[]]`, `{]`, `[}`, `"abc`, `"\u12`, "\t\r\n[ ]\n", `{"":""}`, `1 2`, `{"a":1}}`}

// FuzzValid compares Valid with json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// TestValidDepth checks encoding/json's nesting limit, at its edge, for
// arrays, objects and a mix.
func TestValidDepth(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, maxDepth - 1, maxDepth, maxDepth + 1, 3 * maxDepth} {
		arr := strings.Repeat("[", n) + strings.Repeat("]", n)
		obj := strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
		mix := strings.Repeat(`[{"a":`, n/2+1) + "1" + strings.Repeat("}]", n/2+1)
		for _, s := range []string{arr, obj, mix} {
			if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("depth %d (%.8s...): Valid = %v, json.Valid = %v", n, s, got, want)
			}
		}
	}
}

func BenchmarkValid(b *testing.B) {
	in := []byte(`{"call_id":"c1","tool":"noop","effect":"side-effect","state":"committed","idempotency_key":"m1:c1","attempt":1,"args":{},"result":{"content":"ok","data":"ok"},"resolution":"","n":[1,2.5e3,-0.25,true,null]}`)
	b.Run("jsonenc", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for range b.N {
			if !Valid(in) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for range b.N {
			if !json.Valid(in) {
				b.Fatal("invalid")
			}
		}
	})
}
