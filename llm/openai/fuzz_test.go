package openai

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

func addSeeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n"))
	f.Add([]byte("data: {\"error\":{\"code\":429}}\n\n"))
	f.Add([]byte("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"arguments\":\"[\"}}\n\n"))
}

// feed runs arbitrary SSE bytes through a decoder and checks invariants:
// no panic, and a completed response holds only valid items.
func feed(t *testing.T, data []byte, dec wire.Decoder, errorEvent func(transport.Event) (int, bool)) {
	d := transport.NewDecoder(bytes.NewReader(data), 1<<20)
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

func FuzzChatStream(f *testing.F) {
	addSeeds(f, "chat_*.sse")
	f.Fuzz(func(t *testing.T, data []byte) {
		feed(t, data, newChatAcc("openai.chat"), chatErrorEvent)
	})
}

func FuzzResponsesStream(f *testing.F) {
	addSeeds(f, "resp_*.sse")
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &client{name: "openai.responses"}
		feed(t, data, &respAcc{c: c, items: map[int][]item.Item{}, args: map[int]*bytes.Buffer{},
			text: map[int]*bytes.Buffer{}, emitted: map[int]bool{}, seq: -1}, respErrorEvent)
	})
}
