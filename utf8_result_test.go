package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// fixedTool returns one result, whatever its arguments.
type fixedTool struct {
	name string
	res  tool.Result
}

func (f *fixedTool) Spec() tool.Spec {
	return tool.Spec{Name: f.name, Description: "returns a fixed result", Effect: tool.SideEffect}
}

func (f *fixedTool) Call(context.Context, json.RawMessage) (tool.Result, error) { return f.res, nil }

// A tool's result whose structured data (Result.Data, raw JSON) holds
// bytes that are not UTF-8 is recorded alike on every store, each such byte
// replaced by U+FFFD as encoding its Content replaces its own, with a
// notice in the ledger entry; a NUL (\u0000 in the JSON) is kept. On main,
// PostgreSQL refused the committed write ("invalid byte sequence for
// encoding UTF8", untyped): the side effect had run and its result was
// lost, the call left started; memory and SQLite stored the bytes.
func TestToolResultNotUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		a := &actoviq.AgentSpec{ID: "utf8", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c0", Name: "ok", Arguments: json.RawMessage(`{}`)}}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "bad", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "nul", Arguments: json.RawMessage(`{}`)}}},
			scripted.Turn{Text: "done"}),
			Tools: []tool.Tool{
				&fixedTool{name: "ok", res: tool.Result{Content: "fine"}},
				&fixedTool{name: "bad", res: tool.Result{Content: "bad \xff\xfe end", Data: json.RawMessage("{\"s\":\"bad \xff end\",\"cut\":\"\xc3\",\"ok\":\"\xc3\xa9\"}")}},
				&fixedTool{name: "nul", res: tool.Result{Content: "nul \x00 end", Data: json.RawMessage(`{"s":"nul \u0000 end"}`)}},
			}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "u1", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		info, err := rt.Get(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"c0": `{"content":"fine"}`,
			"c1": `{"content":"bad \ufffd\ufffd end","data":{"s":"bad \ufffd end","cut":"\ufffd","ok":"é"}}`,
			"c2": `{"content":"nul \u0000 end","data":{"s":"nul \u0000 end"}}`,
		}
		if len(info.Ledger) != 3 {
			t.Fatalf("%d ledger entries", len(info.Ledger))
		}
		for _, en := range info.Ledger {
			if en.State != store.LedgerCommitted || string(en.Result) != want[en.CallID] {
				t.Errorf("%s: %s %s, want committed %s", en.CallID, en.State, en.Result, want[en.CallID])
			}
			var notice struct {
				Output struct {
					NotUTF8 int `json:"not_utf8"`
				} `json:"output"`
			}
			if len(en.Error) > 0 {
				if err := json.Unmarshal(en.Error, &notice); err != nil {
					t.Fatalf("%s: error %s: %v", en.CallID, en.Error, err)
				}
			}
			if wantN := map[string]int{"c1": 2}[en.CallID]; notice.Output.NotUTF8 != wantN {
				t.Errorf("%s: notice %s, want not_utf8 %d", en.CallID, en.Error, wantN)
			}
		}
		var data []string
		for _, it := range info.Transcript {
			if it.Type == item.TypeToolResult && it.ToolResult != nil && len(it.ToolResult.Data) > 0 {
				data = append(data, string(it.ToolResult.Data))
			}
		}
		if len(data) != 2 || data[0] != `{"s":"bad \ufffd end","cut":"\ufffd","ok":"é"}` || data[1] != `{"s":"nul \u0000 end"}` {
			t.Fatalf("transcript data %q", data)
		}
	})
}

// A tool call whose name and id are not UTF-8 (a provider written in Go
// may make them; JSON decoding never does) is recorded alike on every
// store: the id is replaced by a ledger-assigned one, as any unusable id,
// and the name is recorded as its JSON encoding reads back (each such
// byte U+FFFD); no tool has that name, so the call is answered as
// unknown and the run goes on. A run id that is not UTF-8 is refused
// before anything is stored (*IDError). On main PostgreSQL refused the
// response's write (untyped "invalid byte sequence for encoding UTF8")
// and the run could not go on; memory and SQLite stored the bytes.
func TestToolCallNameNotUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ok := &fixedTool{name: "ok", res: tool.Result{Content: "fine"}}
		a := &actoviq.AgentSpec{ID: "utf8", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1\xff", Name: "ok\xff\xfe", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "ok", Arguments: json.RawMessage(`{}`)}}},
			scripted.Turn{Text: "done"}),
			Tools: []tool.Tool{ok}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "u2", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		info, err := rt.Get(ctx, "u2")
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Ledger) != 2 {
			t.Fatalf("%d ledger entries", len(info.Ledger))
		}
		en := info.Ledger[0]
		if en.Tool != "ok\ufffd\ufffd" || en.CallID != "call_t1_0" || en.IdempotencyKey != "u2:call_t1_0" || en.State != store.LedgerCommitted ||
			!strings.Contains(string(en.Result), "not found") {
			t.Fatalf("the call with a name and id not UTF-8: tool %q, id %q, key %q, %s %s", en.Tool, en.CallID, en.IdempotencyKey, en.State, en.Result)
		}
		if en := info.Ledger[1]; en.CallID != "c2" || en.State != store.LedgerCommitted || string(en.Result) != `{"content":"fine"}` {
			t.Fatalf("the next call: %+v", en)
		}
		_, err = rt.Run(ctx, a, &actoviq.Input{RunID: "u\xff", Items: []item.Item{item.UserText("go")}})
		var ide *actoviq.IDError
		if !errors.As(err, &ide) {
			t.Fatalf("a run id not UTF-8: %v, want an *IDError", err)
		}
	})
}
