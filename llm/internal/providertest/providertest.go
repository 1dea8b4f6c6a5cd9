package providertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// testKey is the API key every provider under test is given. It does not
// look like any provider's key, so that only the adapter's and the
// transport's own redaction can hide it, not redact.Credentials' patterns.
const testKey = "conformance-KEY-7c1f0e9d2b"

var tools = []llm.ToolDef{
	{Name: "pay", Description: "Pays an amount.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)},
	{Name: "get_weather", Description: "Current weather.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
}

// harness is what every subtest gets: the backend and its fixtures.
type harness struct {
	b *Backend
	f *Fixtures
}

// Run runs the conformance suite against b. Subtests run in parallel, each
// with its own fake server and HTTP client.
func Run(t *testing.T, b Backend) {
	b.validate(t)
	h := &harness{b: &b, f: &b.Fixtures}
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"GenerateMatchesStream", testGenerateMatchesStream},
		{"StreamEndsWithOneDone", testStreamEndsWithOneDone},
		{"StreamIsLazyAndRepeatable", testStreamIsLazyAndRepeatable},
		{"ToolCalls", testToolCalls},
		{"DanglingToolCallNotSent", testDanglingToolCallNotSent},
		{"UnsupportedNotSent", testUnsupportedNotSent},
		{"Error400", testError400},
		{"Retry5xx", testRetry5xx},
		{"CutAfterFirstEvent", testCutAfterFirstEvent},
		{"CutBeforeFirstEvent", testCutBeforeFirstEvent},
		{"ErrorEvent", testErrorEvent},
		{"ServerTool", testServerTool},
		{"CanceledContext", testCanceledContext},
		{"KeyNeverLeaks", testKeyNeverLeaks},
		{"BreakReleasesConnection", testBreakReleasesConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, h)
		})
	}
}

// setup starts a fake server answering with handlers and builds the
// provider against it.
func (h *harness) setup(t *testing.T, maxRetries int, handlers ...handler) (llm.Provider, *server) {
	t.Helper()
	srv := newServer(t, h.b.RequestIDHeader, handlers...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections) // runs before the server closes
	p := h.b.New(t, Env{BaseURL: srv.URL, APIKey: testKey, HTTPClient: &http.Client{Transport: tr}, MaxRetries: maxRetries})
	if p == nil {
		t.Fatalf("%s: Backend.New returned nil", h.b.Name)
	}
	return p, srv
}

func (h *harness) textRequest() *llm.Request {
	return &llm.Request{Model: h.b.Model, System: "Be brief.", Items: []item.Item{item.UserText("Say hello")},
		IdempotencyKey: "run1:turn-1"}
}

func (h *harness) toolRequest() *llm.Request {
	return &llm.Request{Model: h.b.Model, Items: []item.Item{item.UserText("Pay 42")}, Tools: tools}
}

// outcome is everything one stream yielded.
type outcome struct {
	evs []llm.StreamEvent
	err error
}

// response is the response of the stream's EventDone, if it has one.
func (o *outcome) response() *llm.Response {
	for _, ev := range o.evs {
		if ev.Type == llm.EventDone {
			return ev.Response
		}
	}
	return nil
}

