package actoviq

import (
	"errors"
	"fmt"
	"strings"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// Errors from the store that callers branch on, re-exported so that most
// programs import only this package. They match with [errors.Is].
var (
	// ErrConflict: a write lost a revision compare-and-swap to another writer.
	ErrConflict = store.ErrConflict
	// ErrFenced: the writer's claim was taken over; it may not write.
	ErrFenced = store.ErrFenced
	// ErrNotFound: no such run (in this runtime's tenant).
	ErrNotFound = store.ErrNotFound
	// ErrData: a stored record could not be decoded.
	ErrData = store.ErrData
)

// ErrAgentChanged matches an [*AgentChangeError].
var ErrAgentChanged = errors.New("actoviq: the agent changes what a waiting call depends on")

// AgentChangeError refuses a resume whose agent changes what an unsettled
// call's safety depends on. Refused lists those changes; Changes lists
// every difference found (free and conservative ones too).
type AgentChangeError struct {
	// RunID is the run the resume was for.
	RunID string
	// Refused are the changes a waiting call's safety depends on.
	Refused []AgentChange
	// Changes are every difference found, free and conservative ones too.
	Changes []AgentChange
}

func (e *AgentChangeError) Error() string {
	parts := make([]string, 0, len(e.Refused))
	for _, c := range e.Refused {
		parts = append(parts, c.String())
	}
	return fmt.Sprintf("actoviq: run %s waits on calls this agent version changes: %s. Resume it under an agent that keeps those fields, "+
		"or take the change over with ResumeOptions.AcceptAgentChange (recorded; approvals bound to a changed tool or policy become void and the calls ask again)",
		e.RunID, strings.Join(parts, "; "))
}

// Is matches [ErrAgentChanged], and [ErrDigestMismatch] for programs
// written before the digest was split.
func (e *AgentChangeError) Is(target error) bool {
	return target == ErrAgentChanged || target == ErrDigestMismatch
}

// ErrRetryUnsafe: retry-safe was asked for a child that can reach a
// side effect.
var ErrRetryUnsafe = errors.New("actoviq: retry-safe refused for a child that can reach a side effect")

// RetryUnsafeError names the tool that makes a child unsafe to retry. It
// matches [ErrRetryUnsafe].
type RetryUnsafeError struct {
	// Agent and Tool name the child agent and the tool that can reach a
	// side effect.
	Agent, Tool string
	// Effect is that tool's effect.
	Effect tool.Effect
}

func (e *RetryUnsafeError) Error() string {
	return fmt.Sprintf("actoviq: agent %s: retry-safe refused: its tool %s is %s (retry-safe needs every tool to be read or idempotent-write); use fail-fast or collect",
		e.Agent, e.Tool, e.Effect)
}

// Is reports whether target is [ErrRetryUnsafe].
func (e *RetryUnsafeError) Is(target error) bool { return target == ErrRetryUnsafe }

// ChildFailedError reports a child run that failed or was cancelled. A
// fail-fast parent ends failed with it.
type ChildFailedError struct {
	// RunID is the child run's id.
	RunID string
	// Status is how the child ended: failed or cancelled.
	Status Status
	// Err is the child's own error, when it has one.
	Err *RunError
}

func (e *ChildFailedError) Error() string {
	msg := fmt.Sprintf("child run %s %s", e.RunID, e.Status)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// ErrSealKey matches (errors.Is) a sealed value that the configured codec
// cannot open: sealed under a key it does not hold, or altered.
var ErrSealKey = errors.New("actoviq: sealed value cannot be opened with the configured keys")

// SealKeyError reports a sealed value that did not open.
type SealKeyError struct {
	// KeyID is the id of the key the value was sealed with ("" when the
	// value is not in the codec's format).
	KeyID string
	// Reason says what failed.
	Reason string
}

func (e *SealKeyError) Error() string {
	if e.KeyID == "" {
		return "actoviq: sealed value: " + e.Reason
	}
	return fmt.Sprintf("actoviq: sealed value (key id %s): %s", e.KeyID, e.Reason)
}

// Is reports whether target is [ErrSealKey].
func (e *SealKeyError) Is(target error) bool { return target == ErrSealKey }

// ErrInvalidID: a run id cannot be used (it contains a key separator or a
// control character, or is empty). Nothing was stored.
var ErrInvalidID = errors.New("actoviq: invalid id")

// IDError reports an id the runtime refuses, and why.
type IDError struct {
	// Field names where the id came from: "Input.RunID" or "Config.NewID".
	Field string
	// ID is the id refused.
	ID string
	// Reason says what is wrong with it.
	Reason string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("actoviq: %s %q: %s", e.Field, e.ID, e.Reason)
}

// Is reports whether target is [ErrInvalidID].
func (e *IDError) Is(target error) bool { return target == ErrInvalidID }

func newRunHeldError(runID string, held *store.ClaimHeldError) *RunHeldError {
	hi := ParseHolder(held.Holder)
	return &RunHeldError{RunID: runID, Claim: held, Host: hi.Host, PID: hi.PID}
}

// Is makes errors.Is(res.Error, ErrSessionConflict) report an overtaken
// run, and errors.Is(res.Error, ErrModelBehavior) a refused model
// response (code model_behavior).
func (e *RunError) Is(target error) bool {
	switch target {
	case ErrSessionConflict:
		return e.Code == CodeSessionConflict
	case ErrModelBehavior:
		return e.Code == CodeModelBehavior
	}
	return false
}

// ErrClosed: the runtime was closed ([Runtime.Close]). A run it was driving
// was not ended: it stays resumable by another runtime.
// It matches [tool.ErrDriveStopped]: a tool reading it as its context's
// cause leaves work it started elsewhere running for the next drive.
var ErrClosed error = &driveStopped{"actoviq: runtime closed"}

// driveStopped is the cause of a drive's stop that is no decision about
// the run (Close, a worker's release, a lost claim): the run goes on
// later, so it matches tool.ErrDriveStopped for the tools.
type driveStopped struct{ msg string }

func (e *driveStopped) Error() string { return e.msg }

// Is makes the stop tool.ErrDriveStopped for the tools.
func (e *driveStopped) Is(target error) bool { return target == tool.ErrDriveStopped }

// ClosedError reports a run whose drive [Runtime.Close] stopped, or that a
// closed runtime did not drive. The run was not ended. It matches
// [ErrClosed].
type ClosedError struct {
	// RunID is the run the call was for.
	RunID string
	// Driven is false when the run was not driven at all (the runtime was
	// closed before the drive began).
	Driven bool
}

func (e *ClosedError) Error() string {
	if !e.Driven {
		return fmt.Sprintf("actoviq: runtime closed: run %s was not driven; Runtime.Resume in a live runtime continues it", e.RunID)
	}
	return fmt.Sprintf("actoviq: runtime closed: run %s was not ended and stays resumable (Runtime.Resume)", e.RunID)
}

// Is reports whether target is [ErrClosed] or [tool.ErrDriveStopped].
func (e *ClosedError) Is(target error) bool {
	return target == ErrClosed || target == tool.ErrDriveStopped
}

// errLostClaim is the cause a drive is cancelled with when its heartbeat
// finds that another holder took the run's claim over.
var errLostClaim error = &driveStopped{"actoviq: lost the run's claim"}

// RunFinishedError reports a run that already ended (completed, failed or
// cancelled) when it was asked to take a decision that needs it to go on.
// It matches [ErrRunFinished].
type RunFinishedError struct {
	// RunID is the run asked for.
	RunID string
	// Status is the run's final status.
	Status Status
	// Reason says what was refused and what to do instead.
	Reason string
}

func (e *RunFinishedError) Error() string {
	return fmt.Sprintf("actoviq: run %s is %s: %s", e.RunID, e.Status, e.Reason)
}

// Is reports whether target is [ErrRunFinished].
func (e *RunFinishedError) Is(target error) bool { return target == ErrRunFinished }

// RunError is why a run failed, in a persisted shape.
type RunError struct {
	// Code is one of the Code constants, such as [CodeMaxTurns].
	Code string `json:"code"`
	// Message says what happened.
	Message string `json:"message"`
	// Hint says what to do next, when the runtime knows.
	Hint string `json:"hint,omitempty"`
}

func (e *RunError) Error() string {
	if e.Hint != "" {
		return e.Code + ": " + e.Message + " (next: " + e.Hint + ")"
	}
	return e.Code + ": " + e.Message
}

// RunError codes. [RunError.Code] is always one of these; the strings are
// stable (they are persisted and shown by the CLI and the console).
const (
	// CodeModelBehavior: the model"s response was refused (a malformed or duplicate tool call, …); matches [ErrModelBehavior].
	CodeModelBehavior = "model_behavior"
	// CodeModelError: the model call failed in a way no other code names.
	CodeModelError = "model_error"
	// CodeProviderError: the provider refused the call with an error that is final.
	CodeProviderError = "provider_error"
	// CodeProviderUnavailable: the provider stayed unavailable across the consecutive provider interruptions the run allows.
	CodeProviderUnavailable = "provider_unavailable"
	// CodeStreamInterrupted: the model"s stream broke after output was delivered.
	CodeStreamInterrupted = "stream_interrupted"
	// CodeContextLength: the request is longer than the model"s context.
	CodeContextLength = "context_length"
	// CodePolicyRefusal: the provider refused the content under its policy.
	CodePolicyRefusal = "policy_refusal"
	// CodeAuth: the provider did not accept the credentials (401).
	CodeAuth = "auth"
	// CodePermission: the credentials may not use the model (403).
	CodePermission = "permission"
	// CodeModelNotFound: the provider does not know the model (404).
	CodeModelNotFound = "model_not_found"
	// CodeBadRequest: the provider rejected the request as malformed (400).
	CodeBadRequest = "bad_request"
	// CodeDanglingToolCall: the transcript has a tool call without a result.
	CodeDanglingToolCall = "dangling_tool_call"
	// CodeUnsupported: the provider does not support what the request asks for.
	CodeUnsupported = "unsupported"
	// CodeMaxTurns: the run reached Limits.MaxTurns.
	CodeMaxTurns = "max_turns"
	// CodeDeadline: the run"s deadline passed.
	CodeDeadline = "deadline"
	// CodeCancelled: the run was cancelled ([Runtime.Cancel] or its context).
	CodeCancelled = "cancelled"
	// CodeSessionConflict: a later run of the same session overtook this one; matches [ErrSessionConflict].
	CodeSessionConflict = "session_conflict"
	// CodeBudget: the run tree spent its budget.
	CodeBudget = "budget"
	// CodeChildFailed: a child run failed and its policy fails the parent.
	CodeChildFailed = "child_failed"
	// CodeRetriesExhausted: a retry-safe child failed on every attempt it was allowed.
	CodeRetriesExhausted = "retries_exhausted"
	// CodeNoAgent: a worker could not build the run"s agent; the run is parked interrupted.
	CodeNoAgent = "no_agent"
	// CodeAgentChanged: a worker"s agent changes what the run"s unsettled calls depend on; the run is parked interrupted.
	CodeAgentChanged = "agent_changed"
)

// Errors callers branch on.
var (
	// ErrDigestMismatch: the agent definition changed since the run started.
	ErrDigestMismatch = errors.New("actoviq: agent definition changed since the run started")
	// ErrRunHeld: another live worker holds the run.
	ErrRunHeld = errors.New("actoviq: run is held by another worker")
	// ErrRunExists: a run with that id exists; it is never re-run.
	ErrRunExists = errors.New("actoviq: run already exists")
	// ErrRunFinished: the run already ended.
	ErrRunFinished = errors.New("actoviq: run already finished")
	// ErrDecision: a decision does not fit the run's ledger.
	ErrDecision = errors.New("actoviq: invalid decision")
	// ErrSessionConflict: another run appended to the session first.
	ErrSessionConflict = errors.New("actoviq: session changed by another run")
	// ErrSessionBusy: another run is driving the session.
	ErrSessionBusy = errors.New("actoviq: session is in use by another run")
	// ErrModelBehavior: the model produced something the runtime refuses
	// (a repeated call id with different arguments).
	ErrModelBehavior = errors.New("actoviq: model behaviour error")
)

// DecisionError reports a decision that does not fit.
type DecisionError struct {
	// CallID is the call the decision named.
	CallID string
	// Reason says why it does not fit, for a person.
	Reason string
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("actoviq: decision for call %q: %s", e.CallID, e.Reason)
}

// Is reports whether target is [ErrDecision].
func (e *DecisionError) Is(target error) bool { return target == ErrDecision }

// DigestMismatchError reports a changed agent definition.
type DigestMismatchError struct {
	// RunID is the run asked for.
	RunID string
	// Stored and Actual are the run's recorded digest and this agent's.
	Stored, Actual string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("actoviq: run %s was started with agent digest %s, this agent has %s: resume refuses a changed agent", e.RunID, e.Stored, e.Actual)
}

// Is reports whether target is [ErrDigestMismatch].
func (e *DigestMismatchError) Is(target error) bool { return target == ErrDigestMismatch }

// RunHeldError reports a run claimed by another live worker.
type RunHeldError struct {
	// RunID is the run asked for.
	RunID string
	// Claim names the holder, its epoch and when its lease expires.
	Claim *store.ClaimHeldError
	// Host and PID name the holder's process when its holder name has the
	// default form; empty and 0 otherwise.
	Host string
	PID  int
}

func (e *RunHeldError) Error() string {
	who := e.Claim.Holder
	if e.PID != 0 {
		who = fmt.Sprintf("process %d on host %s (holder %s)", e.PID, e.Host, e.Claim.Holder)
	}
	return fmt.Sprintf("actoviq: run %s is being driven by %s, epoch %d, claim renewed until %s: wait for that drive to end, or stop that process; then resume again",
		e.RunID, who, e.Claim.Epoch, e.Claim.ExpiresAt)
}

// Is reports whether target is [ErrRunHeld].
func (e *RunHeldError) Is(target error) bool { return target == ErrRunHeld }

// Unwrap returns the store's claim error.
func (e *RunHeldError) Unwrap() error { return e.Claim }

// ErrReleased is the cause a worker cancels a drive with when its grace
// period after shutdown has passed: the run goes back to the queue at its
// next step (status queued), for another worker. It is not a cancellation
// of the run.
// It matches [tool.ErrDriveStopped], as [ErrClosed] does.
var ErrReleased error = &driveStopped{"actoviq: run released by its worker"}
