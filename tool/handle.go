package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// MaxHandleSize bounds the JSON size of a [Handle] (its Data and Evidence
// together): a handle is a reference, not a result.
const MaxHandleSize = 64 << 10

// ErrNoRecorder is returned (wrapped) by [RecordHandle] when the call runs
// without a durable ledger entry to write to (a bare [Runner], a test): the
// tool may carry on, but nothing will follow the call after a crash.
var ErrNoRecorder = errors.New("tool: no handle recorder: the call has no durable ledger entry")

// Handle is what a tool records on its own ledger entry while a call runs:
// a reference the far side gave it (a task id, a job URL, the state of a
// request that waits for input) with which the call can be followed after a
// crash without being sent again. It turns "outcome unknown after a crash"
// into "ask the far side".
//
// A call's handles are kept in order with the call (the actoviq runtime
// stores each as a tool.handle event of the call, fenced like every write of
// the run), so the history of its steps is on record; the last one of the
// call's current attempt is what recovery hands to [Resumer.Resume].
type Handle struct {
	// Kind names the handle's type. It belongs to the tool ("mcp.task",
	// "mcp.input_required", "http.in_progress") and tells its Resume what
	// Data holds. Required.
	Kind string `json:"kind"`
	// Data is the tool's own JSON (an object), opaque to the runtime. It is
	// stored after the runtime's redaction of secret-looking keys, like a
	// call's arguments: put no secret in it, or it will not come back.
	Data json.RawMessage `json:"data,omitempty"`
	// Evidence is one line for a person: what the far side said ("task
	// 7f3a working"). It is shown with the call in the operator's views.
	Evidence string `json:"evidence,omitempty"`
}

// Validate checks that the handle has a kind, that Data (when set) is one
// JSON object, and that it fits in [MaxHandleSize].
func (h Handle) Validate() error {
	if h.Kind == "" {
		return errors.New("tool: handle: empty kind")
	}
	if d := bytes.TrimSpace(h.Data); len(d) > 0 {
		if d[0] != '{' || !jsonenc.Valid(d) {
			return fmt.Errorf("tool: handle %s: data must be a JSON object", h.Kind)
		}
	}
	if n := len(h.Data) + len(h.Evidence); n > MaxHandleSize {
		return fmt.Errorf("tool: handle %s: %d bytes, more than %d", h.Kind, n, MaxHandleSize)
	}
	return nil
}

// HandleRecorder writes a running call's handle with its ledger entry. The
// actoviq runtime puts one in the context of every call it runs (and of
// every [Resumer.Resume]); a tool reaches it through [RecordHandle].
type HandleRecorder interface {
	// RecordHandle writes h with the running call's ledger entry, under
	// the run's fence, and returns only once the write is durable. An
	// error means nothing may be assumed recorded.
	RecordHandle(ctx context.Context, h Handle) error
}

// HandleRecorderFunc adapts a function to [HandleRecorder].
type HandleRecorderFunc func(ctx context.Context, h Handle) error

// RecordHandle calls f.
func (f HandleRecorderFunc) RecordHandle(ctx context.Context, h Handle) error { return f(ctx, h) }

// WithHandleRecorder returns a context whose calls record their handles
// through r. The runtime sets it; tests of a tool set their own.
func WithHandleRecorder(ctx context.Context, r HandleRecorder) context.Context {
	return context.WithValue(ctx, keyRecorder, r)
}

// RecordHandle durably records h on the running call's ledger entry and
// returns once the write is durable, so that a crash from then on finds it.
// It is how a tool keeps what the far side gave it for the call: the task id
// an MCP server returned, the state of a multi-round-trip request, the job
// an HTTP server said is "in progress". Record before acting on it (before
// polling, before sending a continuation), and record each new step again.
//
// An invalid handle is an error and nothing is written. Without a recorder
// in ctx the error wraps [ErrNoRecorder]. Any other error means the write did
// not happen or its fate is unknown (the run lost its claim, the store
// failed); a tool should then stop and report its call's outcome as unknown
// ([ErrOutcomeUnknown]) with the handle in the message, since nothing
// durable will follow the call.
//
// After a crash, a call that was started and holds a handle is given to the
// tool's [Resumer] instead of being marked unknown.
func RecordHandle(ctx context.Context, h Handle) error {
	if err := h.Validate(); err != nil {
		return err
	}
	r, _ := ctx.Value(keyRecorder).(HandleRecorder)
	if r == nil {
		return fmt.Errorf("tool: record handle %s: %w", h.Kind, ErrNoRecorder)
	}
	return r.RecordHandle(ctx, h)
}

// Resumer is implemented by tools that record handles ([RecordHandle]) and
// can pick a call up from its last handle after a crash, a restart or a
// takeover. It is optional: the runtime finds it by type assertion.
//
// When recovery finds a call that was started (or left unknown) and holds a
// handle, and the tool is a Resumer, the runtime calls Resume instead of
// interrupting the run. Resume must not perform the call's effect again: it
// follows the far side's own record (polls the task, sends the
// continuation the server asked for) and returns what [Tool.Call] would have.
// Its context carries the call's idempotency key, attempt and deadline, and
// a [HandleRecorder] for further steps.
//
// A result (or an error whose outcome is known) is committed like a
// call's. An error wrapping [ErrOutcomeUnknown] leaves the call unknown, and
// the run goes to the probe or a person as for any call of unknown outcome,
// with the handle's Evidence shown. Resume is called at most once per
// recovery; when it fails, a person decides.
type Resumer interface {
	// Resume continues the call with this key and arguments from h, the
	// handle last recorded for it.
	Resume(ctx context.Context, key string, args json.RawMessage, h Handle) (Result, error)
}

// InputError is returned by a tool (from Call or Resume) whose far side
// asked for answers that only a person can give, after the tool recorded a
// handle holding what it needs to continue. The runtime that supports it
// stops the run with an interruption of kind "input" showing Prompt and
// Schema; the answer a person records is handed back to [Resumer.Resume]
// through [Answer]. Without such support it is an error of the call whose
// outcome is known: nothing was done past the question.
type InputError struct {
	// Prompt is the question for the person.
	Prompt string
	// Schema is the JSON Schema of the expected answer (an object); empty
	// means any JSON object.
	Schema json.RawMessage
}

// Error says that the call waits for a person, and the question.
func (e *InputError) Error() string {
	return "tool: the call waits for input from a person: " + e.Prompt
}

// WithAnswer returns a context carrying a person's answer to an
// [InputError], for [Resumer.Resume].
func WithAnswer(ctx context.Context, answer json.RawMessage) context.Context {
	return context.WithValue(ctx, keyAnswer, answer)
}

// Answer returns the person's answer to the call's [InputError], or nil when
// there is none.
func Answer(ctx context.Context) json.RawMessage {
	a, _ := ctx.Value(keyAnswer).(json.RawMessage)
	return a
}