func (o *outcome) count(typ llm.StreamEventType) int {
	n := 0
	for _, ev := range o.evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// text joins the text deltas.
func (o *outcome) text() string {
	var b strings.Builder
	for _, ev := range o.evs {
		if ev.Type == llm.EventTextDelta {
			b.WriteString(ev.Delta)
		}
	}
	return b.String()
}

// attempts returns the EventAttempt events, checking that they come
// before any output.
func (o *outcome) attempts(t *testing.T) []*llm.Attempt {
	t.Helper()
	var out []*llm.Attempt
	output := false
	for _, ev := range o.evs {
		if ev.Type != llm.EventAttempt {
			output = true
			continue
		}
		if output {
			t.Errorf("EventAttempt after output was delivered: %+v", ev.Attempt)
		}
		if ev.Attempt == nil {
			t.Errorf("EventAttempt without an Attempt")
			continue
		}
		out = append(out, ev.Attempt)
	}
	return out
}

// drain ranges over a whole stream, checking the iterator's contract on
// the way: a failure is yielded once and last, nothing follows EventDone.
// It keeps ranging after an error to catch iterators that do not stop.
func drain(t *testing.T, seq iter.Seq2[llm.StreamEvent, error]) outcome {
	t.Helper()
	var o outcome
	done := false
	for ev, err := range seq {
		switch {
		case o.err != nil:
			t.Errorf("the stream yielded (%q, %v) after its error %v", ev.Type, err, o.err)
		case err != nil:
			o.err = err
			if done {
				t.Errorf("the stream failed after EventDone: %v", err)
			}
		default:
			if done {
				t.Errorf("the stream yielded %q after EventDone", ev.Type)
			}
			done = done || ev.Type == llm.EventDone
			o.evs = append(o.evs, ev)
		}
	}
	noSecret(t, o.evs, nil, o.err)
	return o
}

func stream(t *testing.T, p llm.Provider, req *llm.Request) outcome {
	t.Helper()
	return drain(t, p.Stream(t.Context(), req))
}

func generate(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, error) {
	t.Helper()
	resp, err := p.Generate(t.Context(), req)
	noSecret(t, nil, resp, err)
	return resp, err
}

// noSecret fails when the API key appears in an event, a response or an
// error: its text, the provider's message, or the partial output.
func noSecret(t *testing.T, evs []llm.StreamEvent, resp *llm.Response, err error) {
	t.Helper()
	var texts []string
	add := func(v any) {
		b, _ := json.Marshal(v)
		texts = append(texts, string(b))
	}
	for _, ev := range evs {
		add(ev)
	}
	if resp != nil {
		add(resp)
	}
	if err != nil {
		texts = append(texts, err.Error())
		var pe *llm.ProviderError
		if errors.As(err, &pe) {
			texts = append(texts, pe.Message, pe.Code, pe.Type, pe.RequestID)
		}
		var sie *llm.StreamInterruptedError
		if errors.As(err, &sie) && sie.Partial != nil {
			add(sie.Partial)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key leaked: %s", s)
		}
	}
}

// checkDone checks a successful stream: exactly one EventDone, last, with
// the response, whose items are those announced by EventItemDone, in
// order. It returns the response.
func checkDone(t *testing.T, o outcome) *llm.Response {
	t.Helper()
	if o.err != nil {
		t.Fatalf("stream failed: %v", o.err)
	}
	if n := o.count(llm.EventDone); n != 1 {
		t.Fatalf("the stream has %d EventDone events, want exactly 1", n)
	}
	last := o.evs[len(o.evs)-1]
	if last.Type != llm.EventDone {
		t.Fatalf("the last event is %q, want %q", last.Type, llm.EventDone)
	}
	if last.Response == nil {
		t.Fatal("EventDone carries no response")
	}
	var announced []item.Item
	for _, ev := range o.evs {
		if ev.Type != llm.EventItemDone {
			continue
		}
		if ev.Item == nil {
			t.Errorf("EventItemDone without an item")
			continue
		}
		announced = append(announced, *ev.Item)
	}
	if got, want := mustJSON(t, announced), mustJSON(t, last.Response.Items); got != want {
		t.Errorf("the EventItemDone items differ from the response's items\nannounced: %s\nresponse:  %s", got, want)
	}
	return last.Response
}

// checkProviderError checks a failure reported by the provider.
func checkProviderError(t *testing.T, p llm.Provider, err error, status int, retryable bool) *llm.ProviderError {
	t.Helper()
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %T %v, want *llm.ProviderError", err, err)
	}
	if pe.Status != status || pe.Retryable != retryable || pe.Provider != p.Name() {
		t.Errorf("ProviderError = %+v, want Status %d, Retryable %v, Provider %q", pe, status, retryable, p.Name())
	}
	if errors.Is(err, llm.ErrStreamInterrupted) {
		t.Errorf("a failure before the first event is reported as an interruption: %v", err)
	}
	return pe
}

func requests(t *testing.T, srv *server, want int, why string) {
	t.Helper()
	if n := srv.requests(); n != want {
		t.Errorf("the server got %d requests, want %d (%s)", n, want, why)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// compactJSON compacts JSON text, or returns it as is when it is not JSON.
func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
