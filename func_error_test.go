package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// What tool.Func's doc promises: an error from fn is an error result the
// model sees (the call is not run again); an error wrapping
// ErrOutcomeUnknown makes the outcome unknown (a side effect then waits for
// reconciliation).
func TestFuncErrorsAsDocumented(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		status  actoviq.Status
		inTrans string
	}{
		{"plain error", errors.New("bank said no"), actoviq.StatusCompleted, "bank said no"},
		{"outcome unknown", fmt.Errorf("reset after send: %w", tool.ErrOutcomeUnknown), actoviq.StatusInterrupted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, in struct{}) (string, error) {
				calls++
				return "", tc.err
			})
			model := scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`)}}},
				scripted.Turn{Text: "ok"},
			)
			rt, _ := actoviq.New(storemem.New(nil), nil)
			defer rt.Close()
			agent := &actoviq.AgentSpec{ID: "a", Provider: model, Model: "m", Tools: []tool.Tool{pay}}
			res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r", Items: []item.Item{item.UserText("pay")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || calls != 1 {
				t.Fatalf("status %s after %d calls, want %s after 1", res.Status, calls, tc.status)
			}
			info, _ := rt.Get(context.Background(), "r")
			found := false
			for _, it := range info.Transcript {
				if it.ToolResult != nil && it.ToolResult.IsError && strings.Contains(it.ToolResult.Content, tc.inTrans) {
					found = true
				}
			}
			if tc.inTrans != "" && !found {
				t.Fatalf("the model never saw an error result with %q: %+v", tc.inTrans, info.Transcript)
			}
			if tc.status == actoviq.StatusInterrupted && res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
				t.Fatalf("interruption %+v, want reconciliation", res.Interruptions[0])
			}
		})
	}
}
