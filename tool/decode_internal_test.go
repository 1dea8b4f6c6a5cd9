package tool

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var decodeSeeds = []string{
	`{}`, ` { } `, `[]`, `null`, `true`, `false`, `0`, `-1.5e+10`, `12345678901234567890123`,
	`"plain"`, `"esc\"aped\\\u00e9\n"`, "\"bad utf8 \xff\xfe\"", `{"a":1,"b":[1,2,{"c":null}],"d":"x"}`,
	`{"a":1,"a":2}`, "{\n\t\"k\" : [ true , false ]\r\n}", `{"k":"v"} x`, `{"k":}`, `{`, ``, `[1,]`, `"\ud83d\ude00"`,
	`{"nested":{"deep":{"deeper":[[[]]]}}}`, `1.0`, `-0`, `[ "a" , 1e3 ]`,
}

// decodeInstance gives what jsonschema.UnmarshalJSON gives, and refuses
// what it refuses.
func TestDecodeInstanceMatchesJSONSchema(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
}

func FuzzDecodeInstance(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	got, gerr := decodeInstance(b)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: decodeInstance error %v, jsonschema error %v", b, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeInstance %#v, jsonschema %#v", b, got, want)
	}
}
