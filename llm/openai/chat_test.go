package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

var payTool = llm.ToolDef{Name: "pay", Description: "Pays an amount.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)}

var weatherTool = llm.ToolDef{Name: "get_weather", Description: "Current weather.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

func temp(f float64) *float64 { return &f }

func textRequest(model string) *llm.Request {
	return &llm.Request{Model: model, System: "Be brief.", Items: []item.Item{item.UserText("Say hello")},
		Temperature: temp(0.2), MaxOutputTokens: 100, IdempotencyKey: "run1:turn-1"}
}

func toolRequest(model string) *llm.Request {
	return &llm.Request{Model: model, Items: []item.Item{item.UserText("Pay 42")}, Tools: []llm.ToolDef{payTool}}
}

// roundTrip is a transcript after two parallel calls whose results are in.
func roundTrip(model string) *llm.Request {
	img := item.Item{Type: item.TypeImage, Role: item.RoleUser, Image: &item.Image{URL: "https://example.test/map.png", Detail: "low"}}
	a := item.NewToolCall("call_a", "get_weather", json.RawMessage(`{"city":"Paris"}`))
	b := item.NewToolCall("call_b", "get_weather", json.RawMessage(`{"city":"Oslo"}`))
	return &llm.Request{Model: model, System: "You report weather.", Tools: []llm.ToolDef{weatherTool},
		Items: []item.Item{
			item.UserText("Weather in Paris and Oslo?"), img,
			item.AssistantText("Checking both."), a, b,
			item.NewToolResult("call_b", "-3C, snow", false),
			item.NewToolResult("call_a", "service unavailable", true),
		}}
}

func newChat(t testing.TB, b *bundle, mod func(*openai.Config)) *openai.Chat {
	t.Helper()
	cfg := b.config()
	closeIdle(t, cfg)
	if mod != nil {
		mod(cfg)
	}
	p, err := openai.NewChat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestChatStreamText(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_text.sse"))
	p := newChat(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("requests = %+v", reqs)
	}
	golden(t, "chat_text.req.json", reqs[0].Body)
	h := reqs[0].Header
	if h.Get("Authorization") != "Bearer "+testKey || h.Get("Idempotency-Key") != "run1:turn-1" {
		t.Errorf("headers: Authorization %q, Idempotency-Key %q", h.Get("Authorization"), h.Get("Idempotency-Key"))
	}
	if got := countType(evs, llm.EventTextDelta); got != 2 {
		t.Errorf("text deltas = %d, want 2", got)
	}
	last := evs[len(evs)-1]
	if last.Type != llm.EventDone {
		t.Fatalf("last event %s", last.Type)
	}
	r := last.Response
	if r.Text() != "Hello, world." || r.StopReason != llm.StopEndTurn || r.ID != "chatcmpl-t1" || r.Model != "gpt-test" {
		t.Errorf("response = %+v", r)
	}
	want := item.Usage{InputTokens: 21, OutputTokens: 4, CachedInputTokens: 16, ReasoningTokens: 2, Requests: 1}
	if r.Usage != want {
		t.Errorf("usage = %+v, want %+v", r.Usage, want)
	}
}

func TestChatStreamOneToolCall(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_tool.sse"))
	p := newChat(t, b, nil)
	resp, err := llm.Collect(p.Stream(context.Background(), toolRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "chat_tool.req.json", b.srv.Requests()[0].Body)
	calls := resp.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "call_pay1" || calls[0].Name != "pay" || string(calls[0].Arguments) != `{"amount":42}` {
		t.Fatalf("calls = %s", mustJSON(t, calls))
	}
	if resp.StopReason != llm.StopToolUse || resp.Usage.InputTokens != 50 || resp.Usage.OutputTokens != 12 {
		t.Errorf("response = %+v", resp)
	}
}

func TestChatStreamParallelToolCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_parallel.sse"))
	p := newChat(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), &llm.Request{Model: "gpt-test",
		Items: []item.Item{item.UserText("Weather in Paris and Oslo?")}, Tools: []llm.ToolDef{weatherTool}}))
	if err != nil {
		t.Fatal(err)
	}
	resp := evs[len(evs)-1].Response
	got := mustJSON(t, resp.ToolCalls())
	want := `[{"id":"call_a","name":"get_weather","arguments":{"city":"Paris"}},{"id":"call_b","name":"get_weather","arguments":{"city":"Oslo"}}]`
	if got != want {
		t.Fatalf("calls = %s\nwant %s", got, want)
	}
	if n := countType(evs, llm.EventToolCallDelta); n != 4 {
		t.Errorf("argument fragments = %d, want 4", n)
	}
	if n := countType(evs, llm.EventItemDone); n != 2 {
		t.Errorf("item done events = %d, want 2", n)
	}
}

func TestChatToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "chat_text.json"))
	p := newChat(t, b, nil)
	resp, err := p.Generate(context.Background(), roundTrip("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "chat_roundtrip.req.json", b.srv.Requests()[0].Body)
	if resp.Text() != "Paid 42." || resp.Usage.CachedInputTokens != 64 || resp.StopReason != llm.StopEndTurn {
		t.Errorf("response = %+v", resp)
	}
}

func TestChatGenerateToolCall(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "chat_tool.json"))
	p := newChat(t, b, nil)
	resp, err := p.Generate(context.Background(), toolRequest("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "chat_tool_generate.req.json", b.srv.Requests()[0].Body)
	calls := resp.ToolCalls()
	if len(calls) != 1 || string(calls[0].Arguments) != `{"amount":42}` || resp.StopReason != llm.StopToolUse {
		t.Fatalf("response = %s", mustJSON(t, resp))
	}
}

func TestChatErrorBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fixture   string
		status          int
		typ, code, text string
	}{
		{"400 invalid request", "error_400.json", 400, "invalid_request_error", "invalid_value", "Invalid value"},
		{"401 bad key", "error_401.json", 401, "invalid_request_error", "invalid_api_key", "Incorrect API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonBody(t, tc.status, tc.fixture))
			p := newChat(t, b, nil)
			for _, streaming := range []bool{false, true} {
				var err error
				if streaming {
					_, err = llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
				} else {
					_, err = p.Generate(context.Background(), textRequest("gpt-test"))
				}
				var pe *llm.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %T %v, want *llm.ProviderError", err, err)
				}
				if pe.Status != tc.status || pe.Type != tc.typ || pe.Code != tc.code || !strings.Contains(pe.Message, tc.text) ||
					pe.RequestID != "req_abc123" || pe.Retryable || pe.Provider != "openai.chat" {
					t.Errorf("ProviderError = %+v", pe)
				}
				if strings.Contains(err.Error(), testKey) || strings.Contains(pe.Message, testKey) {
					t.Errorf("the API key leaked into the error: %v", err)
				}
			}
			if n := len(b.srv.Requests()); n != 2 {
				t.Errorf("requests = %d, want 2 (one per call, no retry)", n)
			}
		})
	}
}

func TestChatStreamCutBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, cut(t, "chat_text.sse", 40), sse(t, "chat_text.sse"))
	p := newChat(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.srv.Requests()); n != 2 {
		t.Fatalf("requests = %d, want 2", n)
	}
	if evs[0].Type != llm.EventAttempt || evs[0].Attempt.Number != 1 || evs[0].Attempt.Wait != transport.DefaultInitialBackoff {
		t.Errorf("first event = %+v, want the retried attempt", evs[0])
	}
	if evs[len(evs)-1].Response.Text() != "Hello, world." {
		t.Errorf("final text = %q", evs[len(evs)-1].Response.Text())
	}
	if s := b.clock.Sleeps(); len(s) != 1 {
		t.Errorf("sleeps = %v", s)
	}
}

func TestChatStreamCutAfterFirstEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, cutAfterEvents(t, "chat_text.sse", 2), sse(t, "chat_text.sse"))
	p := newChat(t, b, nil)
	resp, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
	var sie *llm.StreamInterruptedError
	if !errors.As(err, &sie) || !errors.Is(err, llm.ErrStreamInterrupted) || !errors.Is(err, llm.ErrStreamInterrupted) {
		t.Fatalf("err = %T %v, want *llm.StreamInterruptedError", err, err)
	}
	if sie.Partial == nil || sie.Partial.Text() != "Hello" || resp.Text() != "Hello" {
		t.Errorf("partial = %+v", sie.Partial)
	}
	if n := len(b.srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want exactly 1: a started stream is never re-requested", n)
	}
}

