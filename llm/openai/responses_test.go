package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
)

func newResponses(t *testing.T, b *bundle) *openai.Responses {
	t.Helper()
	cfg := b.config()
	closeIdle(t, cfg)
	p, err := openai.NewResponses(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResponsesStreamText(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_text.sse"))
	p := newResponses(t, b)
	req := textRequest("gpt-test")
	req.Metadata = map[string]string{"run": "run1"}
	evs, err := collect(p.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses" || reqs[0].Header.Get("Idempotency-Key") != "run1:turn-1" {
		t.Fatalf("requests = %+v", reqs)
	}
	golden(t, "resp_text.req.json", reqs[0].Body)
	if countType(evs, llm.EventTextDelta) != 2 || countType(evs, llm.EventItemDone) != 1 {
		t.Errorf("events = %+v", evs)
	}
	r := evs[len(evs)-1].Response
	want := item.Usage{InputTokens: 21, OutputTokens: 4, CachedInputTokens: 16, ReasoningTokens: 2, Requests: 1}
	if r.Text() != "Hello, world." || r.StopReason != llm.StopEndTurn || r.ID != "resp_t1" || r.Usage != want {
		t.Errorf("response = %+v", r)
	}
}

// TestResponsesToolRoundTrip streams a reasoning item and a function call,
// then sends the output back with the result: the reasoning item must go
// back byte for byte, the call with its call_id and fc_ id, the result as
// function_call_output.
func TestResponsesToolRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_tool.sse"), sse(t, "resp_text.sse"))
	p := newResponses(t, b)
	req := toolRequest("gpt-test")
	resp, err := llm.Collect(p.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "resp_tool.req.json", b.srv.Requests()[0].Body)
	if len(resp.Items) != 2 || resp.StopReason != llm.StopToolUse {
		t.Fatalf("items = %s", mustJSON(t, resp.Items))
	}
	rs := resp.Items[0].Reasoning
	wantRS := `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"The user wants a payment."}],"encrypted_content":"gAAAAB-opaque-state=="}`
	if rs == nil || string(rs.Opaque) != wantRS || rs.Summary != "The user wants a payment." || rs.Provider != openai.ReasoningProvider {
		t.Fatalf("reasoning = %+v", rs)
	}
	tc := resp.Items[1].ToolCall
	if tc == nil || tc.ID != "call_pay1" || tc.ProviderID != "fc_1" || string(tc.Arguments) != `{"amount":42}` {
		t.Fatalf("call = %+v", tc)
	}
	want := item.Usage{InputTokens: 50, OutputTokens: 30, ReasoningTokens: 18, Requests: 1}
	if resp.Usage != want {
		t.Errorf("usage = %+v", resp.Usage)
	}

	foreign := item.Item{Type: item.TypeReasoning, Reasoning: &item.Reasoning{Provider: "anthropic", Opaque: []byte(`{"type":"thinking"}`)}}
	next := toolRequest("gpt-test")
	next.Items = append(append(append(next.Items, foreign), resp.Items...), item.NewToolResult("call_pay1", "paid 42", false))
	if _, err := llm.Collect(p.Stream(context.Background(), next)); err != nil {
		t.Fatal(err)
	}
	second := b.srv.Requests()[1].Body
	golden(t, "resp_roundtrip.req.json", second)
	if !strings.Contains(string(second), wantRS) {
		t.Errorf("the reasoning item was not sent back verbatim:\n%s", second)
	}
}

func TestResponsesParallelToolCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_parallel.sse"))
	p := newResponses(t, b)
	evs, err := collect(p.Stream(context.Background(), &llm.Request{Model: "gpt-test",
		Items: []item.Item{item.UserText("Weather in Paris and Oslo?")}, Tools: []llm.ToolDef{weatherTool}}))
	if err != nil {
		t.Fatal(err)
	}
	resp := evs[len(evs)-1].Response
	got := mustJSON(t, resp.ToolCalls())
	want := `[{"id":"call_a","name":"get_weather","arguments":{"city":"Paris"},"provider_id":"fc_a"},{"id":"call_b","name":"get_weather","arguments":{"city":"Oslo"},"provider_id":"fc_b"}]`
	if got != want {
		t.Fatalf("calls = %s\nwant %s", got, want)
	}
	if countType(evs, llm.EventToolCallDelta) != 4 || countType(evs, llm.EventItemDone) != 2 {
		t.Errorf("events = %+v", evs)
	}
}

