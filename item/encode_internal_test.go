package item

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMarshalCommon compares the reflection-free encoding of common items
// (appendCommon, taken by MarshalJSON) with encoding/json's, byte for byte.
func FuzzMarshalCommon(f *testing.F) {
	f.Add(uint8(0), "user", "hello", "", "", []byte(nil), "", "", []byte(nil), false)
	f.Add(uint8(1), "assistant", "", "c1", "pay", []byte(`{"to":"ada","n":[1,2.5]}`), "fc_1", "", []byte(nil), false)
	f.Add(uint8(2), "tool", "", "", "", []byte(nil), "", "c1", []byte(`{"ok":true}`), true)
	f.Add(uint8(2), "tool", "", "", "", []byte(nil), "", "c\"1", []byte(`"<b>"`), false)
	f.Add(uint8(0), "assistant", "héllo <&> \u2028 \xff\n", "", "", []byte(nil), "", "", []byte(nil), false)
	f.Add(uint8(1), "assistant", "", "", "t", []byte(`{ "a" : 1 }`), "", "", []byte(nil), false)
	f.Add(uint8(3), "", "x", "", "", []byte(nil), "", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, kind uint8, role, text, id, name string, args []byte, pid, callID string, data []byte, isErr bool) {
		it := Item{Role: Role(role), Text: text}
		switch kind % 4 {
		case 0:
			it.Type = TypeText
		case 1:
			it.Type, it.ToolCall = TypeToolCall, &ToolCall{ID: id, Name: name, Arguments: args, ProviderID: pid}
		case 2:
			it.Type, it.ToolResult = TypeToolResult, &ToolResult{CallID: callID, Content: text, Data: data, IsError: isErr}
			it.Text = ""
		case 3:
			it.Type = TypeRefusal
		}
		if it.Validate() != nil {
			return
		}
		type plain Item
		want, err := json.Marshal(plain(it))
		if err != nil {
			t.Fatalf("%+v: %v", it, err)
		}
		got, err := it.MarshalJSON()
		if err != nil {
			t.Fatalf("%+v: %v", it, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		// And through json.Marshal, as a field of another value.
		if b, err := json.Marshal(it); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("json.Marshal: %s %v\nwant %s", b, err, want)
		}
	})
}

// The items of every turn take the fast path.
func TestMarshalCommonFastPath(t *testing.T) {
	for _, it := range []Item{
		{Type: TypeText, Role: RoleUser, Text: "naïve café"},
		{Type: TypeToolCall, Role: RoleAssistant, ToolCall: &ToolCall{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{"a":[1,"x"]}`)}},
		{Type: TypeToolResult, Role: RoleTool, ToolResult: &ToolResult{CallID: "c1", Content: "ok", Data: json.RawMessage(`"ok"`)}},
	} {
		if _, ok := it.appendCommon(nil); !ok {
			t.Errorf("%+v: not on the fast path", it)
		}
	}
}

// The fast path sizes its buffer exactly when no string needs an escape:
// a store that keeps the bytes as they are keeps no spare room with them.
func TestMarshalCommonExactSize(t *testing.T) {
	for _, it := range []Item{
		{Type: TypeText, Role: RoleUser, Text: "naïve café"},
		{Type: TypeText, Text: "no role"},
		{Type: TypeToolCall, Role: RoleAssistant, ToolCall: &ToolCall{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{"a":[1,"x"]}`)}},
		{Type: TypeToolCall, Role: RoleAssistant, ToolCall: &ToolCall{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`), ProviderID: "fc_1"}},
		{Type: TypeToolResult, Role: RoleTool, ToolResult: &ToolResult{CallID: "c1", Content: "ok", Data: json.RawMessage(`"ok"`)}},
		{Type: TypeToolResult, ToolResult: &ToolResult{CallID: "c1", Content: "", IsError: true}},
	} {
		b, ok := it.appendCommon(nil)
		if !ok {
			t.Fatalf("%+v: not on the fast path", it)
		}
		if cap(b) != len(b) {
			t.Errorf("%s: %d bytes in a buffer of %d", b, len(b), cap(b))
		}
	}
}
