package actoviq_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// A run that ended while a side effect was started can still be read and
// settled for the record: Get lists the call as unsettled (it once
// panicked building that view), and Decide records the truth.
func TestGetFinishedRunWithStartedCall(t *testing.T) {
	ctx := context.Background()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entered := make(chan struct{})
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, _ struct{}) (string, error) {
		_ = tool.IdempotencyKey(ctx)
		close(entered)
		<-ctx.Done()
		return "", ctx.Err()
	})
	model := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"})
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "a", Provider: model, Model: "m", Tools: []tool.Tool{pay}}
	done := make(chan *actoviq.RunResult, 1)
	go func() {
		res, _ := rt.Run(ctx, agent, &actoviq.Input{RunID: "r", Items: []item.Item{item.UserText("pay")}})
		done <- res
	}()
	<-entered
	if err := rt.Cancel(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.Status != actoviq.StatusCancelled {
		t.Fatalf("run ended %+v, want cancelled", res)
	}
	info, err := rt.Get(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Unsettled) != 1 || info.Unsettled[0].CallID != "c1" || info.Unsettled[0].IdempotencyKey != "r:c1" {
		t.Fatalf("unsettled %+v, want call c1 with its key", info.Unsettled)
	}
	if err := rt.Decide(ctx, "r", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideCommitted, By: "op", Result: "paid"}); err != nil {
		t.Fatalf("settling the cancelled run's call for the record: %v", err)
	}
	if info, _ = rt.Get(ctx, "r"); len(info.Unsettled) != 0 || info.Status != actoviq.StatusCancelled {
		t.Fatalf("after settling: status %s, unsettled %+v", info.Status, info.Unsettled)
	}
}