func TestChatErrorEventInStream(t *testing.T) {
	t.Parallel()
	t.Run("first event is retried", func(t *testing.T) {
		t.Parallel()
		b := setup(t, sse(t, "chat_error_event.sse"), sse(t, "chat_text.sse"))
		p := newChat(t, b, nil)
		evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(b.srv.Requests()); n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
		if evs[0].Type != llm.EventAttempt || evs[0].Attempt.Status != 500 {
			t.Errorf("first event = %+v", evs[0])
		}
	})
	t.Run("retries exhausted", func(t *testing.T) {
		t.Parallel()
		b := setup(t, sse(t, "chat_error_event.sse"))
		p := newChat(t, b, func(c *openai.Config) { c.MaxRetries = transport.Retries(1) })
		_, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Status != 500 || pe.Type != "server_error" || !pe.Retryable {
			t.Fatalf("err = %v (%+v)", err, pe)
		}
		if n := len(b.srv.Requests()); n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
	})
	t.Run("after the first event", func(t *testing.T) {
		t.Parallel()
		text := fixture(t, "chat_text.sse")
		i := strings.Index(string(text), "\n\n")
		body := append(append([]byte(nil), text[:i+2]...), fixture(t, "chat_error_event.sse")...)
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
		p := newChat(t, b, nil)
		_, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
		var sie *llm.StreamInterruptedError
		var pe *llm.ProviderError
		if !errors.As(err, &sie) || !errors.As(err, &pe) || pe.Status != 500 {
			t.Fatalf("err = %T %v", err, err)
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
	})
}

func TestChatMalformedArguments(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_bad_args.sse"))
	p := newChat(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), toolRequest("gpt-test")))
	var me *llm.MalformedToolCallError
	if !errors.As(err, &me) || !errors.Is(err, llm.ErrMalformedToolCall) || me.CallID != "call_bad" || me.Arguments != `{"amount": 5` {
		t.Fatalf("err = %T %v", err, err)
	}
	if countType(evs, llm.EventItemDone) != 0 || countType(evs, llm.EventDone) != 0 {
		t.Errorf("a response with a malformed call must yield no completed items: %+v", evs)
	}
}

func TestChatCapabilitiesRefuseWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_tool.sse"))
	p := newChat(t, b, nil)
	_, err := p.Generate(context.Background(), toolRequest("no-tools"))
	if !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("Generate err = %v", err)
	}
	_, err = llm.Collect(p.Stream(context.Background(), toolRequest("no-tools")))
	var ue *llm.UnsupportedError
	if !errors.As(err, &ue) || ue.Feature != "tools" || ue.Model != "no-tools" {
		t.Fatalf("Stream err = %v", err)
	}
	dangling := &llm.Request{Model: "gpt-test", Items: []item.Item{item.NewToolCall("c1", "pay", json.RawMessage(`{}`))}}
	if _, err := p.Generate(context.Background(), dangling); !errors.Is(err, llm.ErrDanglingToolCall) {
		t.Fatalf("dangling err = %v", err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("requests = %d, want 0", n)
	}
}

func TestChatConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := openai.NewChat(nil); !errors.Is(err, openai.ErrMissingAPIKey) {
		t.Fatalf("no key for api.openai.com: err = %v", err)
	}
	if _, err := openai.NewResponses(&openai.Config{BaseURL: "https://api.openai.com/v1"}); !errors.Is(err, openai.ErrMissingAPIKey) {
		t.Fatalf("Responses without key: err = %v", err)
	}
	if _, err := openai.NewChat(&openai.Config{BaseURL: "localhost:11434"}); err == nil || !strings.Contains(err.Error(), "Config.BaseURL") {
		t.Fatalf("bad BaseURL: err = %v", err)
	}
	if _, err := openai.NewChat(&openai.Config{NoAuth: true, Options: transport.Options{MaxRetries: transport.Retries(-1)}}); err == nil || !strings.Contains(err.Error(), "Config.MaxRetries") {
		t.Fatalf("bad MaxRetries: err = %v", err)
	}

	// A local server needs no key; no Authorization header is sent.
	b := setup(t, sse(t, "chat_text.sse"))
	cfg := b.config()
	closeIdle(t, cfg)
	cfg.APIKey = ""
	p, err := openai.NewChat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(p.Stream(context.Background(), textRequest("llama3"))); err != nil {
		t.Fatal(err)
	}
	if h := b.srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}

	// The environment supplies key and base URL; NoAuth suppresses the key.
	t.Setenv("OPENAI_API_KEY", "sk-from-env-000000")
	t.Setenv("OPENAI_BASE_URL", b.srv.URL+"/v1")
	p, err = openai.NewChat(&openai.Config{Organization: "org-1", Project: "proj-1", Options: transport.Options{HTTPClient: cfg.HTTPClient}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test"))); err != nil {
		t.Fatal(err)
	}
	h := b.srv.Requests()[1].Header
	if h.Get("Authorization") != "Bearer sk-from-env-000000" || h.Get("OpenAI-Organization") != "org-1" || h.Get("OpenAI-Project") != "proj-1" {
		t.Errorf("headers = %v", h)
	}
	p, err = openai.NewChat(&openai.Config{NoAuth: true, Options: transport.Options{HTTPClient: cfg.HTTPClient}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test"))); err != nil {
		t.Fatal(err)
	}
	if h := b.srv.Requests()[2].Header.Get("Authorization"); h != "" {
		t.Errorf("NoAuth: Authorization = %q", h)
	}
	if caps := p.Capabilities("anything"); caps != openai.DefaultCapabilities {
		t.Errorf("default capabilities = %+v", caps)
	}
}

func TestChatKeyNeverInEvents(t *testing.T) {
	t.Parallel()
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"error":{"message":"overloaded; your header was ` + r.Header.Get("Authorization") + `","type":"server_error"}}`))
	}
	b := setup(t, echo)
	p := newChat(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
	if err == nil {
		t.Fatal("want an error")
	}
	if n := len(b.srv.Requests()); n != 3 {
		t.Fatalf("requests = %d, want 3", n)
	}
	if countType(evs, llm.EventAttempt) != 2 {
		t.Errorf("attempt events = %d, want 2", countType(evs, llm.EventAttempt))
	}
	all := err.Error() + mustJSON(t, evs)
	for _, a := range b.Attempts() {
		all += a.Err
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		all += pe.Message
	}
	if strings.Contains(all, testKey) || !strings.Contains(all, "REDACTED") {
		t.Fatalf("the key leaked, or nothing was redacted:\n%s", all)
	}
}

func TestChatStreamBreakReleasesConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "chat_text.sse"))
	p := newChat(t, b, nil)
	n := 0
	for ev, err := range p.Stream(context.Background(), textRequest("gpt-test")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == llm.EventTextDelta {
			n++
			break
		}
	}
	if n != 1 || len(b.srv.Requests()) != 1 {
		t.Fatalf("deltas %d, requests %d", n, len(b.srv.Requests()))
	}
}
