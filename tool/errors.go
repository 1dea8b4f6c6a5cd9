package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Kind says which step of a call failed. Its string values are persisted
// and stable.
type Kind string

// The kinds, in the order the runner's steps can produce them.
const (
	KindNotFound         Kind = "not_found"
	KindValidation       Kind = "validation"
	KindDenied           Kind = "denied"
	KindApprovalRequired Kind = "approval_required"
	KindTimeout          Kind = "timeout"
	KindCancelled        Kind = "cancelled"
	KindExecution        Kind = "execution"
)

// Sentinels matched by [errors.Is] on an [*Error] of the matching kind.
var (
	ErrNotFound         = errors.New("tool: not found")
	ErrValidation       = errors.New("tool: validation failed")
	ErrDenied           = errors.New("tool: denied by policy")
	ErrApprovalRequired = errors.New("tool: approval required")
	ErrTimeout          = errors.New("tool: timeout")
	ErrCancelled        = errors.New("tool: cancelled")
	ErrExecution        = errors.New("tool: execution failed")

	// ErrOutcomeUnknown is returned, wrapped, by a tool that cannot tell
	// whether its effect happened. Every [*Error] with OutcomeUnknown set
	// matches it too.
	ErrOutcomeUnknown = errors.New("tool: outcome unknown")

	// ErrDriveStopped is matched by the cause ([context.Cause]) of a
	// call's context when the run's drive stopped without anyone deciding
	// about the run: its process shuts down (actoviq's Runtime.Close), its
	// worker released it, or another process took the run over. The run
	// goes on later, from the call's ledger entry and the handles it
	// recorded: a tool leaves work it started elsewhere running (a task,
	// a job) for that drive to take up, instead of cancelling it. A
	// cancellation that is a decision (Runtime.Cancel, the caller's
	// context) has a cause that does not match it. See [DriveStopped].
	ErrDriveStopped = errors.New("tool: the run's drive stopped; the run goes on later")
)

// DriveStopped reports whether ctx ended because the run's drive stopped
// without a decision about the run ([ErrDriveStopped]).
func DriveStopped(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrDriveStopped)
}

var kindSentinels = map[Kind]error{
	KindNotFound:         ErrNotFound,
	KindValidation:       ErrValidation,
	KindDenied:           ErrDenied,
	KindApprovalRequired: ErrApprovalRequired,
	KindTimeout:          ErrTimeout,
	KindCancelled:        ErrCancelled,
	KindExecution:        ErrExecution,
}

// Error is a failed tool call.
//
// Started says whether the tool was invoked; when it is false nothing ran
// and the call may be made again. OutcomeUnknown says the tool may have
// acted without reporting a result (it timed out, was cancelled, panicked,
// or said so): such a call is never run again on the runtime's own.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Tool is the tool's name.
	Tool string
	// Started is true when the tool was invoked.
	Started bool
	// OutcomeUnknown is true when the tool may have acted.
	OutcomeUnknown bool
	// Violations lists every schema violation of a KindValidation error.
	Violations []string
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s: %s", e.Tool, strings.ReplaceAll(string(e.Kind), "_", " "))
	if len(e.Violations) > 0 {
		b.WriteString(": " + strings.Join(e.Violations, "; "))
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	if e.OutcomeUnknown {
		b.WriteString(" (outcome unknown)")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's kind, and [ErrOutcomeUnknown] when
// OutcomeUnknown is set.
func (e *Error) Is(target error) bool {
	if target == ErrOutcomeUnknown && e.OutcomeUnknown {
		return true
	}
	s, ok := kindSentinels[e.Kind]
	return ok && target == s
}

type errorJSON struct {
	Kind           Kind     `json:"kind"`
	Tool           string   `json:"tool"`
	Started        bool     `json:"started"`
	OutcomeUnknown bool     `json:"outcome_unknown"`
	Violations     []string `json:"violations,omitempty"`
	Message        string   `json:"message,omitempty"`
}

// MarshalJSON encodes the error in its stable persisted shape:
// {kind, tool, started, outcome_unknown, violations, message}, where
// message is the cause's text.
func (e *Error) MarshalJSON() ([]byte, error) {
	j := errorJSON{Kind: e.Kind, Tool: e.Tool, Started: e.Started, OutcomeUnknown: e.OutcomeUnknown, Violations: e.Violations}
	if e.Err != nil {
		j.Message = e.Err.Error()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the persisted shape. The decoded error matches the
// same sentinels as the original; its cause keeps only the message.
func (e *Error) UnmarshalJSON(b []byte) error {
	var j errorJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("tool: decode error: %w", err)
	}
	if _, ok := kindSentinels[j.Kind]; !ok {
		return fmt.Errorf("tool: decode error: unknown kind %q", j.Kind)
	}
	*e = Error{Kind: j.Kind, Tool: j.Tool, Started: j.Started, OutcomeUnknown: j.OutcomeUnknown, Violations: j.Violations}
	if j.Message != "" {
		e.Err = errors.New(j.Message)
	}
	return nil
}
