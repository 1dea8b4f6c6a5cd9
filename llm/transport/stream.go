package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/actoviq/actoviq-go/llm"
)

// Stream sends req and yields its Server-Sent Events.
//
// The request is retried under the same rules as Do until the first event
// has been yielded, and never after: a 2xx response whose body breaks or
// ends before its first event, or whose first event is an error event
// (see Request.ErrorEvent) classed as retryable, is requested again.
// Once an event has been delivered:
//   - a read error ends the sequence with a *llm.StreamInterruptedError
//     (errors.Is(err, llm.ErrStreamInterrupted)); the stream is not replayed;
//   - an error event ends it with a *StatusError whose Event is set;
//   - a clean end of the body ends it with no error.
//
// An error is always the last element yielded, with a zero SSEEvent. Failures
// before the first event are *StatusError or *TransportError as for Do.
//
// The iterator owns the connection: it closes the response body when the
// stream ends, fails, or the caller breaks out of the range loop. Every
// range over the returned sequence sends a new request.
func (c *Client) Stream(ctx context.Context, req *Request) iter.Seq2[SSEEvent, error] {
	return func(yield func(SSEEvent, error) bool) {
		var (
			body     io.Closer
			dec      *SSEDecoder
			first    SSEEvent
			attempts int
		)
		scrub := newScrubber(c.cfg.redact, req.Header)
		err := c.run(ctx, req, func(n int, resp *http.Response) *failure {
			attempts = n
			d := NewSSEDecoder(resp.Body, c.cfg.maxEvent)
			ev, err := d.Next()
			if err != nil {
				resp.Body.Close()
				switch {
				case err == io.EOF:
					return &failure{err: ErrEmptyStream, retryable: true}
				case errors.Is(err, ErrEventTooLarge), ctx.Err() != nil:
					return &failure{err: err}
				}
				return &failure{err: err, retryable: true}
			}
			if req.ErrorEvent != nil {
				if status, isErr := req.ErrorEvent(ev); isErr {
					resp.Body.Close()
					ev.Data = scrub.bytes(ev.Data)
					return &failure{status: status, event: &ev, body: ev.Data,
						retryable: req.eventRetryable(ev, status)}
				}
			}
			body, dec, first = resp.Body, d, ev
			return nil
		})
		if err != nil {
			yield(SSEEvent{}, err)
			return
		}
		defer body.Close()
		if !yield(first, nil) {
			return
		}
		delivered := 1
		for {
			ev, err := dec.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
				}
				yield(SSEEvent{}, &llm.StreamInterruptedError{Provider: "transport", Delivered: delivered, LastEventID: dec.lastID,
					Err: &scrubbedError{msg: scrub.str(fmt.Sprintf("after %d events: %v", delivered, err)), err: err}})
				return
			}
			if req.ErrorEvent != nil {
				if status, isErr := req.ErrorEvent(ev); isErr {
					data := scrub.bytes(ev.Data)
					evErr := ev // a copy, so that ev itself does not escape
					evErr.Data = data
					yield(SSEEvent{}, &StatusError{Status: status, Body: data, Event: &evErr, Attempts: attempts,
						Retryable: req.eventRetryable(ev, status),
						msg: scrub.str(fmt.Sprintf("transport: error event %q after %d events, classified as status %d: %s",
							ev.Type, delivered, status, excerpt(data)))})
					return
				}
			}
			if !yield(ev, nil) {
				return
			}
			delivered++
		}
	}
}

// eventRetryable applies the status rule and ErrorEventFinal to an error
// event.
func (r *Request) eventRetryable(ev SSEEvent, status int) bool {
	if r.ErrorEventFinal != nil && r.ErrorEventFinal(ev) {
		return false
	}
	return shouldRetryStatus(status, nil)
}
