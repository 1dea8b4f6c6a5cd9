package wire

import (
	"context"
	"iter"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// Decoder turns one provider's SSE events into llm stream events.
type Decoder interface {
	// Handle processes one event, emitting llm events through emit. It
	// reports done when the event ends the stream successfully, or an
	// error that ends it (the response is rejected).
	Handle(ev transport.SSEEvent, emit func(llm.StreamEvent) bool) (done bool, err error)
	// Partial is the output received so far, for an interruption.
	Partial() *llm.Response
	// Result is the complete response after done, or at a clean end of
	// the body (eof true), where it fails when the stream was not complete.
	// It emits the EventItemDone events not yet emitted. A nil response
	// and nil error mean the caller stopped.
	Result(eof bool, emit func(llm.StreamEvent) bool) (*llm.Response, error)
}

// Streamer is what an adapter gives Stream.
type Streamer struct {
	// Provider names the provider in errors.
	Provider string
	// Config is the adapter's transport configuration; its OnAttempt, if
	// any, still sees every attempt.
	Config transport.Config
	// Classify turns a transport error into the provider's error.
	Classify func(error) error
	// Scrub removes secrets from text.
	Scrub func(string) string
}

// Stream runs one streaming call: retried attempts become EventAttempt
// events, a failure before the first event is the provider's error, and any
// failure after it is an *llm.StreamInterruptedError carrying the partial
// output. Nothing is re-requested once an event was received. Breaking out
// of the loop cancels the call and releases the connection.
func (s *Streamer) Stream(ctx context.Context, treq *transport.Request, dec Decoder) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		emit := func(ev llm.StreamEvent) bool {
			if stopped {
				return false
			}
			if !yield(ev, nil) {
				stopped = true
				cancel() // releases the connection or interrupts a backoff
				return false
			}
			return true
		}
		fail := func(err error) {
			if !stopped {
				stopped = true
				yield(llm.StreamEvent{}, err)
			}
		}
		tc := s.Config
		user := tc.OnAttempt
		tc.OnAttempt = func(a llm.Attempt) {
			if user != nil {
				user(a)
			}
			if a.Retry {
				a.Err, a.URL = s.Scrub(a.Err), s.Scrub(a.URL)
				emit(llm.StreamEvent{Type: llm.EventAttempt, Attempt: &a})
			}
		}
		tr, err := transport.New(&tc)
		if err != nil {
			fail(err)
			return
		}
		received := 0
		for ev, err := range tr.Stream(ctx, treq) {
			if stopped {
				return
			}
			if err != nil {
				if received == 0 {
					fail(s.Classify(err))
				} else {
					sie := &llm.StreamInterruptedError{Provider: s.Provider, Partial: dec.Partial(), Err: s.Classify(err)}
					if t, ok := err.(*llm.StreamInterruptedError); ok {
						sie.Delivered, sie.LastEventID, sie.Err = t.Delivered, t.LastEventID, s.Classify(t.Err)
					}
					fail(sie)
				}
				return
			}
			received++
			done, err := dec.Handle(ev, emit)
			if stopped {
				return
			}
			if err != nil {
				fail(err)
				return
			}
			if done {
				finish(dec, false, emit, fail)
				return
			}
		}
		if !stopped {
			finish(dec, true, emit, fail)
		}
	}
}

func finish(dec Decoder, eof bool, emit func(llm.StreamEvent) bool, fail func(error)) {
	resp, err := dec.Result(eof, emit)
	if err != nil {
		fail(err)
		return
	}
	if resp != nil {
		emit(llm.StreamEvent{Type: llm.EventDone, Response: resp})
	}
}
