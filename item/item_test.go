package item_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/actoviq/actoviq-go/item"
)

// samples holds one valid item of every type (several for some).
func samples() map[string]item.Item {
	return map[string]item.Item{
		"text":          item.UserText("hello"),
		"text-empty":    item.AssistantText(""),
		"text-system":   item.NewText(item.RoleSystem, "be brief <&>"),
		"image-url":     {Type: item.TypeImage, Role: item.RoleUser, Image: &item.Image{URL: "https://example.com/a.png", Detail: "low"}},
		"image-data":    {Type: item.TypeImage, Role: item.RoleUser, Image: &item.Image{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0x00, 0xff}}},
		"tool_call":     item.NewToolCall("call_1", "get_weather", json.RawMessage(`{"city":"Paris"}`)),
		"tool_call-pid": {Type: item.TypeToolCall, Role: item.RoleAssistant, ToolCall: &item.ToolCall{ID: "call_2", Name: "x", Arguments: json.RawMessage(`{}`), ProviderID: "fc_2"}},
		"tool_result":   item.NewToolResult("call_1", "sunny", false),
		"tool_result-data": {Type: item.TypeToolResult, Role: item.RoleTool, ToolResult: &item.ToolResult{
			CallID: "call_1", Content: "boom", Data: json.RawMessage(`{"code":3}`), IsError: true}},
		"reasoning": {Type: item.TypeReasoning, Role: item.RoleAssistant, Reasoning: &item.Reasoning{
			Summary: "thought", Provider: "anthropic", Opaque: []byte{0x00, 0xfe, 0xff, 0x80, 'a', 0xc3, 0x28}}},
		"reasoning-empty": {Type: item.TypeReasoning, Reasoning: &item.Reasoning{}},
		"structured":      {Type: item.TypeStructured, Role: item.RoleAssistant, Structured: json.RawMessage(`{"a":[1,2.5,"x"],"b":null}`)},
		"structured-num":  {Type: item.TypeStructured, Structured: json.RawMessage(`42`)},
		"refusal":         {Type: item.TypeRefusal, Role: item.RoleAssistant, Text: "I can't help with that."},
		"error":           {Type: item.TypeError, Error: &item.Error{Code: "model_behaviour", Message: "duplicate call id"}},
		"text-original": {Type: item.TypeText, Role: item.RoleAssistant, Text: "Paris is in France.", Original: &item.Raw{Provider: "anthropic",
			Value: json.RawMessage(`{"type":"text","text":"Paris is in France.","citations":[{"type":"char_location","cited_text":"Paris","start_char_index":0,"end_char_index":5}]}`)}},
		"raw": {Type: item.TypeRaw, Raw: &item.Raw{Provider: "openai", Value: json.RawMessage(`{"type":"web_search_call","id":"ws_1"}`)}},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	seen := map[item.Type]bool{}
	for name, x := range samples() {
		seen[x.Type] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b1, err := json.Marshal(x)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			var got item.Item
			if err := json.Unmarshal(b1, &got); err != nil {
				t.Fatalf("unmarshal %s: %v", b1, err)
			}
			if !reflect.DeepEqual(got, x) {
				t.Fatalf("round trip changed the item:\n got %#v\nwant %#v", got, x)
			}
			b2, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("re-marshal: %v", err)
			}
			if !bytes.Equal(b1, b2) {
				t.Fatalf("bytes not stable:\n%s\n%s", b1, b2)
			}
		})
	}
	for _, ty := range []item.Type{item.TypeText, item.TypeImage, item.TypeToolCall, item.TypeToolResult,
		item.TypeReasoning, item.TypeStructured, item.TypeRefusal, item.TypeError, item.TypeRaw} {
		if !seen[ty] {
			t.Errorf("no sample for type %s", ty)
		}
	}
}

