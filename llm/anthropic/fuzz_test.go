package anthropic

import (
	"testing"

	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
)

// FuzzStream feeds arbitrary SSE bytes to the Messages stream decoder: it
// must never panic, and a completed response holds only valid tool calls.
func FuzzStream(f *testing.F) {
	wiretest.AddSeeds(f, "*.sse",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\"}}\n\n",
		"data: {\"type\":\"error\"}\n\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		wiretest.Feed(t, data, newAcc("anthropic"), errorEvent)
	})
}
