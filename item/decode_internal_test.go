package item

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeSeeds are inputs for the decoder comparisons: every item type,
// the spellings encoding/json accepts that the one-pass decoder leaves
// to it, and broken input.
var decodeSeeds = []string{
	`{"type":"text","role":"user","text":"hello"}`,
	` { "type" : "text" , "role" : "assistant" , "text" : "h\u00e9llo \"q\" \\ \/ \b\f\n\r\t \u003c\u0026\u003e \u2028" } `,
	`{"type":"text","text":"a\u0000\ud800"}`,
	`{"type":"text","text":"\ud83d\ude00 pair"}`,
	`{"type":"text","text":"bad utf8 ` + "\xff\xfe" + `"}`,
	`{"type":"text","text":"raw é ü 😀"}`,
	`{"type":"refusal","role":"assistant","text":"no","original":{"provider":"openai","value":{"annotations":[1, 2],"s":"<b>"}}}`,
	`{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"pay","arguments":{"to":"ada","n":[1,2.5,-0,1e10,1E+2,-3.25e-7]},"provider_id":"fc_1"}}`,
	`{"type":"tool_call","tool_call":{"id":"c1","name":"pay","arguments": { "a" : "<&>" } }}`,
	`{"type":"tool_call","tool_call":{"id":"c1","name":"pay","arguments":[1]}}`,
	`{"type":"tool_call","tool_call":{"id":"c1","name":"pay","arguments":null}}`,
	`{"type":"tool_call","tool_call":{"id":"c1","name":"pay"}}`,
	`{"type":"tool_result","role":"tool","tool_result":{"call_id":"c1","content":"ok","data":{"ok":true,"n":null},"is_error":true}}`,
	`{"type":"tool_result","tool_result":{"call_id":"c1","content":"ok","data":"\u2028","is_error":false}}`,
	`{"type":"tool_result","tool_result":{"call_id":"c1","content":"ok","is_error":null}}`,
	`{"type":"image","role":"user","image":{"url":"https://x/y.png","detail":"low"}}`,
	`{"type":"image","image":{"media_type":"image/png","data":"aGVsbG8="}}`,
	`{"type":"image","image":{"url":"u","data":""}}`,
	`{"type":"image","image":{"data":"aGVsbG8"}}`,
	`{"type":"image","image":{"data":"aGVs\nbG8="}}`,
	`{"type":"reasoning","role":"assistant","reasoning":{"summary":"s","provider":"anthropic","opaque":"c2ln"}}`,
	`{"type":"reasoning","reasoning":{}}`,
	`{"type":"structured","structured":  [ 1, {"a" : "<&>"} ] }`,
	`{"type":"structured","structured":"x"}`,
	`{"type":"structured","structured":null}`,
	`{"type":"error","error":{"code":"c","message":"m"}}`,
	`{"type":"raw","raw":{"provider":"p","value":{"x":[true,false,null,"s"]}}}`,
	`{"type":"raw","raw":{"provider":"","value":{}}}`,
	`{"type":"unknown"}`,
	`{"type":"Text","text":"x"}`,
	`{"TYPE":"text","text":"x"}`,
	`{"type":"text","Text":"x"}`,
	`{"type":"text","text":"x","text":"y"}`,
	`{"type":"text","type":"text"}`,
	`{"type":"text","role":null}`,
	`{"type":null}`,
	`{"text":"x"}`,
	`{"type":"text","text":5}`,
	`{"type":"text","colour":"red"}`,
	`{"type":"text","tool_call":{"id":"1","name":"n","arguments":{}}}`,
	`{"type":"text"} x`,
	`{"type":"text"}{}`,
	`{"type":"text",}`,
	`{"type":"text"`,
	`{"ty\u0070e":"text"}`,
	`{"type":"te\u0078t"}`,
	`{"type":"text","role":"us\u0065r"}`,
	`{"type":"text","role":"robot"}`,
	`{"type":"structured","structured":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"type":"structured","structured":01}`,
	`{"type":"structured","structured":1.}`,
	`{"type":"structured","structured":-}`,
	`{"type":"structured","structured":1e}`,
	`{"type":"structured","structured":tru}`,
	`{"type":"structured","structured":"\x"}`,
	`{"type":"structured","structured":"\u12"}`,
	"{\"type\":\"structured\",\"structured\":\"a\tb\"}",
	`null`,
	`[]`,
	`"text"`,
	``,
	`{}`,
}

// FuzzDecodeCommon compares the one-pass decoder with the strict one
// (encoding/json, as UnmarshalJSON decoded every item before) on
// arbitrary input: whatever decodeCommon accepts, the strict decoder
// decodes to an equal item; and UnmarshalJSON gives what the strict
// decoder gives, the same item or an error of the same type and text.
func FuzzDecodeCommon(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareDecoders(t, data)
	})
}

