package actoviq_test

import (
	"context"
	"encoding/json"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// A sink that scribbles over the event data it receives changes nothing
// stored: the run's events, ledger and transcript read as written.
func TestReview6SinkMutatesData(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		var seen []actoviq.Event
		scribble := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
			if ev.Seq == 0 {
				return
			}
			cp := ev
			cp.Data = append(json.RawMessage(nil), ev.Data...)
			seen = append(seen, cp)
			for i := range ev.Data {
				ev.Data[i] = ' '
			}
		})
		rt, err := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{scribble}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		a := &actoviq.AgentSpec{ID: "s", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "ok", Arguments: json.RawMessage(`{"a":1}`)}, {ID: "c2", Name: "ok", Arguments: json.RawMessage(`{"a":2}`)}}},
			scripted.Turn{Text: "done"}),
			Tools: []tool.Tool{&fixedTool{name: "ok", res: tool.Result{Content: "fine", Data: json.RawMessage(`{"v":1}`)}}}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "u1", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		evs, err := rt.Events(ctx, "u1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(seen) {
			t.Fatalf("%d stored events, sink saw %d", len(evs), len(seen))
		}
		for i, ev := range evs {
			if string(ev.Data) != string(seen[i].Data) {
				t.Errorf("event %d %s stored %s, emitted %s", ev.Seq, ev.Type, ev.Data, seen[i].Data)
			}
		}
		info, err := rt.Get(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range info.Ledger {
			if string(en.Result) != `{"content":"fine","data":{"v":1}}` || !json.Valid(en.Args) {
				t.Errorf("ledger %s: result %s args %s", en.CallID, en.Result, en.Args)
			}
		}
		for _, it := range info.Transcript {
			if it.Type == item.TypeToolCall && !json.Valid(it.ToolCall.Arguments) {
				t.Errorf("transcript call %s: %s", it.ToolCall.ID, it.ToolCall.Arguments)
			}
			if it.Type == item.TypeToolResult && string(it.ToolResult.Data) != `{"v":1}` {
				t.Errorf("transcript result %s: %s", it.ToolResult.CallID, it.ToolResult.Data)
			}
		}
	})
}
