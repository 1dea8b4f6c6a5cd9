package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
)

// TasksExtension is the identifier of the MCP Tasks extension (SEP-2663),
// which this client declares unless [Options.NoTasks] is set.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Handle kinds this package records ([tool.RecordHandle]).
const (
	// HandleTask: a server answered the call with a task; Data holds the
	// task id ([TaskHandle]).
	HandleTask = "mcp.task"
	// HandleInput: a server answered the call with input_required
	// (multi-round-trip, protocol 2026-07-28); Data holds what it asked,
	// and, once the continuation is about to be sent, the answers
	// ([InputHandle]).
	HandleInput = "mcp.input_required"
)

// TaskHandle is the Data of a [HandleTask] handle.
type TaskHandle struct {
	// Server and Tool name the server and the tool on it.
	Server string `json:"server"`
	// Tool is the tool's name on its server.
	Tool string `json:"tool"`
	// TaskID is the server's task id.
	TaskID string `json:"taskId"`
	// Status is the last status seen ("working", "completed", ...).
	Status string `json:"status,omitempty"`
	// TTLMs is the task's time to live as the server gave it (nil:
	// unlimited).
	TTLMs *int64 `json:"ttlMs,omitempty"`
	// CreatedAt is the server's creation time of the task.
	CreatedAt string `json:"createdAt,omitempty"`
	// CancelRequested says tasks/cancel was sent for it, and why.
	CancelRequested string `json:"cancelRequested,omitempty"`
}

// task is a Task of the extension, as CreateTaskResult and tasks/get carry
// it.
type task struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt,omitempty"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

