package llm

import (
	"errors"
	"io"
	"iter"
	"time"

	"github.com/actoviq/actoviq-go/item"
)

// StreamEventType names the kind of a [StreamEvent].
type StreamEventType string

// The stream event types.
const (
	// EventTextDelta carries a piece of text in Delta for output Index.
	EventTextDelta StreamEventType = "text_delta"
	// EventReasoningDelta carries a piece of reasoning summary in Delta.
	EventReasoningDelta StreamEventType = "reasoning_delta"
	// EventRefusalDelta carries a piece of a refusal in Delta (the model
	// declined; the complete refusal arrives as an item of type refusal).
	EventRefusalDelta StreamEventType = "refusal_delta"
	// EventToolCallDelta carries a fragment of a tool call's JSON
	// arguments in Delta. Fragments split the JSON anywhere; the complete
	// call arrives in an EventItemDone.
	EventToolCallDelta StreamEventType = "tool_call_delta"
	// EventItemDone carries one complete output item in Item.
	EventItemDone StreamEventType = "item_done"
	// EventAttempt reports, in Attempt, a transport retry made before any
	// output was delivered. It carries no output.
	EventAttempt StreamEventType = "attempt"
	// EventDone is the last event of a successful stream; Response holds
	// the complete response.
	EventDone StreamEventType = "done"
)

// StreamEvent is one event of a model stream. Which fields are set depends
// on Type.
type StreamEvent struct {
	// Type says which of the fields below are set.
	Type StreamEventType
	// Delta is the text of a delta event.
	Delta string
	// Index is the position of the output item the event belongs to.
	Index int
	// Item is the completed item of an EventItemDone.
	Item *item.Item
	// Attempt describes a retry for an EventAttempt.
	Attempt *Attempt
	// Response is the complete response of an EventDone.
	Response *Response
}

// Attempt describes one finished HTTP attempt of a model call. The
// transport reports every attempt to its OnAttempt hook; a stream carries
// the failed ones that will be retried, in an EventAttempt.
type Attempt struct {
	// Number is the attempt, starting at 1.
	Number int
	// Method and URL identify the request; URL is scrubbed of secrets.
	Method, URL string
	// Status is the HTTP status, or the status an SSE error event was
	// classified as; 0 when the attempt failed without a response.
	Status int
	// Err is the scrubbed error text, empty when the attempt succeeded. It
	// never contains credentials.
	Err string
	// Retry reports whether another attempt follows.
	Retry bool
	// Wait is the wait chosen before the next attempt (0 when Retry is false).
	Wait time.Duration
}

// Collect drains a stream and returns its final response.
//
// If the stream yields an error, Collect returns it. When that error is a
// [*StreamInterruptedError], Collect returns its partial response alongside
// the error, filling it from the items completed so far if the provider
// attached none. A stream that ends without an [EventDone] is reported as a
// [*StreamInterruptedError] wrapping [io.ErrUnexpectedEOF].
func Collect(seq iter.Seq2[StreamEvent, error]) (*Response, error) {
	var done []item.Item
	for ev, err := range seq {
		if err != nil {
			var sie *StreamInterruptedError
			if !errors.As(err, &sie) {
				return nil, err
			}
			if sie.Partial != nil {
				return sie.Partial, err
			}
			cp := *sie
			cp.Partial = &Response{Items: done}
			if sie == err {
				return cp.Partial, &cp
			}
			// The interruption is wrapped: keep the caller's chain intact
			// and return the partial output next to it.
			return cp.Partial, err
		}
		switch ev.Type {
		case EventItemDone:
			if ev.Item != nil {
				done = append(done, *ev.Item)
			}
		case EventDone:
			if ev.Response == nil {
				return nil, errors.New("llm: done event without a response")
			}
			return ev.Response, nil
		}
	}
	partial := &Response{Items: done}
	return partial, &StreamInterruptedError{Partial: partial, Err: io.ErrUnexpectedEOF}
}
