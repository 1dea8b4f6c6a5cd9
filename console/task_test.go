package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// taskTool is answered with a task, records it as mcptool does (kind
// mcp.task), and gives up with an unknown outcome.
type taskTool struct{}

func (taskTool) Spec() tool.Spec {
	return tool.Spec{Name: "jobs__render", Description: "Render", Effect: tool.SideEffect}
}

func (taskTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	if err := tool.RecordHandle(ctx, tool.Handle{Kind: "mcp.task", Data: json.RawMessage(`{"server":"jobs","tool":"render","taskId":"task-9","status":"working"}`),
		Evidence: "MCP task task-9 on server jobs (tool render): working"}); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{}, fmt.Errorf("the deadline passed while task task-9 was working: %w", tool.ErrOutcomeUnknown)
}

// The run page lists an open call's MCP task; "cancel the task" sends
// tasks/cancel through Config.CancelTask once and records it on the call.
func TestCancelTheTask(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []string
	fail := false
	f := setup(t, &setupOpts{cfg: func(c *console.Config) {
		c.CancelTask = func(_ context.Context, server, taskID string) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, server+"/"+taskID)
			if fail {
				return errors.New("server unreachable")
			}
			return nil
		}
	}})
	agent := &actoviq.AgentSpec{ID: "render", Model: "scripted-1", Tools: []tool.Tool{taskTool{}}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "jobs__render", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"})}
	f.interruptedWith(f.rt, agent, "run-t")

	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/run-t", "", "").body)
	for _, want := range []string{"MCP tasks of unsettled calls", "task-9", "data-cancel-task", "Cancel the task"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the run page lacks %q", want)
		}
	}
	if r := f.call("POST", "/api/v1/runs/run-t/calls/call_9/cancel-task", tokenAlice, `{}`); r.status != 404 || r.errCode(t) != "unknown_task" {
		t.Fatalf("unknown call: %d %s", r.status, r.body)
	}
	r := f.call("POST", "/api/v1/runs/run-t/calls/call_1/cancel-task", tokenAlice, `{}`)
	if r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	var out console.CancelTaskResponse
	r.json(t, &out)
	if out.TaskID != "task-9" || out.Server != "jobs" || out.By != "alice" {
		t.Fatalf("answer %+v", out)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	if r := f.call("POST", "/api/v1/runs/run-t/calls/call_1/cancel-task", tokenAlice, `{}`); r.status != 502 || r.errCode(t) != "task_cancel_failed" {
		t.Fatalf("failed cancel: %d %s", r.status, r.body)
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/run-t", tokenAlice, "").json(t, &run)
	if len(run.Tasks) != 1 || len(run.Tasks[0].Notes) != 2 ||
		!strings.Contains(run.Tasks[0].Notes[0], "task-9 on server jobs: acknowledged (alice)") ||
		!strings.Contains(run.Tasks[0].Notes[1], "failed: server unreachable (alice)") {
		t.Fatalf("tasks %+v", run.Tasks)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(sent) != "[jobs/task-9 jobs/task-9]" {
		t.Fatalf("sent %v", sent)
	}
}
