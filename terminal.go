package actoviq

import (
	"context"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// How a drive stops when nobody asked it a question (SPEC §4):
//
//   - A cancellation ([Runtime.Cancel], or the caller's context) is the
//     caller's decision: the run ends cancelled for good, also when it
//     stops a side effect in flight. That call keeps its ledger state
//     (started or unknown), and [Runtime.Decide] can still record what
//     really happened, for the audit trail; the run does not continue.
//   - A run past its deadline ends cancelled the same way.
//   - [Runtime.Close] is a process shutting down, not a decision: the run
//     gets no final status. Its claim is released so that another process
//     can take it over at once; a call whose outcome the shutdown made
//     unknown stops the run interrupted for reconciliation, exactly as a
//     crash would, and any other run stays running, to be continued by
//     [Runtime.Resume] anywhere.

// ErrClosed: the runtime was closed ([Runtime.Close]). A run it was driving
// was not ended: it stays resumable by another runtime.
var ErrClosed = errors.New("actoviq: runtime closed")

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

// Is reports whether target is [ErrClosed].
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

// errLostClaim is the cause a drive is cancelled with when its heartbeat
// finds that another holder took the run's claim over.
var errLostClaim = errors.New("actoviq: lost the run's claim")

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

// stopCheck reports whether the drive must stop before doing more work,
// and how: past the run's deadline or cancelled, the run ends cancelled;
// closed, it stops without a final status.
func (d *drive) stopCheck(ctx context.Context) (*RunResult, error, bool) {
	if d.pastDeadline() {
		// Past the deadline: the run ends cancelled, the ledger untouched.
		d.cp.Error = &RunError{Code: "deadline", Message: "the run's deadline passed"}
		res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
		return res, err, true
	}
	if ctx.Err() == nil {
		return nil, nil, false
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrClosed):
		return nil, &ClosedError{RunID: d.run.ID, Driven: true}, true
	case errors.Is(cause, errLostClaim):
		return nil, cause, true
	case errors.Is(cause, ErrReleased): // a worker's shutdown: back to the queue (worker.go)
		res, err := d.handBack(ctx)
		return res, err, true
	}
	d.cp.Error = &RunError{Code: "cancelled", Message: cause.Error()}
	res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
	return res, err, true
}

// stopInterrupted ends a drive whose pending calls left interruptions. A
// cancellation or a passed deadline ends the run cancelled for good (the
// interruptions stay in the checkpoint as the evidence a later
// [Runtime.Decide] records with); otherwise the run stops interrupted,
// which is also how a shutdown during a side effect ends.
func (d *drive) stopInterrupted(ctx context.Context, interrupts []Interruption) (*RunResult, error) {
	d.cp.Interruptions = flattenChild(interrupts)
	if d.pastDeadline() || d.cancelled(ctx) {
		if res, err, stop := d.stopCheck(ctx); stop {
			return res, err
		}
	}
	return d.end(ctx, store.RunInterrupted, EvRunInterrupted)
}

// cancelled reports whether the drive's context ended by a cancellation
// (not by Close, not by a lost claim).
func (d *drive) cancelled(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	cause := context.Cause(ctx)
	return !errors.Is(cause, ErrClosed) && !errors.Is(cause, errLostClaim) && !errors.Is(cause, ErrReleased)
}

// resumeDecisions records the decisions a Resume came with. A run past its
// deadline ends cancelled with its ledger untouched, and then the
// decisions are refused, not dropped: stop is true and err says so.
func (d *drive) resumeDecisions(ctx context.Context, decisions []Decision) (err error, stop bool) {
	if len(decisions) == 0 {
		return nil, false
	}
	if !d.pastDeadline() {
		return d.applyDecisions(ctx, decisions), false
	}
	res, err, _ := d.stopCheck(ctx)
	if err != nil {
		return err, true
	}
	return &RunFinishedError{RunID: d.run.ID, Status: res.Status, Reason: "its deadline passed, so it ended cancelled with its ledger " +
		"untouched and the decisions given to Resume were not recorded; record what happened to a started call with Runtime.Decide"}, true
}

// checkFinishedDecisions allows, on a finished run, only decisions that
// record the truth about a call that may have run (committed or failed on
// a started or unknown call): they are the audit trail, and the run does
// not continue. Anything else would need the run to go on.
func (d *drive) checkFinishedDecisions(decisions []Decision) error {
	for _, dec := range decisions {
		en := d.ledger[dec.CallID]
		settles := dec.Kind == DecideCommitted || dec.Kind == DecideFailed
		if en != nil && settles && ledger.MayHaveRun(en.State) {
			continue
		}
		return &RunFinishedError{RunID: d.run.ID, Status: statusOf(d.run.Status), Reason: fmt.Sprintf(
			"%s for call %q needs the run to go on; a finished run only records what happened to a started call (committed or failed)",
			dec.Kind, dec.CallID)}
	}
	return nil
}

// resumeFinished is what Resume answers for a run that already ended: its
// result, or, when decisions came with it, an error (they are not dropped
// silently).
func (d *drive) resumeFinished(decisions []Decision) (*RunResult, error) {
	if len(decisions) == 0 {
		return d.cp.result(d.run.ID, d.run.Status), nil
	}
	return nil, &RunFinishedError{RunID: d.run.ID, Status: statusOf(d.run.Status),
		Reason: "Resume records no decisions on a finished run; record what happened to a started call with Runtime.Decide"}
}

// stageOrWrite writes p, or, while decisions are being recorded, adds it
// to d.staged, so that all the decisions of one Decide or Resume are one
// atomic write.
func (d *drive) stageOrWrite(ctx context.Context, p *store.RunWriteParams) error {
	if d.staged != nil {
		d.staged.Ledger = append(d.staged.Ledger, p.Ledger...)
		d.staged.Events = append(d.staged.Events, p.Events...)
		return nil
	}
	return d.write(ctx, p)
}

// unsettled lists the calls a finished run left started or unknown, with
// the evidence of the interruption that stopped it when there is one.
func (e *Runtime) unsettled(run *store.Run, cp *checkpoint, entries []*store.LedgerEntry) []Interruption {
	var out []Interruption
	// The view is read-only, but building an interruption redacts its
	// text, which needs the runtime (its redactor and clock).
	d := &drive{e: e, cp: cp, run: run}
	for _, en := range entries {
		if !ledger.MayHaveRun(en.State) {
			continue
		}
		if in := d.openInterruption(en.CallID); in != nil && in.State == string(en.State) {
			out = append(out, *in)
			continue
		}
		kind := InterruptReconciliation
		if en.Effect != tool.SideEffect.String() {
			kind = InterruptRecovery
		}
		out = append(out, d.interruption(kind, en, fmt.Sprintf(
			"the run ended %s while this call was %s; it will not run again, but what happened can be recorded (committed or failed)",
			run.Status, en.State), nil))
	}
	return out
}