func TestResponsesGenerate(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "resp_generate.json"), jsonBody(t, 200, "resp_generate_failed.json"))
	p := newResponses(t, b)
	resp, err := p.Generate(context.Background(), toolRequest("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "resp_generate.req.json", b.srv.Requests()[0].Body)
	tc := resp.ToolCalls()
	if len(tc) != 1 || tc[0].ID != "call_9" || tc[0].ProviderID != "fc_9" || resp.Usage.CachedInputTokens != 32 {
		t.Fatalf("response = %s", mustJSON(t, resp))
	}
	_, err = p.Generate(context.Background(), toolRequest("gpt-test"))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Code != "rate_limit_exceeded" || pe.Message != "Rate limit reached." {
		t.Fatalf("failed response: err = %v", err)
	}
}

func TestResponsesIncomplete(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_incomplete.sse"))
	p := newResponses(t, b)
	resp, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopMaxTokens || resp.Text() != "Once upon a" {
		t.Fatalf("response = %+v", resp)
	}
}

func TestResponsesFailedAfterFirstEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_failed.sse"))
	p := newResponses(t, b)
	resp, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
	var sie *llm.StreamInterruptedError
	var pe *llm.ProviderError
	if !errors.As(err, &sie) || !errors.As(err, &pe) {
		t.Fatalf("err = %T %v", err, err)
	}
	if pe.Status != 500 || pe.Code != "server_error" || !strings.Contains(pe.Message, "failed to generate") {
		t.Errorf("ProviderError = %+v", pe)
	}
	if resp.Text() != "Partial" {
		t.Errorf("partial = %+v", resp)
	}
	if n := len(b.srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
}

func TestResponsesErrorEventRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_error_event.sse"), sse(t, "resp_text.sse"))
	p := newResponses(t, b)
	evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.srv.Requests()); n != 2 {
		t.Fatalf("requests = %d, want 2", n)
	}
	if evs[0].Type != llm.EventAttempt || evs[0].Attempt.Status != 500 || !strings.Contains(evs[0].Attempt.Err, "server_error") {
		t.Errorf("first event = %+v", evs[0])
	}
}

func TestResponsesStreamCuts(t *testing.T) {
	t.Parallel()
	t.Run("before the first event", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cut(t, "resp_text.sse", 60), sse(t, "resp_text.sse"))
		p := newResponses(t, b)
		resp, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
		if err != nil || resp.Text() != "Hello, world." {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		if n := len(b.srv.Requests()); n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
	})
	t.Run("after the first event", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cutAfterEvents(t, "resp_text.sse", 6), sse(t, "resp_text.sse"))
		p := newResponses(t, b)
		resp, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
		var sie *llm.StreamInterruptedError
		if !errors.As(err, &sie) || sie.Partial == nil || sie.Partial.Text() != "Hello, world." || resp.Text() != "Hello, world." {
			t.Fatalf("err = %v partial = %+v", err, sie)
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
	})
	t.Run("clean end without response.completed", func(t *testing.T) {
		t.Parallel()
		body := fixture(t, "resp_text.sse")
		body = body[:strings.Index(string(body), "event: response.completed")]
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
		p := newResponses(t, b)
		_, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
		if !errors.Is(err, llm.ErrStreamInterrupted) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestResponsesRepeatedSequenceNumberDropped(t *testing.T) {
	t.Parallel()
	body := fixture(t, "resp_tool.sse")
	dup := "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":6,\"item_id\":\"fc_1\",\"output_index\":1,\"delta\":\"unt\\\": 42}\"}\n\n"
	i := strings.Index(string(body), "event: response.function_call_arguments.done")
	body = []byte(string(body[:i]) + dup + string(body[i:]))
	b := setup(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	p := newResponses(t, b)
	evs, err := collect(p.Stream(context.Background(), toolRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	if n := countType(evs, llm.EventToolCallDelta); n != 2 {
		t.Errorf("argument fragments = %d, want 2 (the repeat dropped)", n)
	}
}

func TestResponsesCapabilitiesRefuseWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_tool.sse"))
	p := newResponses(t, b)
	if _, err := llm.Collect(p.Stream(context.Background(), toolRequest("no-tools"))); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
	img := &llm.Request{Model: "no-tools", Items: []item.Item{{Type: item.TypeImage, Role: item.RoleUser, Image: &item.Image{URL: "https://x/y.png"}}}}
	if _, err := p.Generate(context.Background(), img); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("image err = %v", err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("requests = %d, want 0", n)
	}
}
