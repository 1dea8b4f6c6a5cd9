package wiretest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// AddSeeds adds every testdata file matching glob, and extra inputs, to a
// fuzz corpus.
func AddSeeds(f *testing.F, glob string, extra ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// Feed runs arbitrary SSE bytes through a stream decoder and checks its
// invariants: no panic, and a completed response holds only valid items.
// errorEvent skips the events the transport would have classified.
func Feed(t *testing.T, data []byte, dec wire.Decoder, errorEvent func(transport.SSEEvent) (int, bool)) {
	d := transport.NewSSEDecoder(bytes.NewReader(data), 1<<20)
	emit := func(llm.StreamEvent) bool { return true }
	for {
		ev, err := d.Next()
		if err != nil {
			break
		}
		if _, isErr := errorEvent(ev); isErr {
			continue
		}
		done, err := dec.Handle(ev, emit)
		if err != nil {
			_ = err.Error()
			return
		}
		if done {
			break
		}
	}
	_ = dec.Partial()
	resp, err := dec.Result(true, emit)
	if err != nil {
		_ = err.Error()
		return
	}
	for i, it := range resp.Items {
		if it.Type == item.TypeToolCall {
			if err := it.Validate(); err != nil {
				t.Fatalf("item %d of a completed response is invalid: %v", i, err)
			}
		}
	}
}
