package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// Status is the outcome of driving a run.
type Status string

// Run statuses as the public API reports them.
const (
	StatusRunning     Status = "running"
	StatusCompleted   Status = "completed"
	StatusInterrupted Status = "interrupted"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled"
)

// InterruptionKind says what a stopped run waits for.
type InterruptionKind string

// Interruption kinds.
const (
	// InterruptApproval: a call needs approve or reject.
	InterruptApproval InterruptionKind = "approval"
	// InterruptReconciliation: a side effect of unknown outcome; needs
	// committed, failed or re-execute.
	InterruptReconciliation InterruptionKind = "reconciliation"
	// InterruptRecovery: a read or idempotent write that was started when
	// the run stopped, and the recovery policy does not allow re-running it.
	InterruptRecovery InterruptionKind = "recovery"
	// InterruptProvider: a model call failed after the transport's
	// retries with a transient error (the provider is down, overloaded or
	// rate-limiting, or its stream broke). Nothing needs deciding: Resume
	// makes one new model call from the committed checkpoint. The evidence
	// is in Interruption.Provider; the call fields are empty.
	InterruptProvider InterruptionKind = "provider"
)

// Interruption is one open question a person (or a probe) must answer
// before the run can go on. It carries the evidence to answer it.
type Interruption struct {
	// Kind says what the run waits for.
	Kind InterruptionKind `json:"kind"`
	// CallID is the call in question (empty for a provider interruption).
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect.
	Effect string `json:"effect"`
	// State is the call's ledger state: awaiting_approval, started or unknown.
	State string `json:"state"`
	// IdempotencyKey is the call's stable key, the one the target system saw.
	IdempotencyKey string `json:"idempotency_key"`
	// Args are the call's arguments as persisted (secrets redacted).
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsDigest is the digest of the unredacted arguments; approvals bind to it.
	ArgsDigest string `json:"args_digest"`
	// Attempt counts the times the call was started.
	Attempt int `json:"attempt"`
	// StartedAt is when the last attempt was recorded started.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Holder is the worker that started the last attempt.
	Holder string `json:"holder,omitempty"`
	// Epoch is that worker's claim epoch (fencing token).
	Epoch int64 `json:"epoch,omitempty"`
	// Reason explains why the run stopped here.
	Reason string `json:"reason"`
	// Probe is the tool's probe answer, when it has a probe.
	Probe *ProbeAnswer `json:"probe,omitempty"`
	// LastError is the persisted error of the last attempt, if any.
	LastError json.RawMessage `json:"last_error,omitempty"`
	// Provider is the evidence of a provider interruption.
	Provider *ProviderFailure `json:"provider,omitempty"`
	// RunID is set when the call belongs to a child run (an agent used as
	// a tool): the run whose ledger holds it, where it is decided. Empty
	// for the run's own calls. See child.go.
	RunID string `json:"run_id,omitempty"`

	// nested are a child run's interruptions, shown in its parent's place.
	nested []Interruption
}

// ProbeAnswer is what a tool's Reconcile probe said.
type ProbeAnswer struct {
	// Outcome is committed, not_executed or unknown.
	Outcome string `json:"outcome"`
	// Evidence is what the probe saw.
	Evidence string `json:"evidence,omitempty"`
	// Error is set when the probe itself failed.
	Error string `json:"error,omitempty"`
}

// DecisionKind is what a person decided about an interrupted call.
type DecisionKind string

// Decision kinds.
const (
	DecideApprove   DecisionKind = "approve"
	DecideReject    DecisionKind = "reject"
	DecideCommitted DecisionKind = "committed"
	DecideFailed    DecisionKind = "failed"
	DecideReexecute DecisionKind = "re-execute"
)

// Decision answers one interruption. It is recorded with who, when and why
// and the evidence that was shown.
type Decision struct {
	// CallID is the interrupted call decided on.
	CallID string `json:"call_id"`
	// RunID names the child run the call belongs to when the decision is
	// given to its parent (an interruption's RunID); empty means the run
	// decided on, or, if it has no such call, the child run whose open
	// interruption has this call id.
	RunID string `json:"run_id,omitempty"`
	// Kind is what was decided.
	Kind DecisionKind `json:"kind"`
	// By names who decided; required.
	By string `json:"by"`
	// Reason is why. For reject it is what the model is told; for the
	// other kinds it is recorded only.
	Reason string `json:"reason,omitempty"`
	// Note is an operator's note, recorded and never shown to the model.
	Note string `json:"note,omitempty"`
	// Result is the tool result an operator records with committed: the
	// content the model sees.
	Result string `json:"result,omitempty"`
	// ResultData is optional structured data with Result; it must be JSON.
	ResultData json.RawMessage `json:"result_data,omitempty"`
	// Message is what the model sees for failed.
	Message string `json:"message,omitempty"`
}

