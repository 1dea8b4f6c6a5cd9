package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
	"github.com/actoviq/actoviq-go/llm/transport"
)

var payTool = llm.ToolDef{Name: "pay", Description: "Pays an amount.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)}

var weatherTool = llm.ToolDef{Name: "get_weather", Description: "Current weather.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

func temp(f float64) *float64 { return &f }

func textRequest() *llm.Request {
	return &llm.Request{Model: "claude-test", System: "Be brief.", Items: []item.Item{item.UserText("Say hello")},
		Temperature: temp(0.2), IdempotencyKey: "run1:turn-1", Metadata: map[string]string{"user_id": "u-1", "other": "x"}}
}

func toolRequest(model string) *llm.Request {
	return &llm.Request{Model: model, Items: []item.Item{item.UserText("Pay 42")}, Tools: []llm.ToolDef{payTool}, MaxOutputTokens: 1024}
}

func newMessages(t *testing.T, b *bundle, mod func(*anthropic.Config)) *anthropic.Messages {
	t.Helper()
	cfg := b.config()
	closeIdle(t, cfg)
	if mod != nil {
		mod(cfg)
	}
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "text.sse"))
	p := newMessages(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), textRequest()))
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("requests = %+v", reqs)
	}
	golden(t, "text.req.json", reqs[0].Body)
	h := reqs[0].Header
	if h.Get("X-Api-Key") != testKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Idempotency-Key") != "run1:turn-1" || h.Get("Authorization") != "" {
		t.Errorf("headers = %v", h)
	}
	if countType(evs, llm.EventTextDelta) != 2 || countType(evs, llm.EventItemDone) != 1 {
		t.Errorf("events = %+v", evs)
	}
	r := evs[len(evs)-1].Response
	// input_tokens excludes the cache; item.Usage counts it in.
	want := item.Usage{InputTokens: 31, OutputTokens: 4, CachedInputTokens: 16, CacheWriteTokens: 10, Requests: 1}
	if r.Text() != "Hello, world." || r.StopReason != llm.StopEndTurn || r.ID != "msg_t1" || r.Usage != want {
		t.Errorf("response = %+v", r)
	}
}

func TestStreamOneToolCall(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "tool.sse"))
	p := newMessages(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), toolRequest("claude-test")))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tool.req.json", b.srv.Requests()[0].Body)
	resp := evs[len(evs)-1].Response
	if resp.Text() != "Paying now." || resp.StopReason != llm.StopToolUse {
		t.Fatalf("response = %s", mustJSON(t, resp))
	}
	calls := resp.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "toolu_pay1" || string(calls[0].Arguments) != `{"amount":42}` {
		t.Fatalf("calls = %s", mustJSON(t, calls))
	}
	if n := countType(evs, llm.EventToolCallDelta); n != 3 {
		t.Errorf("fragments = %d, want 3 (the empty first one is not an event)", n)
	}
}

