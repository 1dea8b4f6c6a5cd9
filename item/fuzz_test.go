package item_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/actoviq/actoviq-go/item"
)

// FuzzItemUnmarshal checks that any input either fails to decode, or decodes
// to an item whose encoding is a fixpoint: it decodes back to an equal item
// and encodes to the same bytes.
func FuzzItemUnmarshal(f *testing.F) {
	for _, x := range samples() {
		b, err := json.Marshal(x)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"text","text":"a\u0000\ud800"}`))
	f.Add([]byte(`{"type":"structured","structured":  [ 1, {"a" : "<&>"} ] }`))
	f.Add([]byte(`{"type":"image","image":{"url":"u","data":""}}`))
	f.Add([]byte(`{"type":"unknown"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var x1 item.Item
		if err := json.Unmarshal(data, &x1); err != nil {
			return
		}
		b1, err := json.Marshal(x1)
		if err != nil {
			t.Fatalf("decoded item does not encode: %v\ninput %q\nitem %#v", err, data, x1)
		}
		var x2 item.Item
		if err := json.Unmarshal(b1, &x2); err != nil {
			t.Fatalf("encoding does not decode: %v\n%s", err, b1)
		}
		if !reflect.DeepEqual(x1, x2) {
			t.Fatalf("decode(encode(x)) != x\ninput %q\n x1 %#v\n x2 %#v", data, x1, x2)
		}
		b2, err := json.Marshal(x2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("bytes not stable:\n%s\n%s", b1, b2)
		}
	})
}
