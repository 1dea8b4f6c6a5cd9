package anthropic

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// FuzzStream feeds arbitrary SSE bytes to the Messages stream decoder: it
// must never panic, and a completed response holds only valid tool calls.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\"}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := transport.NewDecoder(bytes.NewReader(data), 1<<20)
		a := newAcc("anthropic")
		emit := func(llm.StreamEvent) bool { return true }
		for {
			ev, err := d.Next()
			if err != nil {
				break
			}
			if _, isErr := errorEvent(ev); isErr {
				continue
			}
			done, err := a.Handle(ev, emit)
			if err != nil {
				_ = err.Error()
				return
			}
			if done {
				break
			}
		}
		_ = a.Partial()
		resp, err := a.Result(true, emit)
		if err != nil {
			return
		}
		for i, it := range resp.Items {
			if it.Type == item.TypeToolCall {
				if err := it.Validate(); err != nil {
					t.Fatalf("item %d invalid: %v", i, err)
				}
			}
		}
	})
}
