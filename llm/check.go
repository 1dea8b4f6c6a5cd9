package llm

import (
	"fmt"

	"github.com/actoviq/actoviq-go/item"
)

// Capabilities says what a model supports.
type Capabilities struct {
	// Tools: the model accepts tool definitions and emits tool calls.
	Tools bool
	// Streaming: the model can stream its output.
	Streaming bool
	// ImageInput: image items may appear in the transcript.
	ImageInput bool
	// Reasoning: the model emits reasoning items.
	Reasoning bool
	// StructuredOutput: the model honours an output schema.
	StructuredOutput bool
}

// Check returns an [*UnsupportedError] when req needs a feature the model
// lacks: tool definitions or tool items in the transcript without Tools,
// image items without ImageInput, an output schema without
// StructuredOutput. Adapters call it before any network call.
//
// Reasoning items in the transcript are not refused: reasoning is the
// provider's own opaque state, and adapters drop reasoning they cannot
// send back (for example another provider's) rather than fail the call.
func (c Capabilities) Check(req *Request) error {
	if req == nil {
		return nil
	}
	unsupported := func(f string) error { return &UnsupportedError{Feature: f, Model: req.Model} }
	if !c.Tools && len(req.Tools) > 0 {
		return unsupported("tools")
	}
	if !c.StructuredOutput && len(req.OutputSchema) > 0 {
		return unsupported("structured_output")
	}
	for _, it := range req.Items {
		switch it.Type {
		case item.TypeImage:
			if !c.ImageInput {
				return unsupported("image_input")
			}
		case item.TypeToolCall, item.TypeToolResult:
			if !c.Tools {
				return unsupported("tools")
			}
		}
	}
	return nil
}

// CheckStream is [Capabilities.Check] for a streaming call: it also needs
// Streaming.
func (c Capabilities) CheckStream(req *Request) error {
	if !c.Streaming {
		m := ""
		if req != nil {
			m = req.Model
		}
		return &UnsupportedError{Feature: "streaming", Model: m}
	}
	return c.Check(req)
}

// ValidateTranscript checks that tool calls and results pair up one to one:
// every tool call has exactly one tool result later in the transcript, and
// every result follows its call. It returns a [*DanglingToolCallError] for
// the first problem found.
//
// Every provider and the engine call it before sending a transcript: a tool
// call without its result must never reach a provider.
func ValidateTranscript(items []item.Item) error {
	var c TranscriptCheck
	return c.Check(items)
}

// TranscriptCheck is [ValidateTranscript] for a transcript that only
// grows: each Check looks only at the items added since the previous one,
// so a run of n turns checks each item once instead of its whole
// transcript before every model call. The zero value is ready; a
// transcript shorter than the one checked before starts it over.
type TranscriptCheck struct {
	n          int            // items checked
	calls      map[string]int // call id → index of the call
	unresolved map[string]int // calls without a result yet → index
	bad        error          // the first problem of the checked prefix
}

// Check reports the first problem of items (the same transcript as the
// previous call, possibly longer), as [ValidateTranscript] does.
func (c *TranscriptCheck) Check(items []item.Item) error {
	if len(items) < c.n || c.calls == nil {
		*c = TranscriptCheck{calls: map[string]int{}, unresolved: map[string]int{}}
	}
	for i := c.n; i < len(items) && c.bad == nil; i++ {
		c.bad = c.add(i, items[i])
		c.n = i + 1
	}
	if c.bad != nil {
		return c.bad
	}
	if len(c.unresolved) > 0 {
		first, at := "", -1
		for id, idx := range c.unresolved {
			if at < 0 || idx < at {
				first, at = id, idx
			}
		}
		return &DanglingToolCallError{CallID: first, Problem: ProblemNoResult, Index: at}
	}
	return nil
}

// Seen reports whether a tool call with this id is in the checked items.
func (c *TranscriptCheck) Seen(id string) bool {
	_, ok := c.calls[id]
	return ok
}

func (c *TranscriptCheck) add(i int, it item.Item) error {
	switch it.Type {
	case item.TypeToolCall:
		if it.ToolCall == nil {
			return fmt.Errorf("llm: transcript item %d: %w", i, &item.InvalidError{Type: it.Type, Reason: "missing tool_call"})
		}
		id := it.ToolCall.ID
		if id == "" {
			return &DanglingToolCallError{Problem: ProblemEmptyCallID, Index: i}
		}
		if _, dup := c.calls[id]; dup {
			return &DanglingToolCallError{CallID: id, Problem: ProblemDuplicateCall, Index: i}
		}
		c.calls[id] = i
		c.unresolved[id] = i
	case item.TypeToolResult:
		if it.ToolResult == nil {
			return fmt.Errorf("llm: transcript item %d: %w", i, &item.InvalidError{Type: it.Type, Reason: "missing tool_result"})
		}
		id := it.ToolResult.CallID
		_, called := c.calls[id]
		_, open := c.unresolved[id]
		switch {
		case !called:
			return &DanglingToolCallError{CallID: id, Problem: ProblemNoCall, Index: i}
		case !open:
			return &DanglingToolCallError{CallID: id, Problem: ProblemDuplicateResult, Index: i}
		}
		delete(c.unresolved, id)
	}
	return nil
}
