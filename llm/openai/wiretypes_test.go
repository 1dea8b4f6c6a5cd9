package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// These tests feed the adapters the event and content types of the
// current API references that the first fixtures did not cover, shaped as
// the API sends them.

func joinDeltas(evs []llm.StreamEvent, typ llm.StreamEventType) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == typ {
			b.WriteString(ev.Delta)
		}
	}
	return b.String()
}

// With store:false the reasoning item's encrypted_content in
// response.output_item.done and in response.completed can differ. The
// reference says to send back the item as output_item.done delivered it;
// that copy is kept, and the request asks for it with store:false and
// include:["reasoning.encrypted_content"].
func TestResponsesNoStoreKeepsOutputItemDoneReasoning(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "resp_reasoning_nostore.sse"), sse(t, "resp_text.sse"))
	cfg := b.config()
	closeIdle(t, cfg)
	cfg.NoStore = true
	cfg.Include = []string{"reasoning.encrypted_content", "message.output_text.logprobs"}
	p, err := openai.NewResponses(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: "o4-test", Items: []item.Item{item.UserText("Weather in Paris?")}, Tools: []llm.ToolDef{weatherTool}}
	evs, err := collect(p.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "resp_nostore.req.json", b.srv.Requests()[0].Body)
	resp := evs[len(evs)-1].Response
	if len(resp.Items) != 2 || resp.Items[0].Reasoning == nil || resp.StopReason != llm.StopToolUse {
		t.Fatalf("items = %s", mustJSON(t, resp.Items))
	}
	if op := string(resp.Items[0].Reasoning.Opaque); !strings.Contains(op, "gAAAAB-from-output-item-done") {
		t.Errorf("reasoning kept %s, want the output_item.done copy", op)
	}
	if joinDeltas(evs, llm.EventReasoningDelta) != "Look up the weather." {
		t.Errorf("reasoning deltas = %q", joinDeltas(evs, llm.EventReasoningDelta))
	}
	want := item.Usage{InputTokens: 40, OutputTokens: 90, CachedInputTokens: 32, ReasoningTokens: 64, Requests: 1}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	next := &llm.Request{Model: "o4-test", Tools: req.Tools}
	next.Items = append(append(append(next.Items, req.Items...), resp.Items...), item.NewToolResult("call_r1", "sunny", false))
	if _, err := llm.Collect(p.Stream(context.Background(), next)); err != nil {
		t.Fatal(err)
	}
	second := b.srv.Requests()[1].Body
	golden(t, "resp_nostore_roundtrip.req.json", second)
	if strings.Contains(string(second), "from-response-completed") || !strings.Contains(string(second), "from-output-item-done") {
		t.Errorf("the wrong reasoning copy went back:\n%s", second)
	}
}

// Refusal deltas are announced as they arrive and join to the refusal item.
func TestRefusalDeltas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, fixture string }{{"responses", "resp_refusal.sse"}, {"chat", "chat_refusal.sse"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sse(t, tc.fixture))
			var p llm.Provider
			if tc.name == "chat" {
				p = newChat(t, b, nil)
			} else {
				p = newResponses(t, b)
			}
			evs, err := collect(p.Stream(context.Background(), textRequest("gpt-test")))
			if err != nil {
				t.Fatal(err)
			}
			resp := evs[len(evs)-1].Response
			if len(resp.Items) != 1 || resp.Items[0].Type != item.TypeRefusal || resp.Items[0].Text != "I can't help with that." {
				t.Fatalf("items = %s", mustJSON(t, resp.Items))
			}
			if got := joinDeltas(evs, llm.EventRefusalDelta); got != "I can't help with that." {
				t.Errorf("refusal deltas join to %q", got)
			}
			if joinDeltas(evs, llm.EventTextDelta) != "" {
				t.Errorf("a refusal was announced as text")
			}
		})
	}
}

// A Responses output message with url_citation annotations keeps them: the
// text item holds the message as its Original and it goes back as it came;
// the web_search_call item goes back verbatim.
func TestResponsesAnnotationsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "resp_annotations.json"), jsonBody(t, 200, "resp_generate.json"))
	p := newResponses(t, b)
	req := textRequest("gpt-test")
	resp, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 2 || resp.Items[0].Type != item.TypeRaw || resp.Text() != "It is sunny in Paris [weather.example]." {
		t.Fatalf("items = %s", mustJSON(t, resp.Items))
	}
	org := resp.Items[1].Original
	if org == nil || org.Provider != openai.ReasoningProvider || !strings.Contains(string(org.Value), `"url_citation"`) {
		t.Fatalf("text item = %s, want the message with its annotations as Original", mustJSON(t, resp.Items[1]))
	}
	next := textRequest("gpt-test")
	next.Items = append(append(next.Items, resp.Items...), item.UserText("And tomorrow?"))
	if _, err := p.Generate(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	golden(t, "resp_annotations_roundtrip.req.json", b.srv.Requests()[1].Body)
}

// Chat keeps a message's annotations in the text item's Original; it has
// no place for them in a request, so the next request sends the text only.
func TestChatAnnotationsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonBody(t, 200, "chat_annotations.json"), jsonBody(t, 200, "chat_text.json"))
	p := newChat(t, b, nil)
	resp, err := p.Generate(context.Background(), textRequest("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Original == nil || resp.Items[0].Original.Provider != openai.ChatProvider ||
		!strings.Contains(string(resp.Items[0].Original.Value), "https://weather.example/paris") {
		t.Fatalf("items = %s", mustJSON(t, resp.Items))
	}
	if resp.Usage.CachedInputTokens != 256 {
		t.Errorf("usage = %+v, want the cached prompt tokens", resp.Usage)
	}
	next := textRequest("gpt-test")
	next.Items = append(append(next.Items, resp.Items...), item.UserText("And tomorrow?"))
	if _, err := p.Generate(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if body := string(b.srv.Requests()[1].Body); strings.Contains(body, "url_citation") || !strings.Contains(body, "It is sunny in Paris") {
		t.Errorf("second request:\n%s", body)
	}
}

// Error chunks inside a 200 Chat stream: a compatible server's numeric
// code is its status (a final 400); OpenAI's insufficient_quota is a final
// 429. Neither is retried.
func TestChatErrorChunks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		status  int
		typ     string
	}{
		{"chat_error_compat.sse", 400, "BadRequestError"},
		{"chat_error_quota.sse", 429, "insufficient_quota"},
		{"chat_error_toplevel.sse", 404, "NotFoundError"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sse(t, tc.fixture), sse(t, "chat_text.sse"))
			p := newChat(t, b, func(c *openai.Config) { c.MaxRetries = transport.Retries(2) })
			_, err := llm.Collect(p.Stream(context.Background(), textRequest("gpt-test")))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != tc.status || pe.Retryable || pe.Type != tc.typ || pe.Message == "" {
				t.Fatalf("err = %v (%+v), want a final %d %s with its message", err, pe, tc.status, tc.typ)
			}
			if n := len(b.srv.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1 (final)", n)
			}
		})
	}
}