func TestOpaqueBytesKept(t *testing.T) {
	t.Parallel()
	opaque := make([]byte, 256)
	for i := range opaque {
		opaque[i] = byte(i)
	}
	x := item.Item{Type: item.TypeReasoning, Reasoning: &item.Reasoning{Provider: "p", Opaque: opaque}}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	var got item.Item
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Reasoning.Opaque, opaque) {
		t.Fatalf("opaque bytes changed: %x", got.Reasoning.Opaque)
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	var it item.Item
	err := json.Unmarshal([]byte(`{"type":"hologram","text":"hi"}`), &it)
	if !errors.Is(err, item.ErrUnknownType) {
		t.Fatalf("err = %v, want ErrUnknownType", err)
	}
	var ute *item.UnknownTypeError
	if !errors.As(err, &ute) || ute.Type != "hologram" {
		t.Fatalf("errors.As: %v", err)
	}
	if errors.Is(err, item.ErrInvalid) {
		t.Fatal("unknown type must not match ErrInvalid")
	}
	if _, err := json.Marshal(item.Item{Type: "hologram"}); !errors.Is(err, item.ErrUnknownType) {
		t.Fatalf("marshal unknown: %v", err)
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"missing type":          `{"text":"hi"}`,
		"text with image":       `{"type":"text","image":{"url":"u"}}`,
		"image without source":  `{"type":"image","image":{}}`,
		"image with both":       `{"type":"image","image":{"url":"u","data":"AA=="}}`,
		"image with text":       `{"type":"image","text":"x","image":{"url":"u"}}`,
		"tool_call missing":     `{"type":"tool_call"}`,
		"tool_call no name":     `{"type":"tool_call","tool_call":{"id":"1","name":"","arguments":{}}}`,
		"tool_call array args":  `{"type":"tool_call","tool_call":{"id":"1","name":"n","arguments":[1]}}`,
		"tool_call string args": `{"type":"tool_call","tool_call":{"id":"1","name":"n","arguments":"{}"}}`,
		"tool_result no id":     `{"type":"tool_result","tool_result":{"call_id":"","content":"x"}}`,
		"reasoning missing":     `{"type":"reasoning"}`,
		"structured missing":    `{"type":"structured"}`,
		"error missing":         `{"type":"error"}`,
		"raw no provider":       `{"type":"raw","raw":{"provider":"","value":{}}}`,
		"refusal with call":     `{"type":"refusal","tool_call":{"id":"1","name":"n","arguments":{}}}`,
		"unknown field":         `{"type":"text","text":"hi","colour":"red"}`,
		"original on a call":    `{"type":"tool_call","tool_call":{"id":"1","name":"n","arguments":{}},"original":{"provider":"p","value":{}}}`,
		"original no provider":  `{"type":"text","text":"hi","original":{"provider":"","value":{}}}`,
		"wrong field type":      `{"type":"text","text":5}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var it item.Item
			err := json.Unmarshal([]byte(in), &it)
			if !errors.Is(err, item.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var ie *item.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("errors.As InvalidError: %v", err)
			}
		})
	}
	// Marshal refuses invalid items too, so nothing malformed is persisted.
	if _, err := json.Marshal(item.Item{Type: item.TypeText, ToolCall: &item.ToolCall{Name: "x"}}); !errors.Is(err, item.ErrInvalid) {
		t.Fatalf("marshal invalid: %v", err)
	}
}

// TestDecodeCanonical checks that a decoded item is already in the form its
// own encoding decodes to (whitespace and empty byte strings normalised).
func TestDecodeCanonical(t *testing.T) {
	t.Parallel()
	in := `{"type":"tool_call","tool_call":{"id":"1","name":"n","arguments":{ "a" : "<b>" }}}`
	var x1, x2 item.Item
	if err := json.Unmarshal([]byte(in), &x1); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x1)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &x2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x1, x2) {
		t.Fatalf("not canonical:\n%#v\n%#v", x1, x2)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	u := item.Usage{InputTokens: 10, OutputTokens: 5, Requests: 1}.Add(item.Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, Requests: 1})
	want := item.Usage{InputTokens: 11, OutputTokens: 7, CachedInputTokens: 3, Requests: 2}
	if u != want || u.Total() != 18 {
		t.Fatalf("got %+v", u)
	}
}

// Arguments may have JSON's whitespace around the object and nothing else:
// a form feed, a vertical tab or a no-break space passed bytes.TrimSpace,
// and the item was then valid but could not be encoded (FuzzMarshalCommon).
func TestToolCallArgumentsWhitespace(t *testing.T) {
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{"{}", true},
		{" \t\r\n{\"a\":1} \n", true},
		{"\f{}", false},
		{"{}\f", false},
		{"\v{}", false},
		{"\u00a0{}", false},
		{" []", false},
	} {
		it := item.Item{Type: item.TypeToolCall, Role: item.RoleAssistant,
			ToolCall: &item.ToolCall{ID: "c1", Name: "pay", Arguments: json.RawMessage(tc.args)}}
		err := it.Validate()
		var inv *item.InvalidError
		if tc.ok != (err == nil) || (err != nil && !errors.As(err, &inv)) {
			t.Errorf("arguments %q: Validate = %v, want ok=%v (an *item.InvalidError otherwise)", tc.args, err, tc.ok)
			continue
		}
		b, err := json.Marshal(it)
		if tc.ok != (err == nil) {
			t.Errorf("arguments %q: json.Marshal = %s, %v", tc.args, b, err)
		}
	}
}
