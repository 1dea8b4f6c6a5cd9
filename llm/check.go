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
	type state struct {
		index    int
		resolved bool
	}
	calls := map[string]*state{}
	var order []string
	for i, it := range items {
		switch it.Type {
		case item.TypeToolCall:
			if it.ToolCall == nil {
				return fmt.Errorf("llm: transcript item %d: %w", i, &item.InvalidError{Type: it.Type, Reason: "missing tool_call"})
			}
			id := it.ToolCall.ID
			if id == "" {
				return &DanglingToolCallError{Problem: ProblemEmptyCallID, Index: i}
			}
			if _, dup := calls[id]; dup {
				return &DanglingToolCallError{CallID: id, Problem: ProblemDuplicateCall, Index: i}
			}
			calls[id] = &state{index: i}
			order = append(order, id)
		case item.TypeToolResult:
			if it.ToolResult == nil {
				return fmt.Errorf("llm: transcript item %d: %w", i, &item.InvalidError{Type: it.Type, Reason: "missing tool_result"})
			}
			id := it.ToolResult.CallID
			st, ok := calls[id]
			switch {
			case !ok:
				return &DanglingToolCallError{CallID: id, Problem: ProblemNoCall, Index: i}
			case st.resolved:
				return &DanglingToolCallError{CallID: id, Problem: ProblemDuplicateResult, Index: i}
			}
			st.resolved = true
		}
	}
	for _, id := range order {
		if st := calls[id]; !st.resolved {
			return &DanglingToolCallError{CallID: id, Problem: ProblemNoResult, Index: st.index}
		}
	}
	return nil
}
