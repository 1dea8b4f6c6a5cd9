package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// Generate and Stream of the same answer give the same text, usage and
// stop reason, and the text deltas join to the text.
func testGenerateMatchesStream(t *testing.T, h *harness) {
	p, srv := h.setup(t, 2, jsonBody(http.StatusOK, h.f.TextJSON), sse(h.f.TextStream))
	gen, err := generate(t, p, h.textRequest())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	o := stream(t, p, h.textRequest())
	str := checkDone(t, o)
	if gen.Text() == "" || gen.Text() != str.Text() {
		t.Errorf("text: Generate %q, Stream %q", gen.Text(), str.Text())
	}
	if o.text() != str.Text() {
		t.Errorf("the text deltas join to %q, the response says %q", o.text(), str.Text())
	}
	if gen.Usage != str.Usage {
		t.Errorf("usage: Generate %+v, Stream %+v", gen.Usage, str.Usage)
	}
	if gen.Usage.Requests != 1 || gen.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v: want Requests 1 and the fixture's output tokens", gen.Usage)
	}
	if gen.StopReason != llm.StopEndTurn || str.StopReason != llm.StopEndTurn {
		t.Errorf("stop reason: Generate %q, Stream %q, want %q", gen.StopReason, str.StopReason, llm.StopEndTurn)
	}
	requests(t, srv, 2, "one per call")
}

// A successful stream ends with exactly one EventDone carrying the
// response, and every item of it was announced by an EventItemDone.
func testStreamEndsWithOneDone(t *testing.T, h *harness) {
	for _, name := range []string{"text", "tool", "parallel"} {
		t.Run(name, func(t *testing.T) {
			fx := map[string][]byte{"text": h.f.TextStream, "tool": h.f.ToolStream, "parallel": h.f.ParallelStream}[name]
			p, srv := h.setup(t, 2, sse(fx))
			resp := checkDone(t, stream(t, p, h.toolRequest()))
			if len(resp.Items) == 0 {
				t.Errorf("the response has no items")
			}
			requests(t, srv, 1, "no retry")
		})
	}
}

// Nothing is sent before the loop starts, and every range makes a new call.
func testStreamIsLazyAndRepeatable(t *testing.T, h *harness) {
	p, srv := h.setup(t, 2, sse(h.f.TextStream))
	seq := p.Stream(t.Context(), h.textRequest())
	requests(t, srv, 0, "nothing is sent until the loop starts")
	a := checkDone(t, drain(t, seq))
	b := checkDone(t, drain(t, seq))
	if a.Text() != b.Text() {
		t.Errorf("two ranges over one stream: %q and %q", a.Text(), b.Text())
	}
	requests(t, srv, 2, "each range is a new call")
}

// Tool calls come with non-empty, distinct ids, names and JSON-object
// arguments, and StopToolUse; argument deltas belong to the call at their
// Index and join to its arguments.
func testToolCalls(t *testing.T, h *harness) {
	cases := []struct {
		name string
		fx   []byte
		min  int
	}{
		{"one", h.f.ToolStream, 1},
		{"parallel", h.f.ParallelStream, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := h.setup(t, 2, sse(tc.fx))
			o := stream(t, p, h.toolRequest())
			resp := checkDone(t, o)
			checkCalls(t, resp, tc.min)
			joined := map[int]*strings.Builder{}
			for _, ev := range o.evs {
				if ev.Type != llm.EventToolCallDelta {
					continue
				}
				if joined[ev.Index] == nil {
					joined[ev.Index] = &strings.Builder{}
				}
				joined[ev.Index].WriteString(ev.Delta)
			}
			for idx, b := range joined {
				if idx < 0 || idx >= len(resp.Items) || resp.Items[idx].Type != item.TypeToolCall {
					t.Errorf("argument deltas at Index %d, which is not a tool call of the response (%s)", idx, mustJSON(t, resp.Items))
					continue
				}
				if got, want := compactJSON(b.String()), compactJSON(string(resp.Items[idx].ToolCall.Arguments)); got != want {
					t.Errorf("argument deltas at Index %d join to %s, the call has %s", idx, got, want)
				}
			}
		})
	}
	if h.f.ToolJSON != nil {
		t.Run("generate", func(t *testing.T) {
			p, _ := h.setup(t, 2, jsonBody(http.StatusOK, h.f.ToolJSON))
			resp, err := generate(t, p, h.toolRequest())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			checkCalls(t, resp, 1)
		})
	}
}

