package actoviq

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// A stored checkpoint either decodes, and then survives a round trip, or is
// reported as a typed data error naming the run; it never panics.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, _ := json.Marshal(&checkpoint{V: 1, Items: []item.Item{item.UserText("hi"), item.NewToolCall("c1", "pay", json.RawMessage(`{"a":1}`))},
		Turn: 1, Pending: []string{"c1"}, Redacted: map[string]bool{"c1": true}, TraceID: "t",
		Interruptions: []Interruption{{Kind: InterruptApproval, CallID: "c1", Args: json.RawMessage(`{}`)}}})
	for _, s := range []string{string(good), `{"v":1}`, `{"v":2}`, `{"v":1,"items":[{"type":"nope"}]}`, `{`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: b})
		if err != nil {
			var de *store.DataError
			if !errors.As(err, &de) || de.ID != "r" {
				t.Fatalf("error is not a DataError naming the run: %v", err)
			}
			return
		}
		again, err := json.Marshal(cp)
		if err != nil {
			t.Fatalf("a decoded checkpoint does not encode: %v", err)
		}
		cp2, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: again})
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		third, _ := json.Marshal(cp2)
		if string(third) != string(again) || len(cp2.Pending) != len(cp.Pending) || len(cp2.Items) != len(cp.Items) {
			t.Fatalf("round trip is not stable:\n%s\n%s", again, third)
		}
	})
}