// TestParallelAndRoundTrip streams thinking plus two tool_use blocks, then
// sends them back with the results: thinking verbatim with its signature,
// one assistant message with both tool_use blocks, one user message with
// both tool_result blocks (is_error kept).
func TestParallelAndRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "parallel.sse"), sse(t, "text.sse"))
	p := newMessages(t, b, func(c *anthropic.Config) { c.ThinkingBudget = 2048; c.MaxTokens = 8192 })
	req := &llm.Request{Model: "claude-test", Items: []item.Item{item.UserText("Weather in Paris and Oslo?")}, Tools: []llm.ToolDef{weatherTool}}
	resp, err := llm.Collect(p.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "parallel.req.json", b.srv.Requests()[0].Body)
	got := mustJSON(t, resp.ToolCalls())
	want := `[{"id":"toolu_a","name":"get_weather","arguments":{"city":"Paris"}},{"id":"toolu_b","name":"get_weather","arguments":{"city":"Oslo"}}]`
	if got != want {
		t.Fatalf("calls = %s\nwant %s", got, want)
	}
	rs := resp.Items[0].Reasoning
	if rs == nil || rs.Summary != "Two cities, two calls." || string(rs.Opaque) != `{"type":"thinking","thinking":"Two cities, two calls.","signature":"EqQBCkYIARgCIkB-sig=="}` {
		t.Fatalf("reasoning = %+v", resp.Items[0])
	}
	if !p.Capabilities("claude-test").Reasoning {
		t.Error("thinking on: Reasoning should be reported")
	}

	next := &llm.Request{Model: "claude-test", System: "Report weather.", Tools: []llm.ToolDef{weatherTool}}
	next.Items = append(append(next.Items, req.Items...), resp.Items...)
	next.Items = append(next.Items,
		item.NewToolResult("toolu_b", "-3C, snow", false),
		item.NewToolResult("toolu_a", "service unavailable", true),
		item.UserText("Be quick."),
		item.Item{Type: item.TypeReasoning, Reasoning: &item.Reasoning{Provider: "openai.responses", Opaque: []byte(`{"type":"reasoning"}`)}},
	)
	if _, err := llm.Collect(p.Stream(context.Background(), next)); err != nil {
		t.Fatal(err)
	}
	golden(t, "roundtrip.req.json", b.srv.Requests()[1].Body)
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "tool.json"), jsonBody(t, 200, "text.json"))
	p := newMessages(t, b, nil)
	resp, err := p.Generate(context.Background(), toolRequest("claude-test"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "generate.req.json", b.srv.Requests()[0].Body)
	if len(resp.Items) != 3 || resp.StopReason != llm.StopToolUse {
		t.Fatalf("response = %s", mustJSON(t, resp))
	}
	wantThinking := `{"type": "thinking", "thinking": "Pay it.", "signature": "EqQBCkYIARgCIkB-g1=="}`
	if string(resp.Items[0].Reasoning.Opaque) != wantThinking {
		t.Errorf("thinking opaque = %s", resp.Items[0].Reasoning.Opaque)
	}
	want := item.Usage{InputTokens: 52, OutputTokens: 20, CachedInputTokens: 40, Requests: 1}
	if resp.Usage != want || string(resp.ToolCalls()[0].Arguments) != `{"amount":42}` {
		t.Errorf("response = %s", mustJSON(t, resp))
	}
	// The thinking block goes back byte for byte (modulo JSON compaction).
	next := toolRequest("claude-test")
	next.Items = append(append(next.Items, resp.Items...), item.NewToolResult("toolu_g1", "paid", false))
	if _, err := p.Generate(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if body := string(b.srv.Requests()[1].Body); !strings.Contains(body, `{"type":"thinking","thinking":"Pay it.","signature":"EqQBCkYIARgCIkB-g1=="}`) {
		t.Errorf("thinking not sent back:\n%s", body)
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fixture, typ, text, rid string
		status                        int
	}{
		{"400", "error_400.json", "invalid_request_error", "roles must alternate", "req_abc123", 400},
		{"401", "error_401.json", "authentication_error", "invalid x-api-key", "req_abc123", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonBody(t, tc.status, tc.fixture))
			p := newMessages(t, b, nil)
			for _, streaming := range []bool{false, true} {
				var err error
				if streaming {
					_, err = llm.Collect(p.Stream(context.Background(), textRequest()))
				} else {
					_, err = p.Generate(context.Background(), textRequest())
				}
				var pe *llm.ProviderError
				if !errors.As(err, &pe) || pe.Status != tc.status || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.text) ||
					pe.RequestID != tc.rid || pe.Retryable || pe.Provider != "anthropic" {
					t.Fatalf("err = %v (%+v)", err, pe)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("key leaked: %v", err)
				}
			}
			if n := len(b.srv.Requests()); n != 2 {
				t.Errorf("requests = %d, want 2", n)
			}
		})
	}
	t.Run("request_id from the body", func(t *testing.T) {
		t.Parallel()
		body := fixture(t, "error_400.json")
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400); _, _ = w.Write(body) })
		p := newMessages(t, b, nil)
		_, err := p.Generate(context.Background(), textRequest())
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.RequestID != "req_011CAbc" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestOverloadedEvent(t *testing.T) {
	t.Parallel()
	t.Run("first event: classified 529 and retried", func(t *testing.T) {
		t.Parallel()
		b := setup(t, sse(t, "overloaded.sse"), sse(t, "text.sse"))
		p := newMessages(t, b, nil)
		evs, err := collect(p.Stream(context.Background(), textRequest()))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(b.srv.Requests()); n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
		if evs[0].Type != llm.EventAttempt || evs[0].Attempt.Status != 529 {
			t.Errorf("first event = %+v", evs[0])
		}
	})
	t.Run("retries off", func(t *testing.T) {
		t.Parallel()
		b := setup(t, sse(t, "overloaded.sse"))
		p := newMessages(t, b, func(c *anthropic.Config) { c.MaxRetries = transport.Retries(0) })
		_, err := llm.Collect(p.Stream(context.Background(), textRequest()))
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Status != 529 || pe.Type != "overloaded_error" || pe.Message != "Overloaded" || !pe.Retryable {
			t.Fatalf("err = %v (%+v)", err, pe)
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
	})
	t.Run("after the first event: interrupted, not re-requested", func(t *testing.T) {
		t.Parallel()
		text := string(fixture(t, "text.sse"))
		i := strings.Index(text, "event: content_block_stop")
		body := text[:i] + string(fixture(t, "overloaded.sse"))
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, body) })
		p := newMessages(t, b, nil)
		resp, err := llm.Collect(p.Stream(context.Background(), textRequest()))
		var sie *llm.StreamInterruptedError
		var pe *llm.ProviderError
		if !errors.As(err, &sie) || !errors.As(err, &pe) || pe.Status != 529 {
			t.Fatalf("err = %T %v", err, err)
		}
		if resp.Text() != "Hello, world." {
			t.Errorf("partial = %+v", resp)
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
	})
}