// taskAnswer returns the task of a tools/call answer whose resultType is
// "task", or nil.
func taskAnswer(raw json.RawMessage) (*task, error) {
	if raw == nil {
		return nil, nil
	}
	var probe struct {
		ResultType string `json:"resultType"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.ResultType != "task" {
		return nil, nil
	}
	var tk task
	if err := json.Unmarshal(raw, &tk); err != nil || tk.TaskID == "" {
		return nil, fmt.Errorf("the server answered with a task handle without a task id: %s", truncate(string(raw), 200))
	}
	return &tk, nil
}

// isTaskResult tells a task answer the capture missed: the SDK keeps
// resultType, and writes it back when the result is marshalled.
func isTaskResult(res *mcp.CallToolResult) bool {
	b, err := json.Marshal(res)
	if err != nil {
		return false
	}
	var probe struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.ResultType == "task"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// record writes a handle. Without a recorder (a bare runner) it does
// nothing: there is no ledger to keep it.
func record(ctx context.Context, h tool.Handle) error {
	err := tool.RecordHandle(ctx, h)
	if errors.Is(err, tool.ErrNoRecorder) {
		return nil
	}
	return err
}

func (t *Tool) taskHandle(th TaskHandle, status string) (tool.Handle, error) {
	th.Status = status
	b, err := json.Marshal(th)
	if err != nil {
		return tool.Handle{}, err
	}
	ev := fmt.Sprintf("MCP task %s on server %s (tool %s): %s", th.TaskID, th.Server, th.Tool, status)
	if th.CancelRequested != "" {
		ev += "; tasks/cancel sent (" + th.CancelRequested + ")"
	}
	return tool.Handle{Kind: HandleTask, Data: b, Evidence: t.server.scrub.Text(ev)}, nil
}

// unknownf is an error of unknown outcome naming the server and the tool.
func (t *Tool) unknownf(cause error, format string, args ...any) error {
	sv := t.server
	msg := fmt.Sprintf("mcptool: server %s: tool %s: ", sv.name, t.remote) + fmt.Sprintf(format, args...)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return scrubError(sv.scrub, &unknownError{msg: msg, cause: cause})
}

// startTask records a task the server answered a call with, before
// anything else happens, then follows it.
func (t *Tool) startTask(ctx context.Context, tk *task) (tool.Result, error) {
	th := TaskHandle{Server: t.server.name, Tool: t.remote, TaskID: tk.TaskID, TTLMs: tk.TTLMs, CreatedAt: tk.CreatedAt}
	h, err := t.taskHandle(th, tk.Status)
	if err == nil {
		err = record(ctx, h)
	}
	if err != nil {
		// The task runs on the server, and nothing durable will follow
		// it: its outcome is unknown, with the task id as evidence.
		return tool.Result{}, t.unknownf(err, "the server answered with task %s, and recording it failed; it was not polled", tk.TaskID)
	}
	return t.followTask(ctx, th, tk.PollIntervalMs)
}

// followTask polls tasks/get until the task ends, the call's context ends,
// or the server no longer knows the task. tasks/get is a read: a
// connection that breaks while polling is replaced and polling goes on.
func (t *Tool) followTask(ctx context.Context, th TaskHandle, hintMs int64) (tool.Result, error) {
	sv := t.server
	o := sv.src.opts
	wait := max(o.TaskPoll, time.Duration(hintMs)*time.Millisecond)
	failures := 0
	var lastErr error
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return tool.Result{}, t.taskEnded(ctx, th)
		case <-timer.C:
		}
		wait = min(wait*3/2, max(o.TaskPollMax, time.Duration(hintMs)*time.Millisecond))
		if failures >= 5 {
			return tool.Result{}, t.unknownf(lastErr, "polling task %s failed %d times in a row; the task may still complete on the server", th.TaskID, failures)
		}
		sess, err := sv.get(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return tool.Result{}, t.taskEnded(ctx, th)
			}
			failures, lastErr = failures+1, err
			continue
		}
		raw, err := sv.rawRequest(ctx, sess, "tasks/get", map[string]any{"taskId": th.TaskID})
		if err != nil {
			if ctx.Err() != nil {
				return tool.Result{}, t.taskEnded(ctx, th)
			}
			var werr *jsonrpc.Error
			if errors.As(err, &werr) {
				if werr.Code == jsonrpc.CodeInvalidParams || werr.Code == jsonrpc.CodeMethodNotFound {
					return tool.Result{}, t.unknownf(nil, "the server no longer knows task %s (JSON-RPC %d: %s): it expired or was lost; its outcome is unknown", th.TaskID, werr.Code, werr.Message)
				}
			} else {
				// The connection broke: polling is a read, so a new
				// connection may poll again.
				sv.drop(sess)
			}
			failures, lastErr = failures+1, err
			continue
		}
		failures = 0
		var tk task
		if err := json.Unmarshal(raw, &tk); err != nil {
			return tool.Result{}, t.unknownf(err, "tasks/get of task %s answered something unreadable", th.TaskID)
		}
		if tk.TaskID != "" && tk.TaskID != th.TaskID {
			return tool.Result{}, t.unknownf(nil, "tasks/get of task %s answered about task %s instead", th.TaskID, truncate(tk.TaskID, 100))
		}
		if tk.PollIntervalMs > hintMs {
			hintMs = tk.PollIntervalMs
			wait = max(wait, time.Duration(hintMs)*time.Millisecond)
		}
		switch tk.Status {
		case "working":
			continue
		case "completed":
			var probe struct {
				ResultType string `json:"resultType"`
			}
			if json.Unmarshal(tk.Result, &probe) == nil && probe.ResultType != "" && probe.ResultType != "complete" {
				return tool.Result{}, t.unknownf(nil, "task %s completed with a result of type %q, not a final tool result", th.TaskID, truncate(probe.ResultType, 50))
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(tk.Result, &res); err != nil {
				return tool.Result{}, t.unknownf(err, "task %s completed with a result that is not a tool result", th.TaskID)
			}
			return t.result(&res), nil
		case "failed":
			if tk.Error != nil && tk.Error.Code == jsonrpc.CodeInvalidParams {
				return tool.Result{}, &tool.Error{Kind: tool.KindValidation, Tool: t.spec.Name,
					Violations: []string{sv.scrub.Text(tk.Error.Message)},
					Err:        sv.errorf("tool %s: task %s failed: the server refused the arguments", t.remote, th.TaskID)}
			}
			msg := tk.StatusMessage
			if tk.Error != nil {
				msg = fmt.Sprintf("JSON-RPC %d: %s", tk.Error.Code, tk.Error.Message)
			}
			return tool.Result{}, t.unknownf(nil, "task %s failed (%s), which does not say whether the tool acted", th.TaskID, msg)
		case "cancelled":
			return tool.Result{}, t.unknownf(nil, "task %s was cancelled on the server (%s); what it did before is unknown", th.TaskID, tk.StatusMessage)
		case "input_required":
			return tool.Result{}, t.unknownf(nil, "task %s waits for input (tasks/update), which this client does not send; it is still open on the server", th.TaskID)
		default:
			return tool.Result{}, t.unknownf(nil, "task %s has status %q, which this client does not know", th.TaskID, tk.Status)
		}
	}
}

// taskEnded is what a call whose context ended while its task was being
// polled returns. A cancelled call (the run was cancelled) cancels the
// task with tasks/cancel and records that; a call past its deadline leaves
// the task running, and so does a call whose drive stopped without a
// decision (tool.DriveStopped: the process shuts down, its worker released
// the run), whose next drive polls the task. All are unknown outcomes with
// the task id.
func (t *Tool) taskEnded(ctx context.Context, th TaskHandle) error {
	if tool.DriveStopped(ctx) {
		return t.unknownf(context.Cause(ctx), "the run's drive stopped while task %s was working; the task was left running, and the run's next drive polls it", th.TaskID)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		return t.unknownf(ctx.Err(), "the call's deadline passed while task %s was working; it may still complete on the server", th.TaskID)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := t.server.cancelTask(cctx, th.TaskID)
	th.CancelRequested = "the call was cancelled"
	if err != nil {
		th.CancelRequested += "; tasks/cancel failed: " + err.Error()
	}
	if h, herr := t.taskHandle(th, "cancel_requested"); herr == nil {
		_ = record(cctx, h)
	}
	if err != nil {
		return t.unknownf(err, "the call was cancelled while task %s was working, and tasks/cancel failed", th.TaskID)
	}
	return t.unknownf(ctx.Err(), "the call was cancelled while task %s was working; tasks/cancel was sent (cancellation is cooperative: what the task did is unknown)", th.TaskID)
}

// cancelTask sends tasks/cancel for a task, once.
func (sv *server) cancelTask(ctx context.Context, taskID string) error {
	sess, err := sv.get(ctx)
	if err != nil {
		return err
	}
	if _, err := sv.rawRequest(ctx, sess, "tasks/cancel", map[string]any{"taskId": taskID}); err != nil {
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			sv.drop(sess)
		}
		return scrubError(sv.scrub, err)
	}
	return nil
}

// CancelTask asks the named server to cancel a task (tasks/cancel of the
// Tasks extension), for an operator who decided that a task a call left
// running must stop. Cancellation is cooperative: the server may have done
// part of the work. The request is sent once; the error says whether the
// server acknowledged it.
func (s *Source) CancelTask(ctx context.Context, server, taskID string) error {
	sv, ok := s.servers[server]
	if !ok {
		return fmt.Errorf("mcptool: no enabled server %q", server)
	}
	if taskID == "" {
		return errors.New("mcptool: CancelTask: empty task id")
	}
	if err := sv.cancelTask(ctx, taskID); err != nil {
		return fmt.Errorf("mcptool: server %s: tasks/cancel %s: %w", server, taskID, err)
	}
	return nil
}

// TaskStatus reads a task's status on the named server (tasks/get, a pure
// read): "working", "input_required", "completed", "failed" or
// "cancelled", and the server's status message. A server that no longer
// knows the task answers with a JSON-RPC error.
func (s *Source) TaskStatus(ctx context.Context, server, taskID string) (status, message string, err error) {
	sv, ok := s.servers[server]
	if !ok {
		return "", "", fmt.Errorf("mcptool: no enabled server %q", server)
	}
	sess, err := sv.get(ctx)
	if err != nil {
		return "", "", err
	}
	raw, err := sv.rawRequest(ctx, sess, "tasks/get", map[string]any{"taskId": taskID})
	if err != nil {
		return "", "", scrubError(sv.scrub, err)
	}
	var tk task
	if err := json.Unmarshal(raw, &tk); err != nil {
		return "", "", err
	}
	return tk.Status, sv.scrub.Text(tk.StatusMessage), nil
}