func checkCalls(t *testing.T, resp *llm.Response, min int) {
	t.Helper()
	calls := resp.ToolCalls()
	if len(calls) < min {
		t.Fatalf("%d tool calls, want at least %d: %s", len(calls), min, mustJSON(t, resp.Items))
	}
	seen := map[string]bool{}
	for _, c := range calls {
		var obj map[string]any
		if c.ID == "" || c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
			t.Errorf("tool call %s: want an id, a name and a JSON object of arguments", mustJSON(t, c))
		}
		if seen[c.ID] {
			t.Errorf("tool call id %q twice", c.ID)
		}
		seen[c.ID] = true
	}
	if resp.StopReason != llm.StopToolUse {
		t.Errorf("stop reason %q, want %q", resp.StopReason, llm.StopToolUse)
	}
}

// A transcript whose tool calls and results do not pair up never reaches
// the server.
func testDanglingToolCallNotSent(t *testing.T, h *harness) {
	p, srv := h.setup(t, 2, sse(h.f.TextStream))
	transcripts := map[string][]item.Item{
		"call without result": {item.UserText("Pay 42"), item.NewToolCall("call_1", "pay", json.RawMessage(`{"amount":42}`))},
		"result without call": {item.UserText("Pay 42"), item.NewToolResult("call_x", "paid", false)},
	}
	for name, items := range transcripts {
		req := &llm.Request{Model: h.b.Model, Items: items, Tools: tools}
		if _, err := generate(t, p, req); !errors.Is(err, llm.ErrDanglingToolCall) {
			t.Errorf("%s: Generate err = %v, want llm.ErrDanglingToolCall", name, err)
		}
		o := stream(t, p, req)
		if !errors.Is(o.err, llm.ErrDanglingToolCall) || len(o.evs) != 0 {
			t.Errorf("%s: Stream gave %d events and err %v, want only llm.ErrDanglingToolCall", name, len(o.evs), o.err)
		}
	}
	requests(t, srv, 0, "a bad transcript is refused before any network call")
}

// A request needing tools, to a model declared without them, never reaches
// the server.
func testUnsupportedNotSent(t *testing.T, h *harness) {
	p, srv := h.setup(t, 2, sse(h.f.TextStream))
	if caps := p.Capabilities(h.b.NoToolsModel); caps.Tools || !caps.Streaming {
		t.Fatalf("Backend: %s has capabilities %+v, want streaming without tools", h.b.NoToolsModel, caps)
	}
	requestsFor := map[string]*llm.Request{
		"tool definitions": {Model: h.b.NoToolsModel, Items: []item.Item{item.UserText("Pay 42")}, Tools: tools},
		"tool items": {Model: h.b.NoToolsModel, Items: []item.Item{item.UserText("Pay 42"),
			item.NewToolCall("call_1", "pay", json.RawMessage(`{"amount":42}`)), item.NewToolResult("call_1", "paid", false)}},
	}
	for name, req := range requestsFor {
		_, err := generate(t, p, req)
		var ue *llm.UnsupportedError
		if !errors.Is(err, llm.ErrUnsupported) || !errors.As(err, &ue) || ue.Feature != "tools" {
			t.Errorf("%s: Generate err = %v, want llm.ErrUnsupported for tools", name, err)
		}
		o := stream(t, p, req)
		if !errors.Is(o.err, llm.ErrUnsupported) || len(o.evs) != 0 {
			t.Errorf("%s: Stream gave %d events and err %v, want only llm.ErrUnsupported", name, len(o.evs), o.err)
		}
	}
	requests(t, srv, 0, "an unsupported request is refused before any network call")
}

