package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// Turn is one scripted model response.
type Turn struct {
	// Text is the assistant's text; streamed word by word.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls the model asks for, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is reported with the response; zero means a small fixed count.
	Usage item.Usage `json:"usage,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call id the provider reports; empty lets the runtime assign one.
	ID string `json:"id"`
	// Name is the tool to call.
	Name string `json:"name"`
	// Arguments is the JSON the model "produces"; it need not be valid, to test bad output.
	Arguments json.RawMessage `json:"arguments"`
}

// Provider answers requests from a script.
type Provider struct {
	turns []Turn
	calls atomic.Int64

	// checks continues the transcript check of a run from one request to
	// the next: a runtime appends to one transcript, so a request whose
	// items start at the same element as an earlier one's is that
	// transcript grown, and only its new items are checked (each item once
	// over a run, instead of the whole transcript on every turn).
	mu     sync.Mutex
	checks map[*item.Item]*llm.TranscriptCheck
}

// check validates a request's transcript, incrementally when it continues
// one seen before.
func (p *Provider) check(items []item.Item) error {
	if len(items) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.checks[&items[0]]
	if !ok {
		if p.checks == nil || len(p.checks) >= 64 {
			p.checks = map[*item.Item]*llm.TranscriptCheck{} // a bound: forget older runs
		}
		c = &llm.TranscriptCheck{}
		p.checks[&items[0]] = c
	}
	return c.Check(items)
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider that plays turns in order.
func New(turns ...Turn) *Provider { return &Provider{turns: turns} }

// Load reads a script file: a JSON array of turns, or an object with a
// "turns" array.
func Load(path string) (*Provider, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	return Parse(b)
}

// Parse decodes a script.
func Parse(b []byte) (*Provider, error) {
	var turns []Turn
	if err := json.Unmarshal(b, &turns); err != nil {
		var doc struct {
			Turns []Turn `json:"turns"`
		}
		if err2 := json.Unmarshal(b, &doc); err2 != nil {
			return nil, fmt.Errorf("scripted: script is neither an array of turns nor {\"turns\": [...]}: %w", err)
		}
		turns = doc.Turns
	}
	for i, t := range turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("scripted: turn %d call %d: missing name", i, j)
			}
			if len(c.Arguments) == 0 {
				turns[i].ToolCalls[j].Arguments = json.RawMessage(`{}`)
			}
		}
	}
	return New(turns...), nil
}

// Name implements [llm.Provider].
func (p *Provider) Name() string { return "scripted" }

// Capabilities implements [llm.Provider]: everything.
func (p *Provider) Capabilities(string) llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true, ImageInput: true, Reasoning: true, StructuredOutput: true}
}

// Calls reports how many requests the provider answered.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// TurnIndex is the script position a transcript asks for.
func TurnIndex(items []item.Item) int {
	n := 0
	prevAssistant := false
	for _, it := range items {
		a := it.Role == item.RoleAssistant
		if a && !prevAssistant {
			n++
		}
		prevAssistant = a
	}
	return n
}

// Generate implements [llm.Provider].
func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.check(req.Items); err != nil {
		return nil, fmt.Errorf("scripted: refusing a transcript the real providers would reject: %w", err)
	}
	p.calls.Add(1)
	idx := TurnIndex(req.Items)
	if idx >= len(p.turns) {
		return nil, &llm.ProviderError{Provider: "scripted", Status: 400, Code: "script_exhausted",
			Message: fmt.Sprintf("script has %d turns; turn %d was asked for", len(p.turns), idx+1)}
	}
	t := p.turns[idx]
	resp := &llm.Response{ID: fmt.Sprintf("scripted-%d", idx+1), Model: req.Model, Usage: t.Usage, StopReason: llm.StopEndTurn}
	if resp.Usage == (item.Usage{}) {
		resp.Usage = item.Usage{InputTokens: int64(10 * len(req.Items)), OutputTokens: int64(5 + len(t.Text)/4), Requests: 1}
	}
	if t.Text != "" || len(t.ToolCalls) == 0 {
		resp.Items = append(resp.Items, item.AssistantText(t.Text))
	}
	for _, c := range t.ToolCalls {
		resp.Items = append(resp.Items, item.NewToolCall(c.ID, c.Name, c.Arguments))
	}
	if len(t.ToolCalls) > 0 {
		resp.StopReason = llm.StopToolUse
	}
	return resp, nil
}

// Stream implements [llm.Provider]: the text arrives word by word, then
// each item, then the whole response.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		resp, err := p.Generate(ctx, req)
		if err != nil {
			yield(llm.StreamEvent{}, err)
			return
		}
		for i, it := range resp.Items {
			if it.Type == item.TypeText {
				for _, w := range strings.SplitAfter(it.Text, " ") {
					if w != "" && !yield(llm.StreamEvent{Type: llm.EventTextDelta, Index: i, Delta: w}, nil) {
						return
					}
				}
			}
			it := it
			if !yield(llm.StreamEvent{Type: llm.EventItemDone, Index: i, Item: &it}, nil) {
				return
			}
		}
		yield(llm.StreamEvent{Type: llm.EventDone, Response: resp}, nil)
	}
}
