package tool

import (
	"context"
	"encoding/json"
)

// Result is what a tool call produced, as the model will see it.
type Result struct {
	// Content is the text shown to the model.
	Content string `json:"content"`
	// Data is the structured output, validated against the output schema.
	// Bytes of it that are not UTF-8 are recorded as U+FFFD, as encoding
	// Content records its own.
	Data json.RawMessage `json:"data,omitempty"`
	// IsError marks a failure reported to the model (bad input, "not
	// found"). It is a result, not a runtime error: the call completed and
	// its outcome is known.
	IsError bool `json:"is_error,omitempty"`
}

// Tool is a capability the model can call.
type Tool interface {
	// Spec describes the tool. The runner reads it once, when it is built.
	Spec() Spec

	// Call runs the tool once with arguments that already passed the
	// input schema. ctx carries the deadline, [IdempotencyKey] and
	// [Attempt]; a tool should stop when ctx is done.
	//
	// A failure the model should see is returned as a Result with IsError,
	// or as an error: both are committed as an error result the model
	// sees, and the call is not run again. A tool that cannot tell whether
	// its effect happened (a timeout after sending a request, a dropped
	// connection) must return an error wrapping [ErrOutcomeUnknown], so
	// that the call is reconciled rather than reported as failed.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}