// A 400 is final: a *llm.ProviderError with the status, the provider's
// message and request id, after exactly one request.
func testError400(t *testing.T, h *harness) {
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "generate", true: "stream"}[streaming]
		t.Run(name, func(t *testing.T) {
			p, srv := h.setup(t, 2, jsonBody(http.StatusBadRequest, h.f.Error400))
			var err error
			if streaming {
				o := stream(t, p, h.textRequest())
				if len(o.evs) != 0 {
					t.Errorf("a final status yielded events: %s", mustJSON(t, o.evs))
				}
				err = o.err
			} else {
				_, err = generate(t, p, h.textRequest())
			}
			pe := checkProviderError(t, p, err, http.StatusBadRequest, false)
			if pe.Message == "" || pe.RequestID != requestID {
				t.Errorf("ProviderError = %+v, want the body's message and request id %q", pe, requestID)
			}
			requests(t, srv, 1, "a 400 is not retried")
		})
	}
}

// A 5xx is retried up to MaxRetries; in a stream each retry is an
// EventAttempt before any output; when retries run out the error is a
// retryable *llm.ProviderError.
func testRetry5xx(t *testing.T, h *harness) {
	st := h.f.ServerErrorStatus
	fail := jsonBody(st, h.f.ServerError)
	t.Run("stream recovers", func(t *testing.T) {
		p, srv := h.setup(t, 2, fail, fail, sse(h.f.TextStream))
		o := stream(t, p, h.textRequest())
		checkDone(t, o)
		checkAttempts(t, o.attempts(t), st, st)
		requests(t, srv, 3, "two failures, then success")
	})
	t.Run("generate recovers", func(t *testing.T) {
		p, srv := h.setup(t, 2, fail, fail, jsonBody(http.StatusOK, h.f.TextJSON))
		if _, err := generate(t, p, h.textRequest()); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		requests(t, srv, 3, "two failures, then success")
	})
	t.Run("retries run out", func(t *testing.T) {
		p, srv := h.setup(t, 1, fail)
		_, err := generate(t, p, h.textRequest())
		checkProviderError(t, p, err, st, true)
		requests(t, srv, 2, "MaxRetries 1")
		o := stream(t, p, h.textRequest())
		checkProviderError(t, p, o.err, st, true)
		checkAttempts(t, o.attempts(t), st)
		requests(t, srv, 4, "MaxRetries 1, twice")
	})
	t.Run("retries off", func(t *testing.T) {
		p, srv := h.setup(t, 0, fail)
		o := stream(t, p, h.textRequest())
		checkProviderError(t, p, o.err, st, true)
		if len(o.evs) != 0 {
			t.Errorf("events without retries: %s", mustJSON(t, o.evs))
		}
		requests(t, srv, 1, "MaxRetries 0")
	})
}

// checkAttempts checks EventAttempt numbers (1, 2, ...) and statuses.
func checkAttempts(t *testing.T, got []*llm.Attempt, statuses ...int) {
	t.Helper()
	if len(got) != len(statuses) {
		t.Fatalf("%d EventAttempt events, want %d: %s", len(got), len(statuses), mustJSON(t, got))
	}
	for i, a := range got {
		if a.Number != i+1 || a.Status != statuses[i] {
			t.Errorf("attempt %d = %+v, want Number %d, Status %d", i, a, i+1, statuses[i])
		}
	}
}

// A stream cut after its first event is never replayed: it fails with a
// *llm.StreamInterruptedError carrying the partial output.
func testCutAfterFirstEvent(t *testing.T, h *harness) {
	fx := h.f.TextStream
	n := len(sseBlocks(fx))
	t.Run("after the first event", func(t *testing.T) {
		p, srv := h.setup(t, 2, cut(fx, prefixLen(fx, 1)), sse(fx))
		o := stream(t, p, h.textRequest())
		interrupted(t, o)
		requests(t, srv, 1, "a stream is not replayed once an event arrived")
	})
	t.Run("clean end after the first event", func(t *testing.T) {
		// The body ends without error but the answer is incomplete.
		p, srv := h.setup(t, 2, sse(fx[:prefixLen(fx, 1)]), sse(fx))
		o := stream(t, p, h.textRequest())
		interrupted(t, o)
		if !errors.Is(o.err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want it to match io.ErrUnexpectedEOF", o.err)
		}
		requests(t, srv, 1, "a stream is not replayed once an event arrived")
	})
	t.Run("before the last event", func(t *testing.T) {
		p, srv := h.setup(t, 2, cut(fx, prefixLen(fx, n-1)), sse(fx))
		o := stream(t, p, h.textRequest())
		sie := interrupted(t, o)
		if o.text() == "" || sie.Partial.Text() != o.text() {
			t.Errorf("partial text %q, the deltas delivered %q: want the same, non-empty", sie.Partial.Text(), o.text())
		}
		requests(t, srv, 1, "a stream is not replayed once an event arrived")
	})
}