func compareDecoders(t *testing.T, data []byte) {
	t.Helper()
	var strict Item
	serr := strict.unmarshalStrict(data)
	var fast Item
	if fast.decodeCommon(data) {
		if serr != nil {
			t.Fatalf("input %q: the one-pass decoder accepts it, the strict one says %v", data, serr)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("input %q:\n one-pass %#v\n   strict %#v", data, fast, strict)
		}
	}
	var got Item
	err := got.UnmarshalJSON(data)
	switch {
	case (err == nil) != (serr == nil):
		t.Fatalf("input %q: UnmarshalJSON %v, strict %v", data, err, serr)
	case err == nil && !reflect.DeepEqual(got, strict):
		t.Fatalf("input %q:\n UnmarshalJSON %#v\n        strict %#v", data, got, strict)
	case err != nil && (err.Error() != serr.Error() || reflect.TypeOf(err) != reflect.TypeOf(serr) ||
		errors.Is(err, ErrInvalid) != errors.Is(serr, ErrInvalid) || errors.Is(err, ErrUnknownType) != errors.Is(serr, ErrUnknownType)):
		t.Fatalf("input %q: UnmarshalJSON %T %v, strict %T %v", data, err, err, serr, serr)
	}
}

// The seeds compare equal, and the common ones are decoded in one pass
// (not left to the strict decoder).
func TestDecodeCommon(t *testing.T) {
	for _, s := range decodeSeeds {
		compareDecoders(t, []byte(s))
	}
	for _, s := range []string{
		`{"type":"text","role":"user","text":"hello"}`,
		` { "type" : "text" , "role" : "assistant" , "text" : "h\u00e9llo \"q\" \\ \/ \b\f\n\r\t \u003c\u0026\u003e \u2028" } `,
		`{"type":"text","text":"raw é ü 😀"}`,
		`{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"pay","arguments":{"to":"ada","n":[1,2.5,-0,1e10,1E+2,-3.25e-7]},"provider_id":"fc_1"}}`,
		`{"type":"tool_call","tool_call":{"id":"c1","name":"pay","arguments": { "a" : "<&>" } }}`,
		`{"type":"tool_result","role":"tool","tool_result":{"call_id":"c1","content":"ok","data":{"ok":true,"n":null},"is_error":true}}`,
		`{"type":"image","image":{"media_type":"image/png","data":"aGVsbG8="}}`,
		`{"type":"reasoning","role":"assistant","reasoning":{"summary":"s","provider":"anthropic","opaque":"c2ln"}}`,
		`{"type":"refusal","role":"assistant","text":"no","original":{"provider":"openai","value":{"annotations":[1, 2],"s":"<b>"}}}`,
		`{"type":"structured","structured":  [ 1, {"a" : "<&>"} ] }`,
		`{"type":"error","error":{"code":"c","message":"m"}}`,
		`{"type":"raw","raw":{"provider":"p","value":{"x":[true,false,null,"s"]}}}`,
	} {
		var it Item
		if !it.decodeCommon([]byte(s)) {
			t.Errorf("left to the strict decoder: %s", s)
		}
	}
	// Every item a transcript holds, encoded then decoded: one pass.
	for i, it := range []Item{UserText("q"), AssistantText("a <b> & \u2028"), NewToolCall("c", "t", json.RawMessage(`{"a":[1,"x"]}`)),
		NewToolResult("c", "r", true), {Type: TypeToolResult, Role: RoleTool, ToolResult: &ToolResult{CallID: "c", Content: "x", Data: json.RawMessage(`{"d":1}`)}}} {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		var got Item
		if !got.decodeCommon(b) || !reflect.DeepEqual(got, it) {
			t.Errorf("item %d: %s decodes to %#v", i, b, got)
		}
	}
	// Deep raw values go to the strict decoder, which decodes them.
	deep := `{"type":"structured","structured":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`
	compareDecoders(t, []byte(deep))
	var it Item
	if err := it.UnmarshalJSON([]byte(deep)); err != nil || it.decodeCommon([]byte(deep)) {
		t.Fatalf("deep value: %v", err)
	}
}

// BenchmarkDecode compares the one-pass decoder (UnmarshalJSON) with the
// strict one it replaced on the common items, per item.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct{ name, in string }{
		{"text", `{"type":"text","role":"user","text":"What did I pay ACME last month, and is invoice 42 settled?"}`},
		{"tool_call", `{"type":"tool_call","role":"assistant","tool_call":{"id":"call_1","name":"pay_invoice","arguments":{"invoice":"INV-42","amount_eur":1250}}}`},
		{"tool_result", `{"type":"tool_result","role":"tool","tool_result":{"call_id":"call_1","content":"payment pay_001: 1250 EUR to ACME Ltd","data":{"id":"pay_001","ok":true}}}`},
	} {
		in := []byte(c.in)
		b.Run(c.name+"/one-pass", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var it Item
				if err := it.UnmarshalJSON(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/strict", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var it Item
				if err := it.unmarshalStrict(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
