package actoviq_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// countingTool counts its calls and returns a fixed result.
type countingTool struct {
	name  string
	calls atomic.Int64
}

func (c *countingTool) Spec() tool.Spec {
	return tool.Spec{Name: c.name, Description: "counts its calls", Effect: tool.SideEffect}
}

func (c *countingTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	c.calls.Add(1)
	return tool.Result{Content: "paid"}, nil
}

// A tool call whose raw JSON arguments hold bytes that are not UTF-8 (a
// provider written in Go may hand them over; JSON decoding never makes
// them) is malformed model output, recorded alike on every store: never
// run (running it with the bytes replaced would run arguments the model
// did not give), answered with an error result the model sees, its
// arguments kept as evidence with each such byte U+FFFD (secrets
// redacted), and the run goes on. The next call, in UTF-8, runs. On main
// every store refused the response's write (*store.InvalidError: JSON
// not in UTF-8): the run stopped, resumable, and each resume asked the
// model again for an answer that could fail the same way.
func TestToolArgumentsNotUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		pay := &countingTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "utf8args", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage("{\"to\":\"caf\xe9 \xff\",\"api_key\":\"sk-live-123\"}")}}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "pay", Arguments: json.RawMessage(`{"to":"café"}`)}}},
			scripted.Turn{Text: "done"}),
			Tools: []tool.Tool{pay}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "ua", Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		if n := pay.calls.Load(); n != 1 {
			t.Fatalf("the tool ran %d times, want once (c2)", n)
		}
		info, err := rt.Get(ctx, "ua")
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Ledger) != 2 {
			t.Fatalf("%d ledger entries", len(info.Ledger))
		}
		en := info.Ledger[0]
		if en.CallID != "c1" || en.State != store.LedgerCommitted || en.Attempt != 0 || !strings.Contains(string(en.Error), "malformed_arguments") ||
			!strings.Contains(string(en.Error), "2 bytes that are not UTF-8") {
			t.Fatalf("c1: %s attempt %d error %s", en.State, en.Attempt, en.Error)
		}
		if !utf8.Valid(en.Args) || !strings.Contains(string(en.Args), `"to":"caf\ufffd \ufffd"`) || strings.Contains(string(en.Args), "sk-live-123") {
			t.Fatalf("c1's arguments as kept: %q", en.Args)
		}
		if en := info.Ledger[1]; en.CallID != "c2" || en.State != store.LedgerCommitted || string(en.Result) != `{"content":"paid"}` {
			t.Fatalf("c2: %+v", en)
		}
		var c1Result *item.ToolResult
		for _, it := range info.Transcript {
			if it.Type == item.TypeToolCall && it.ToolCall.ID == "c1" && string(it.ToolCall.Arguments) != `{}` {
				t.Fatalf("the transcript keeps c1's arguments: %q", it.ToolCall.Arguments)
			}
			if it.Type == item.TypeToolResult && it.ToolResult.CallID == "c1" {
				c1Result = it.ToolResult
			}
		}
		if c1Result == nil || !c1Result.IsError || !strings.Contains(c1Result.Content, "not UTF-8") {
			t.Fatalf("c1's result to the model: %+v", c1Result)
		}
	})
}

// rawProvider answers every call with one item and a text, as a provider
// written in Go may make them.
type rawProvider struct {
	*scripted.Provider
	it item.Item
}

func (g *rawProvider) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Items: []item.Item{g.it, item.AssistantText("done")}}, nil
}

func (g *rawProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		r, _ := g.Generate(ctx, req)
		yield(llm.StreamEvent{Type: llm.EventDone, Response: r}, nil)
	}
}

// A response's raw item value or structured output whose JSON strings
// hold bytes that are not UTF-8 is recorded alike on every store, each
// such byte as U+FFFD, counted in the model.response event (NotUTF8); the
// run completes. On main every store refused the checkpoint's write
// (*store.InvalidError) and the run stopped, to ask the model again.
func TestResponseRawJSONNotUTF8(t *testing.T) {
	for name, it := range map[string]item.Item{
		"raw":        {Type: item.TypeRaw, Raw: &item.Raw{Provider: "x", Value: json.RawMessage("{\"a\":\"b\xff\xfe\"}")}},
		"structured": {Type: item.TypeStructured, Role: item.RoleAssistant, Structured: json.RawMessage("{\"a\":\"b\xff\xfe\"}")},
	} {
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st store.Store) {
				ctx := context.Background()
				rt, err := actoviq.New(st, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				a := &actoviq.AgentSpec{ID: "rawutf8", Model: "scripted-1", Provider: &rawProvider{Provider: scripted.New(), it: it}}
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "rr", Items: []item.Item{item.UserText("go")}})
				if err != nil || res.Status != actoviq.StatusCompleted {
					t.Fatalf("run: %+v %v", res, err)
				}
				info, err := rt.Get(ctx, "rr")
				if err != nil {
					t.Fatal(err)
				}
				var got string
				for _, it := range info.Transcript {
					switch {
					case it.Type == item.TypeRaw:
						got = string(it.Raw.Value)
					case it.Type == item.TypeStructured:
						got = string(it.Structured)
					}
				}
				if got != `{"a":"b\ufffd\ufffd"}` {
					t.Fatalf("stored %q", got)
				}
				evs, err := rt.Events(ctx, "rr", nil)
				if err != nil {
					t.Fatal(err)
				}
				n := -1
				for _, ev := range evs {
					if ev.Type == actoviq.EvModelResponse {
						var d actoviq.ModelResponseData
						if err := json.Unmarshal(ev.Data, &d); err != nil {
							t.Fatal(err)
						}
						n = d.NotUTF8
					}
				}
				if n != 2 {
					t.Fatalf("model.response not_utf8 %d, want 2", n)
				}
			})
		})
	}
}