// Validate checks that a decision is well formed.
func (d *Decision) Validate() error {
	if d.CallID == "" {
		return &DecisionError{CallID: d.CallID, Reason: "missing call id"}
	}
	if d.By == "" {
		return &DecisionError{CallID: d.CallID, Reason: "missing who decided (By)"}
	}
	switch d.Kind {
	case DecideApprove, DecideReject, DecideReexecute:
	case DecideCommitted:
		if d.ResultData != nil && !json.Valid(d.ResultData) {
			return &DecisionError{CallID: d.CallID, Reason: "result data is not JSON"}
		}
	case DecideFailed:
		if d.Message == "" {
			return &DecisionError{CallID: d.CallID, Reason: "failed needs a message for the model"}
		}
	default:
		return &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("unknown decision %q", d.Kind)}
	}
	return nil
}

// RunResult is what driving a run produced.
type RunResult struct {
	// RunID is the run's id (generated when Input.RunID was empty).
	RunID string
	// Status is where the drive left the run.
	Status Status
	// Output is the final answer of a completed run.
	Output []item.Item
	// Usage is the run's total token usage.
	Usage item.Usage
	// Interruptions are the open questions of an interrupted run.
	Interruptions []Interruption
	// Error is set for failed and cancelled runs.
	Error *RunError
}

// RunError is why a run failed, in a persisted shape.
type RunError struct {
	// Code is stable: model_behavior, provider_error, max_turns, ….
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

// EventSink receives run events after they are durable (transitions) or as
// they happen (deltas, attempts). Data is already redacted. Emit must not
// block for long; it is called on the run's goroutine.
type EventSink interface {
	// Emit receives one event; ev and its Data are the sink's to keep.
	Emit(ctx context.Context, ev Event)
}

// EventSinkFunc adapts a function to [EventSink].
type EventSinkFunc func(ctx context.Context, ev Event)

// Emit implements [EventSink].
func (f EventSinkFunc) Emit(ctx context.Context, ev Event) { f(ctx, ev) }

// Event is one run event in the stable envelope: the same shape on the
// wire (JSON), in the store and in every sink, versioned by Schema, so
// events stored by older builds still decode. [Event.Payload] gives Data
// as a typed value.
type Event struct {
	// Schema is the envelope's version, EventSchema.
	Schema int `json:"schema"`
	// ID is unique per event.
	ID string `json:"id"`
	// Seq orders a run's stored events from 1; 0 for ephemeral events
	// (text deltas, attempts, model requests), which are never stored.
	Seq int64 `json:"seq"`
	// RunID is the run the event belongs to.
	RunID string `json:"run_id"`
	// ParentRunID is the parent run's id for a child run.
	ParentRunID string `json:"parent_run_id,omitempty"`
	// TraceID is the run's trace id, stable across drives.
	TraceID string `json:"trace_id"`
	// SpanID is deterministic: the run's span, or one call's span in it.
	SpanID string `json:"span_id"`
	// Type is one of the Ev constants, such as EvToolStarted.
	Type string `json:"type"`
	// Time is the runtime's clock at the event.
	Time time.Time `json:"time"`
	// Data is the payload's JSON, secret-looking values redacted.
	Data json.RawMessage `json:"data,omitempty"`
}

// EventSchema is the envelope's schema version.
const EventSchema = 1

// Event types.
const (
	EvRunStarted     = "run.started"
	EvRunResumed     = "run.resumed"
	EvRunCompleted   = "run.completed"
	EvRunInterrupted = "run.interrupted"
	EvRunFailed      = "run.failed"
	EvRunCancelled   = "run.cancelled"
	EvModelRequest   = "model.request"
	EvModelResponse  = "model.response"
	EvModelAttempt   = "model.attempt"
	EvTextDelta      = "model.text_delta"
	EvToolPrepared   = "tool.prepared"
	EvToolAwaiting   = "tool.awaiting_approval"
	EvToolApproved   = "tool.approved"
	EvToolRejected   = "tool.rejected"
	EvToolStarted    = "tool.started"
	EvToolCommitted  = "tool.committed"
	EvToolUnknown    = "tool.unknown"
	EvToolSkipped    = "tool.skipped"
	EvToolProbed     = "tool.probed"
	EvToolSettled    = "tool.settled"
	EvToolReexecute  = "tool.reexecute"
)
