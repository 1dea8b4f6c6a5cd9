package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// TestTranscriptCheckGrows: checking a transcript as it grows, one item
// at a time, gives what ValidateTranscript gives on each prefix, and Seen
// knows the calls so far.
func TestTranscriptCheckGrows(t *testing.T) {
	call := func(id string) item.Item { return item.NewToolCall(id, "t", json.RawMessage(`{}`)) }
	res := func(id string) item.Item { return item.NewToolResult(id, "ok", false) }
	for _, tc := range []struct {
		name  string
		items []item.Item
	}{
		{"paired", []item.Item{item.UserText("hi"), call("a"), call("b"), res("a"), res("b"), item.AssistantText("done")}},
		{"result first", []item.Item{res("a"), call("a")}},
		{"duplicate call", []item.Item{call("a"), res("a"), call("a"), res("a")}},
		{"duplicate result", []item.Item{call("a"), res("a"), res("a")}},
		{"empty id", []item.Item{call("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c llm.TranscriptCheck
			for n := 0; n <= len(tc.items); n++ {
				got, want := c.Check(tc.items[:n]), llm.ValidateTranscript(tc.items[:n])
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("prefix %d: incremental %v, whole %v", n, got, want)
				}
				var d *llm.DanglingToolCallError
				if want != nil && !errors.As(got, &d) {
					t.Fatalf("prefix %d: %v is not a *DanglingToolCallError", n, got)
				}
			}
		})
	}
	var c llm.TranscriptCheck
	items := []item.Item{call("a"), res("a")}
	if err := c.Check(items); err != nil || !c.Seen("a") || c.Seen("b") {
		t.Fatalf("Seen after a checked call: %v %v %v", err, c.Seen("a"), c.Seen("b"))
	}
	// A shorter transcript is another one: the check starts over.
	if err := c.Check([]item.Item{call("b")}); err == nil || c.Seen("a") {
		t.Fatalf("a new, shorter transcript: %v, still sees a: %v", err, c.Seen("a"))
	}
}
