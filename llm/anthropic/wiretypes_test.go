package anthropic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
)

// Every content block type of the current reference that the first
// fixtures did not cover, streamed and whole: thinking with its signature,
// redacted_thinking, an MCP tool use whose input arrives in fragments and
// its result, a text block with citations, and cache usage with the
// per-duration breakdown. Stream and Generate give the same items, no
// client argument deltas are announced, and everything goes back on the
// next turn as it came.
func TestBlockTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(t, "blocks.sse"), jsonBody(t, 200, "blocks.json"), sse(t, "text.sse"))
	p := newMessages(t, b, func(c *anthropic.Config) { c.ThinkingBudget = 2048; c.MaxTokens = 8192 })
	evs, err := collect(p.Stream(context.Background(), textRequest()))
	if err != nil {
		t.Fatal(err)
	}
	str := evs[len(evs)-1].Response
	gen, err := p.Generate(context.Background(), textRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, str.Items), mustJSON(t, gen.Items); got != want {
		t.Fatalf("Stream and Generate disagree\nstream:   %s\ngenerate: %s", got, want)
	}
	types := []item.Type{item.TypeReasoning, item.TypeReasoning, item.TypeRaw, item.TypeRaw, item.TypeText}
	if len(str.Items) != len(types) {
		t.Fatalf("items = %s", mustJSON(t, str.Items))
	}
	for i, typ := range types {
		if str.Items[i].Type != typ {
			t.Errorf("item %d is %s, want %s", i, str.Items[i].Type, typ)
		}
	}
	if n := countType(evs, llm.EventToolCallDelta); n != 0 {
		t.Errorf("%d client argument deltas for an MCP tool the API runs", n)
	}
	if s := str.Items[0].Reasoning.Summary; s != "Check the notes, then answer." {
		t.Errorf("thinking = %q", s)
	}
	if !strings.Contains(mustJSON(t, str.Items[2]), `"input":{"folder":"inbox"}`) {
		t.Errorf("mcp_tool_use lost its input: %s", mustJSON(t, str.Items[2]))
	}
	if org := str.Items[4].Original; org == nil || !strings.Contains(string(org.Value), "char_location") {
		t.Errorf("text lost its citations: %s", mustJSON(t, str.Items[4]))
	}
	want := item.Usage{InputTokens: 12 + 1500 + 3000, OutputTokens: 88, CachedInputTokens: 3000, CacheWriteTokens: 1500, Requests: 1}
	if str.Usage != want || gen.Usage != want {
		t.Errorf("usage: stream %+v, generate %+v, want %+v", str.Usage, gen.Usage, want)
	}
	next := textRequest()
	next.Items = append(append(next.Items, str.Items...), item.UserText("Thanks."))
	if _, err := llm.Collect(p.Stream(context.Background(), next)); err != nil {
		t.Fatal(err)
	}
	golden(t, "blocks_roundtrip.req.json", b.srv.Requests()[2].Body)
}
