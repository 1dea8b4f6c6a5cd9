package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// TestMCPTaskCancel: `actoviq mcp task` reads a task's status and `mcp
// cancel-task` sends tasks/cancel once, against a go-sdk server (stateless,
// protocol 2026-07-28) with the Tasks extension's methods in front of it.
func TestMCPTaskCancel(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, nil)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	status := map[string]string{"task-7": "working"}
	var cancels []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tasks/get" && msg.Method != "tasks/cancel" {
			sdk.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		st, ok := status[msg.Params.TaskID]
		if !ok {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32602, "message": "unknown task"}})
			return
		}
		res := map[string]any{"resultType": "complete"}
		if msg.Method == "tasks/cancel" {
			cancels = append(cancels, msg.Params.TaskID)
			status[msg.Params.TaskID] = "cancelled"
		} else {
			res = map[string]any{"resultType": "complete", "taskId": msg.Params.TaskID, "status": st, "statusMessage": "step 2 of 5",
				"createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z", "ttlMs": nil}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": res})
	}))
	defer ts.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, []byte(`{"mcpServers":{"jobs":{"type":"http","url":"`+ts.URL+`","oauth":{"disabled":true}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	envs := map[string]string{"ACTOVIQ_MCP_TOKENS": filepath.Join(dir, "tokens.json")}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return envs[k] }, executable: os.Executable}
		code := e.main(context.Background(), args)
		return code, out.String() + errb.String()
	}
	if code, out := run("mcp", "task", "jobs", "task-7", "--mcp-config", cfgPath); code != 0 || !strings.Contains(out, "Task task-7 on jobs: working (step 2 of 5)") {
		t.Fatalf("task: exit %d\n%s", code, out)
	}
	if code, out := run("mcp", "cancel-task", "jobs", "task-7", "--mcp-config", cfgPath); code != 0 || !strings.Contains(out, "tasks/cancel acknowledged") {
		t.Fatalf("cancel-task: exit %d\n%s", code, out)
	}
	if code, out := run("mcp", "task", "jobs", "task-7", "--mcp-config", cfgPath); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("task after cancel: exit %d\n%s", code, out)
	}
	if code, out := run("mcp", "cancel-task", "jobs", "task-8", "--mcp-config", cfgPath); code != ExitFailed || !strings.Contains(out, "unknown task") {
		t.Fatalf("cancel of an unknown task: exit %d\n%s", code, out)
	}
	if code, _ := run("mcp", "cancel-task", "nope", "task-7", "--mcp-config", cfgPath); code != ExitUsage {
		t.Fatalf("cancel on an unknown server: exit %d", code)
	}
	mu.Lock()
	if len(cancels) != 1 || cancels[0] != "task-7" {
		t.Fatalf("cancels %v, want one for task-7", cancels)
	}
	status["task-8"] = "working"
	mu.Unlock()

	// With --run and --call the cancel is recorded on the call.
	db := filepath.Join(dir, "runs.db")
	st, err := storesqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	unknown := tool.Func(tool.Spec{Name: "render", Effect: tool.SideEffect}, func(ctx context.Context, _ struct{}) (string, error) {
		if err := tool.RecordHandle(ctx, tool.Handle{Kind: "mcp.task", Data: json.RawMessage(`{"server":"jobs","tool":"render","taskId":"task-8","status":"working"}`)}); err != nil {
			return "", err
		}
		return "", fmt.Errorf("task task-8 still working: %w", tool.ErrOutcomeUnknown)
	})
	agent := &actoviq.AgentSpec{ID: "r", Model: "scripted-1", Tools: []tool.Tool{unknown}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "render", Arguments: json.RawMessage(`{}`)}}}, scripted.Turn{Text: "done"})}
	if res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-8", Items: []item.Item{item.UserText("go")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %+v %v", res, err)
	}
	rt.Close()
	st.Close()
	if code, out := run("mcp", "cancel-task", "jobs", "task-8", "--mcp-config", cfgPath, "--run", "run-8", "--call", "c1", "--store", "sqlite:"+db, "--by", "ops"); code != 0 ||
		!strings.Contains(out, "Recorded on call c1 of run run-8 by ops") {
		t.Fatalf("cancel-task --run: exit %d\n%s", code, out)
	}
	if code, _ := run("mcp", "cancel-task", "jobs", "task-8", "--mcp-config", cfgPath, "--run", "run-8"); code != ExitUsage {
		t.Fatalf("--run without --call: exit %d", code)
	}
	// A task the call did not record, or a call that does not exist, is
	// refused before anything is sent: a cancel is never sent and then
	// left unrecorded, or recorded on a call whose task it is not.
	mu.Lock()
	status["task-9"] = "working"
	mu.Unlock()
	for _, bad := range [][]string{{"task-9", "c1"}, {"task-8", "c9"}} {
		code, out := run("mcp", "cancel-task", "jobs", bad[0], "--mcp-config", cfgPath, "--run", "run-8", "--call", bad[1], "--store", "sqlite:"+db, "--by", "ops")
		if code != ExitUsage || !strings.Contains(out, "nothing was sent") {
			t.Fatalf("cancel-task %s --call %s: exit %d\n%s", bad[0], bad[1], code, out)
		}
	}
	mu.Lock()
	if len(cancels) != 2 {
		t.Fatalf("cancels %v, want task-7 and task-8 only", cancels)
	}
	mu.Unlock()
	st, err = storesqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err = actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	evs, err := rt.Events(context.Background(), "run-8", nil)
	if err != nil {
		t.Fatal(err)
	}
	var noted bool
	for _, ev := range evs {
		if ev.Type == actoviq.EvToolNote && strings.Contains(string(ev.Data), "task-8 on server jobs: acknowledged") && strings.Contains(string(ev.Data), `"by":"ops"`) {
			noted = true
		}
	}
	if !noted {
		t.Fatal("the cancel was not recorded on the call")
	}
}