func interrupted(t *testing.T, o outcome) *llm.StreamInterruptedError {
	t.Helper()
	var sie *llm.StreamInterruptedError
	if !errors.Is(o.err, llm.ErrStreamInterrupted) || !errors.As(o.err, &sie) {
		t.Fatalf("err = %T %v, want *llm.StreamInterruptedError", o.err, o.err)
	}
	if sie.Partial == nil {
		t.Fatalf("StreamInterruptedError without a partial response: %v", o.err)
	}
	if o.response() != nil {
		t.Errorf("an interrupted stream yielded EventDone")
	}
	return sie
}

// A stream cut, or ending empty, before its first event is retried.
func testCutBeforeFirstEvent(t *testing.T, h *harness) {
	fx := h.f.TextStream
	first := sseBlocks(fx)[0]
	for name, broken := range map[string]handler{
		"cut":   cut(fx, len(first)/2),
		"empty": sse(nil),
	} {
		t.Run(name, func(t *testing.T) {
			p, srv := h.setup(t, 2, broken, sse(fx))
			o := stream(t, p, h.textRequest())
			resp := checkDone(t, o)
			checkAttempts(t, o.attempts(t), 0)
			if resp.Text() == "" || o.text() != resp.Text() {
				t.Errorf("text after the retry: deltas %q, response %q", o.text(), resp.Text())
			}
			requests(t, srv, 2, "a stream broken before its first event is retried")
		})
	}
}

// A call whose context is already canceled fails with the context's error
// and sends nothing.
func testCanceledContext(t *testing.T, h *harness) {
	p, srv := h.setup(t, 2, sse(h.f.TextStream))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := p.Generate(ctx, h.textRequest())
	noSecret(t, nil, nil, err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate err = %v, want it to match context.Canceled", err)
	}
	o := drain(t, p.Stream(ctx, h.textRequest()))
	if !errors.Is(o.err, context.Canceled) || len(o.evs) != 0 {
		t.Errorf("Stream gave %d events and err %v, want only an error matching context.Canceled", len(o.evs), o.err)
	}
	requests(t, srv, 0, "the context was canceled before the call")
}

// An error event inside a 200 stream is classified like a status error:
// retried as the first event, final when retries are off, an interruption
// after the first event.
func testErrorEvent(t *testing.T, h *harness) {
	if len(h.f.ErrorEventStream) == 0 {
		return // the protocol has none
	}
	ee, st := sse(h.f.ErrorEventStream), h.f.ErrorEventStatus
	t.Run("first event is retried", func(t *testing.T) {
		p, srv := h.setup(t, 2, ee, ee, sse(h.f.TextStream))
		o := stream(t, p, h.textRequest())
		checkDone(t, o)
		checkAttempts(t, o.attempts(t), st, st)
		requests(t, srv, 3, "two error events, then success")
	})
	t.Run("retries off", func(t *testing.T) {
		p, srv := h.setup(t, 0, ee)
		o := stream(t, p, h.textRequest())
		checkProviderError(t, p, o.err, st, true)
		requests(t, srv, 1, "MaxRetries 0")
	})
	t.Run("after the first event", func(t *testing.T) {
		mid := append(append([]byte(nil), sseBlocks(h.f.TextStream)[0]...), h.f.ErrorEventStream...)
		p, srv := h.setup(t, 2, sse(mid))
		o := stream(t, p, h.textRequest())
		interrupted(t, o)
		var pe *llm.ProviderError
		if !errors.As(o.err, &pe) || pe.Status != st {
			t.Errorf("err = %v, want it to wrap a *llm.ProviderError with Status %d", o.err, st)
		}
		requests(t, srv, 1, "a stream is not replayed once an event arrived")
	})
}

