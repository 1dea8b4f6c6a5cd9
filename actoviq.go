package actoviq

import (
	"context"
	"iter"
	"sync"

	"github.com/actoviq/actoviq-go/internal/engine"
	"github.com/actoviq/actoviq-go/store"
)

// The public vocabulary. The types are defined in the engine and shown
// here; this package is the only one most users import.
type (
	// AgentSpec defines an agent: model, tools, limits and policies.
	AgentSpec = engine.AgentSpec
	// Limits bound a run.
	Limits = engine.Limits
	// ApprovalPolicy says which calls need approval before they start.
	ApprovalPolicy = engine.ApprovalPolicy
	// RecoveryPolicy says which started reads and idempotent writes may be
	// re-run after a crash. Side effects never are.
	RecoveryPolicy = engine.RecoveryPolicy
	// Input starts a run.
	Input = engine.Input
	// RunResult is the outcome of Run or Resume.
	RunResult = engine.Result
	// RunInfo is a run with its ledger and open interruptions.
	RunInfo = engine.RunInfo
	// ListParams filters List.
	ListParams = engine.ListParams
	// Status is a run's status.
	Status = engine.Status
	// Interruption is an open question that stops a run.
	Interruption = engine.Interruption
	// InterruptionKind is approval, reconciliation or recovery.
	InterruptionKind = engine.InterruptionKind
	// ProbeAnswer is what a tool's probe said.
	ProbeAnswer = engine.ProbeAnswer
	// Decision answers an interruption.
	Decision = engine.Decision
	// DecisionKind is approve, reject, committed, failed or re-execute.
	DecisionKind = engine.DecisionKind
	// RunError says why a run failed.
	RunError = engine.RunError
	// Event is a run event in the stable envelope.
	Event = engine.Event
	// EventSink receives run events.
	EventSink = engine.EventSink
	// EventSinkFunc adapts a function to EventSink.
	EventSinkFunc = engine.EventSinkFunc
	// DecisionError reports a decision that does not fit the ledger.
	DecisionError = engine.DecisionError
	// DigestMismatchError reports a changed agent on resume.
	DigestMismatchError = engine.DigestMismatchError
	// RunHeldError reports a run claimed by another live worker.
	RunHeldError = engine.RunHeldError
)

// Statuses, interruption kinds and decision kinds.
const (
	StatusRunning     = engine.StatusRunning
	StatusCompleted   = engine.StatusCompleted
	StatusInterrupted = engine.StatusInterrupted
	StatusFailed      = engine.StatusFailed
	StatusCancelled   = engine.StatusCancelled

	InterruptApproval       = engine.InterruptApproval
	InterruptReconciliation = engine.InterruptReconciliation
	InterruptRecovery       = engine.InterruptRecovery

	DecideApprove   = engine.DecideApprove
	DecideReject    = engine.DecideReject
	DecideCommitted = engine.DecideCommitted
	DecideFailed    = engine.DecideFailed
	DecideReexecute = engine.DecideReexecute
)

// The error vocabulary, for errors.Is.
var (
	ErrDigestMismatch  = engine.ErrDigestMismatch
	ErrRunHeld         = engine.ErrRunHeld
	ErrRunExists       = engine.ErrRunExists
	ErrRunFinished     = engine.ErrRunFinished
	ErrDecision        = engine.ErrDecision
	ErrSessionConflict = engine.ErrSessionConflict
	ErrSessionBusy     = engine.ErrSessionBusy
	ErrModelBehavior   = engine.ErrModelBehavior
	ErrConflict        = store.ErrConflict
	ErrFenced          = store.ErrFenced
	ErrNotFound        = store.ErrNotFound
	ErrData            = store.ErrData
)

// Config configures a [Runtime]. A nil *Config means defaults; see
// [engine.Config] for each field's default.
type Config = engine.Config

// Runtime runs agents over a store. It is safe for concurrent use.
type Runtime struct {
	e *engine.Engine
}

// New returns a runtime over s. Close it when done; it does not close s.
func New(s store.Store, cfg *Config) (*Runtime, error) {
	e, err := engine.New(s, cfg)
	if err != nil {
		return nil, err
	}
	return &Runtime{e: e}, nil
}

// Close stops the runtime's live runs (they end cancelled, their ledgers
// as they are) and waits for them.
func (r *Runtime) Close() error { return r.e.Close() }

// Tenant returns the runtime's tenant.
func (r *Runtime) Tenant() string { return r.e.Tenant() }

// Run starts a run and drives it until it completes, fails, is cancelled
// or stops with interruptions. Extra sinks receive this run's events.
func (r *Runtime) Run(ctx context.Context, a *AgentSpec, in *Input, sinks ...EventSink) (*RunResult, error) {
	return r.e.Run(ctx, a, in, sinks...)
}

// Resume records decisions, applies the recovery rules to the ledger and
// continues the run. It refuses a changed agent ([ErrDigestMismatch]) and a
// run held by another live worker ([ErrRunHeld]); a run past its deadline
// ends cancelled with its ledger untouched.
func (r *Runtime) Resume(ctx context.Context, a *AgentSpec, runID string, decisions ...Decision) (*RunResult, error) {
	return r.e.Resume(ctx, a, runID, decisions)
}

// ResumeWith is Resume with extra event sinks for this drive.
func (r *Runtime) ResumeWith(ctx context.Context, a *AgentSpec, runID string, decisions []Decision, sinks ...EventSink) (*RunResult, error) {
	return r.e.Resume(ctx, a, runID, decisions, sinks...)
}

// Decide records decisions on an interrupted run without continuing it.
func (r *Runtime) Decide(ctx context.Context, runID string, decisions ...Decision) error {
	return r.e.Decide(ctx, runID, decisions)
}

// Cancel stops a run: a live drive in this runtime is cancelled; a run that
// nobody drives is marked cancelled. A cancelled run is final; started calls
// keep their ledger state as the record of what may have happened.
func (r *Runtime) Cancel(ctx context.Context, runID string) error { return r.e.Cancel(ctx, runID) }

// Get reads a run with its ledger and open interruptions.
func (r *Runtime) Get(ctx context.Context, runID string) (*RunInfo, error) {
	return r.e.Get(ctx, runID)
}

// List lists runs, newest first. A run that cannot be decoded hides no
// other: the healthy runs come with an error matching [ErrData].
func (r *Runtime) List(ctx context.Context, p *ListParams) ([]*RunInfo, error) {
	return r.e.List(ctx, p)
}

// Stream starts a run and yields its events as they happen; the last
// event is the run's end (run.completed, run.interrupted, run.failed or
// run.cancelled), or the error that stopped the drive is yielded. Breaking
// out of the loop cancels the run's drive and waits for it to stop.
func (r *Runtime) Stream(ctx context.Context, a *AgentSpec, in *Input) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan Event)
		var wg sync.WaitGroup
		var runErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(events)
			sink := EventSinkFunc(func(ctx context.Context, ev Event) {
				select {
				case events <- ev:
				case <-ctx.Done():
				}
			})
			_, runErr = r.e.Run(ctx, a, in, sink)
		}()
		stopped := false
		for ev := range events {
			if !stopped && !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}
		wg.Wait()
		if runErr != nil && !stopped {
			yield(Event{}, runErr)
		}
	}
}
