package anthropic

import (
	"context"
	"iter"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// decoder turns one provider's SSE events into llm stream events.
type decoder interface {
	// handle processes one event, emitting llm events through emit. It
	// reports done when the event ends the stream successfully, or an
	// error that ends it (the response is rejected).
	handle(ev transport.Event, emit func(llm.StreamEvent) bool) (done bool, err error)
	// partial is the output received so far, for an interruption.
	partial() *llm.Response
	// result is the complete response after done, or at a clean end of
	// the body (eof true), where it fails when the stream was not complete.
	// It emits the EventItemDone events not yet emitted. A nil response
	// and nil error mean the caller stopped.
	result(eof bool, emit func(llm.StreamEvent) bool) (*llm.Response, error)
}

// stream runs one streaming call: attempts become EventAttempt events, a
// failure before the first event is a *llm.ProviderError, and any failure
// after it is an *llm.StreamInterruptedError carrying the partial output.
// Nothing is ever re-requested once an event was received.
func (p *Messages) stream(ctx context.Context, treq *transport.Request, dec decoder) iter.Seq2[llm.StreamEvent, error] {
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
		tr, err := p.streamClient(func(a transport.Attempt) {
			emit(llm.StreamEvent{Type: llm.EventAttempt, Attempt: &llm.Attempt{Number: a.N, Status: a.Status, Wait: a.Wait, Err: p.scrub(a.Err)}})
		})
		if err != nil {
			yield(llm.StreamEvent{}, err)
			return
		}
		fail := func(err error) {
			if !stopped {
				stopped = true
				yield(llm.StreamEvent{}, err)
			}
		}
		received := 0
		for ev, err := range tr.Stream(ctx, treq) {
			if stopped {
				return
			}
			if err != nil {
				if received == 0 {
					fail(p.providerError(err))
					return
				}
				fail(&llm.StreamInterruptedError{Provider: p.name, Partial: dec.partial(), Err: p.providerError(err)})
				return
			}
			received++
			done, err := dec.handle(ev, emit)
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

func finish(dec decoder, eof bool, emit func(llm.StreamEvent) bool, fail func(error)) {
	resp, err := dec.result(eof, emit)
	if err != nil {
		fail(err)
		return
	}
	if resp == nil {
		return
	}
	emit(llm.StreamEvent{Type: llm.EventDone, Response: resp})
}

// streamClient returns a transport client for one Stream call whose
// retried attempts are also passed to onRetry.
func (p *Messages) streamClient(onRetry func(transport.Attempt)) (*transport.Client, error) {
	tc := p.tcfg
	user := p.hookOut
	tc.OnAttempt = func(a transport.Attempt) {
		if user != nil {
			user(a)
		}
		if a.Retry {
			onRetry(a)
		}
	}
	return transport.New(&tc)
}
