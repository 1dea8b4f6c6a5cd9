package anthropic_test

import (
	"testing"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
)

// NoStreaming switches streaming off for every model; Models switches it
// off for one.
func TestNoStreaming(t *testing.T) {
	p, err := anthropic.New(&anthropic.Config{APIKey: "k", NoStreaming: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Capabilities("claude-x").Streaming {
		t.Fatal("NoStreaming: the model still reports streaming")
	}
	p, _ = anthropic.New(&anthropic.Config{APIKey: "k", Models: map[string]llm.Capabilities{"slow": {Tools: true}}})
	if p.Capabilities("slow").Streaming || !p.Capabilities("other").Streaming {
		t.Fatal("per-model streaming switch not honoured")
	}
}
