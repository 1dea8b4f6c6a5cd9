package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// Sentinels matched with [errors.Is].
var (
	// ErrUnsupported matches an [*UnsupportedError].
	ErrUnsupported = errors.New("llm: unsupported by model")
	// ErrDanglingToolCall matches a [*DanglingToolCallError].
	ErrDanglingToolCall = errors.New("llm: tool call without matching result")
	// ErrStreamInterrupted matches a [*StreamInterruptedError].
	ErrStreamInterrupted = errors.New("llm: stream interrupted")
	// ErrMalformedToolCall matches a [*MalformedToolCallError].
	ErrMalformedToolCall = errors.New("llm: malformed tool call arguments")
)

// MalformedToolCallError reports a tool call whose arguments, once every
// streamed fragment was joined, are not a JSON object. The adapter rejects
// the response as a whole: none of its calls may be executed.
type MalformedToolCallError struct {
	// Provider names the adapter: "anthropic", "openai.chat" or
	// "openai.responses".
	Provider string
	// CallID and Name identify the call.
	CallID, Name string
	// Type is the provider's block type where it has several: Anthropic's
	// "tool_use", or a server-side block such as "server_tool_use" whose
	// input must go back whole. Empty for OpenAI.
	Type string
	// Arguments is the joined argument text as received.
	Arguments string
	// Response is everything else the model returned, as evidence.
	Response *Response
}

func (e *MalformedToolCallError) Error() string {
	call := "tool call"
	if e.Type != "" {
		call = e.Type
	}
	return redact.Credentials(fmt.Sprintf("%s: %s %q (%s): arguments are not a JSON object: %.200q",
		e.Provider, call, e.CallID, e.Name, e.Arguments))
}

// Is reports whether target is [ErrMalformedToolCall].
func (e *MalformedToolCallError) Is(target error) bool { return target == ErrMalformedToolCall }

// UnsupportedError reports a request that needs a feature the model lacks.
// Adapters return it before any network call.
type UnsupportedError struct {
	// Feature is "tools", "image_input", "structured_output" or
	// "streaming".
	Feature string
	// Model is the requested model.
	Model string
}

func (e *UnsupportedError) Error() string {
	if e.Model == "" {
		return fmt.Sprintf("llm: model does not support %s", e.Feature)
	}
	return fmt.Sprintf("llm: model %q does not support %s", e.Model, e.Feature)
}

// Is reports whether target is [ErrUnsupported].
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// The problems a [DanglingToolCallError] reports.
const (
	ProblemNoResult        = "no_result"         // a tool call has no later result
	ProblemNoCall          = "no_call"           // a result has no earlier call
	ProblemDuplicateResult = "duplicate_result"  // a call has more than one result
	ProblemDuplicateCall   = "duplicate_call_id" // two calls share an id
	ProblemEmptyCallID     = "empty_call_id"     // a call has no id to match
)

// DanglingToolCallError reports a transcript whose tool calls and results do
// not pair up one to one.
type DanglingToolCallError struct {
	// CallID is the call that has no partner.
	CallID string
	// Problem is one of the Problem constants.
	Problem string
	// Index is the position of the offending item in the transcript.
	Index int
}

func (e *DanglingToolCallError) Error() string {
	return fmt.Sprintf("llm: transcript item %d: tool call %q: %s", e.Index, e.CallID, e.Problem)
}

// Is reports whether target is [ErrDanglingToolCall].
func (e *DanglingToolCallError) Is(target error) bool { return target == ErrDanglingToolCall }

// ProviderError is an error reported by a provider, or a transport failure
// talking to it, after the transport's own retries.
//
// Retryable and Status are diagnostics only: the transport has already made
// every retry it was allowed to, and nothing above it (engine, runtime, CLI)
// retries a model call or a run because of them.
type ProviderError struct {
	// Provider is the adapter's name.
	Provider string
	// Status is the HTTP status, or 0 when no response arrived.
	Status int
	// Code and Type are the provider's error code and type, when given.
	Code, Type string
	// Message is the provider's message.
	Message string
	// RequestID is the provider's request id, for support tickets.
	RequestID string
	// Retryable says whether the transport considered the failure
	// retryable. Diagnostic only; see the type's documentation.
	Retryable bool
	// RetryAfter is the wait the server asked for, if any.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
	// Hint says what to check next, in the words of the Go API (an
	// authentication failure names the key's source: "check
	// OPENAI_API_KEY"). Empty means none.
	Hint string
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Provider == "" {
		b.WriteString("llm")
	}
	// The head is "provider:" followed by what is known; a colon is never
	// doubled when the status and type are missing.
	head := false
	word := func(s string) {
		if !head {
			b.WriteString(":")
			head = true
		}
		b.WriteString(" " + s)
	}
	if e.Status != 0 {
		word(fmt.Sprintf("status %d", e.Status))
	}
	if e.Type != "" {
		word(e.Type)
	}
	if e.Code != "" && e.Code != e.Type {
		word("(" + e.Code + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil {
		if s := e.Err.Error(); s != "" {
			b.WriteString(": " + s)
		}
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return redact.Credentials(b.String())
}

func (e *ProviderError) Unwrap() error { return e.Err }

// StreamInterruptedError ends a stream that broke after output had been
// delivered to the caller: the transport's event stream, and the model turn
// read from it. The stream is never replayed (the provider may have done
// the work, and a replay could differ); Partial holds what arrived, as
// evidence.
type StreamInterruptedError struct {
	// Provider names the adapter whose stream broke ("transport" when the
	// transport reports it before an adapter has seen it).
	Provider string
	// Partial is the output received before the break; it may be nil.
	Partial *Response
	// Delivered is how many stream events the caller received.
	Delivered int
	// LastEventID is the last SSE id seen, if any.
	LastEventID string
	// Err is the failure that broke the stream.
	Err error
}

func (e *StreamInterruptedError) Error() string {
	p := e.Provider
	if p == "" {
		p = "llm"
	}
	if e.Err == nil {
		return p + ": stream interrupted"
	}
	return redact.Credentials(p + ": stream interrupted: " + e.Err.Error())
}

func (e *StreamInterruptedError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrStreamInterrupted].
func (e *StreamInterruptedError) Is(target error) bool { return target == ErrStreamInterrupted }