// The API key reaches the server and nowhere else: not in errors built from
// bodies that echo it, nor in EventAttempt. (Every other subtest checks its
// events and errors for the key too.)
func testKeyNeverLeaks(t *testing.T, h *harness) {
	echo := h.f.ErrorWithMessage("Incorrect API key provided: " + testKey + ".")
	p, srv := h.setup(t, 1, jsonBody(http.StatusServiceUnavailable, echo), jsonBody(http.StatusBadRequest, echo))
	o := stream(t, p, h.textRequest())
	checkProviderError(t, p, o.err, http.StatusBadRequest, false)
	checkAttempts(t, o.attempts(t), http.StatusServiceUnavailable)
	_, err := generate(t, p, h.textRequest())
	checkProviderError(t, p, err, http.StatusBadRequest, false)
	if !srv.sawHeaderValue(testKey) {
		t.Errorf("the API key never reached the server, so this check proves nothing")
	}

	plain := []byte("401 Unauthorized: key " + testKey + " is not valid")
	p2, _ := h.setup(t, 0, status(http.StatusUnauthorized, "text/plain", plain))
	_, err = generate(t, p2, h.textRequest())
	checkProviderError(t, p2, err, http.StatusUnauthorized, false)
	o = stream(t, p2, h.textRequest())
	checkProviderError(t, p2, o.err, http.StatusUnauthorized, false)
}

// Breaking out of the loop returns at once and releases the connection.
// (Leaked goroutines are the adapter package's goleak TestMain's to catch.)
func testBreakReleasesConnection(t *testing.T, h *harness) {
	fx := h.f.TextStream
	released := make(chan struct{})
	// Everything but the last event, then the server holds the stream open.
	p, srv := h.setup(t, 2, hold(fx[:prefixLen(fx, len(sseBlocks(fx))-1)], released))
	var got []llm.StreamEvent
	var failed error
	for ev, err := range p.Stream(t.Context(), h.textRequest()) {
		if err != nil {
			failed = err
			break
		}
		got = append(got, ev)
		break
	}
	if failed != nil || len(got) != 1 {
		t.Fatalf("want one event before the held end, got %d events and err %v", len(got), failed)
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		srv.CloseClientConnections() // so that the server can close
		t.Fatal("the connection was still open 10s after the caller broke out of the loop")
	}
}

// A block the provider runs itself (a server tool) keeps the input its
// fragments carried, in both modes; it gets no client argument deltas, is
// not a tool call for the client, and goes back in the next request.
func testServerTool(t *testing.T, h *harness) {
	if len(h.f.ServerToolStream) == 0 {
		return // the protocol has none
	}
	in := h.f.ServerToolInput
	p, srv := h.setup(t, 0, sse(h.f.ServerToolStream), jsonBody(http.StatusOK, h.f.ServerToolJSON), sse(h.f.TextStream))
	o := stream(t, p, h.textRequest())
	str := checkDone(t, o)
	gen, err := generate(t, p, h.textRequest())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got, want := mustJSON(t, str.Items), mustJSON(t, gen.Items); got != want {
		t.Errorf("Stream and Generate disagree on the items\nstream:   %s\ngenerate: %s", got, want)
	}
	if !strings.Contains(mustJSON(t, str.Items), in) {
		t.Errorf("the streamed items lost the server tool's input %s: %s", in, mustJSON(t, str.Items))
	}
	if n := len(str.ToolCalls()); n != 0 {
		t.Errorf("a server tool became %d client tool calls: %s", n, mustJSON(t, str.ToolCalls()))
	}
	if n := o.count(llm.EventToolCallDelta); n != 0 {
		t.Errorf("%d client tool-call argument deltas for a block the provider runs itself", n)
	}
	next := h.textRequest()
	next.Items = append(append(next.Items, str.Items...), item.UserText("And tomorrow?"))
	if o := stream(t, p, next); o.err != nil {
		t.Fatalf("next turn: %v", o.err)
	}
	if body := string(srv.body(3)); !strings.Contains(compactJSON(body), in) {
		t.Errorf("the next request does not send the server tool's input %s back:\n%s", in, body)
	}
}