func TestStreamCuts(t *testing.T) {
	t.Parallel()
	t.Run("before the first event", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cut(t, "text.sse", 50), sse(t, "text.sse"))
		p := newMessages(t, b, nil)
		resp, err := llm.Collect(p.Stream(context.Background(), textRequest()))
		if err != nil || resp.Text() != "Hello, world." {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		if n := len(b.srv.Requests()); n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
		if got := b.Attempts(); len(got) != 2 || !got[0].Retry || got[1].Status != 200 {
			t.Errorf("attempts = %+v", got)
		}
	})
	t.Run("after the first event", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cutAfterEvents(t, "text.sse", 4), sse(t, "text.sse"))
		p := newMessages(t, b, nil)
		resp, err := llm.Collect(p.Stream(context.Background(), textRequest()))
		var sie *llm.StreamInterruptedError
		if !errors.As(err, &sie) || sie.Partial == nil || sie.Partial.Text() != "Hello" || resp.Text() != "Hello" {
			t.Fatalf("err = %v, partial %+v", err, sie)
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
	})
}

func TestMalformedInput(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "bad_input.sse"))
	p := newMessages(t, b, nil)
	evs, err := collect(p.Stream(context.Background(), toolRequest("claude-test")))
	var me *llm.MalformedToolCallError
	if !errors.As(err, &me) || !errors.Is(err, llm.ErrMalformedToolCall) || me.CallID != "toolu_bad" || me.Arguments != `{"amount": ` {
		t.Fatalf("err = %T %v", err, err)
	}
	if countType(evs, llm.EventItemDone) != 0 || countType(evs, llm.EventDone) != 0 {
		t.Errorf("events = %+v", evs)
	}
}

func TestCapabilitiesRefuseWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "tool.sse"))
	p := newMessages(t, b, nil)
	if _, err := llm.Collect(p.Stream(context.Background(), toolRequest("no-tools"))); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
	schema := textRequest()
	schema.OutputSchema = json.RawMessage(`{"type":"object"}`)
	var ue *llm.UnsupportedError
	if _, err := p.Generate(context.Background(), schema); !errors.As(err, &ue) || ue.Feature != "structured_output" {
		t.Fatalf("schema err = %v", err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("requests = %d, want 0", n)
	}
}

func TestConfig(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	if _, err := anthropic.New(nil); !errors.Is(err, anthropic.ErrMissingAPIKey) {
		t.Fatalf("err = %v", err)
	}
	if _, err := anthropic.New(&anthropic.Config{APIKey: "k", MaxTokens: -1}); err == nil || !strings.Contains(err.Error(), "Config.MaxTokens") {
		t.Fatalf("err = %v", err)
	}
	if _, err := anthropic.New(&anthropic.Config{APIKey: "k", BaseURL: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "Config.BaseURL") {
		t.Fatalf("err = %v", err)
	}
	b := setup(t, sse(t, "text.sse"))
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-0000000")
	t.Setenv("ANTHROPIC_BASE_URL", b.srv.URL)
	cfg := b.config()
	closeIdle(t, cfg)
	p, err := anthropic.New(&anthropic.Config{Options: transport.Options{HTTPClient: cfg.HTTPClient}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(p.Stream(context.Background(), textRequest())); err != nil {
		t.Fatal(err)
	}
	if h := b.srv.Requests()[0].Header.Get("X-Api-Key"); h != "sk-ant-env-0000000" {
		t.Errorf("x-api-key = %q", h)
	}
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	_ = json.Unmarshal(b.srv.Requests()[0].Body, &body)
	if body.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("max_tokens = %d", body.MaxTokens)
	}
}
