package llm

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/actoviq/actoviq-go/item"
)

// Provider is a model provider adapter.
//
// Implementations must call [Capabilities.Check] and [ValidateTranscript] on
// every request before any network call, and must not retry on their own
// outside the shared transport.
type Provider interface {
	// Name identifies the provider in errors and events ("openai", ...).
	Name() string

	// Capabilities reports what the given model supports. Unknown models
	// get the provider's best guess; the provider's own error is the final
	// word.
	Capabilities(model string) Capabilities

	// Generate makes one model call and returns the complete response.
	Generate(ctx context.Context, req *Request) (*Response, error)

	// Stream makes one model call and yields its events as they arrive.
	//
	// The iterator owns the connection: nothing is sent until the loop
	// starts, and the connection is closed when the iterator returns,
	// whether the stream ended, failed, or the caller broke out of the
	// loop (which releases the connection at once). A successful stream
	// ends with an [EventDone] event carrying the complete [Response]. A
	// failure is yielded once as a non-nil error, after which the iterator
	// yields nothing more. A stream that broke after events were
	// delivered fails with a [*StreamInterruptedError]; it is never
	// replayed. Each call of the returned iterator makes a new model call.
	Stream(ctx context.Context, req *Request) iter.Seq2[StreamEvent, error]
}

// Request is one model call.
type Request struct {
	// Model is the provider's model name.
	Model string
	// System is the system prompt; empty means none.
	System string
	// Items is the transcript so far. It must pass [ValidateTranscript].
	Items []item.Item
	// Tools are the tools the model may call; nil means none.
	Tools []ToolDef
	// OutputSchema, when set, asks for structured output matching this
	// JSON Schema.
	OutputSchema json.RawMessage
	// MaxOutputTokens caps the response; 0 means the adapter's default.
	MaxOutputTokens int
	// Temperature is the sampling temperature; nil means the provider's
	// default.
	Temperature *float64
	// IdempotencyKey is a stable key for this model call, identical on
	// every transport retry. Adapters may send it as an Idempotency-Key
	// header; empty means none is sent.
	IdempotencyKey string
	// Metadata is passed to providers that accept request metadata; it is
	// not part of the prompt.
	Metadata map[string]string
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	// Name is the tool's name as the model must call it.
	Name string
	// Description tells the model what the tool does.
	Description string
	// InputSchema is the JSON Schema of the tool's arguments object.
	InputSchema json.RawMessage
}

// StopReason says why the model stopped.
type StopReason string

// The stop reasons. Their string values are persisted.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
	StopOther     StopReason = "other"
)

// Response is the complete output of one model call.
type Response struct {
	// ID is the provider's response id, when it gives one.
	ID string
	// Model is the model that answered, as the provider reports it.
	Model string
	// Items is the assistant output: text, tool calls, reasoning,
	// refusals and structured output, in the order the model produced them.
	Items []item.Item
	// Usage counts this call's tokens.
	Usage item.Usage
	// StopReason says why the model stopped.
	StopReason StopReason
}

// ToolCalls returns the tool calls in the response, in order.
func (r *Response) ToolCalls() []item.ToolCall {
	if r == nil {
		return nil
	}
	var calls []item.ToolCall
	for _, it := range r.Items {
		if it.Type == item.TypeToolCall && it.ToolCall != nil {
			calls = append(calls, *it.ToolCall)
		}
	}
	return calls
}

// Text returns the concatenated text items of the response.
func (r *Response) Text() string {
	if r == nil {
		return ""
	}
	var s string
	for _, it := range r.Items {
		if it.Type == item.TypeText {
			s += it.Text
		}
	}
	return s
}
