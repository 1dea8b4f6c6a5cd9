package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// Resume continues a stopped run: it records opts.Decisions (the answers
// to the run's open interruptions), applies the recovery rules to the
// ledger and drives the run on, with opts.Sinks receiving this drive's
// events besides Config.Sinks. a is the agent to drive it with; runID
// names the run. A nil opts resumes with no decisions and no extra sinks.
//
// A new version of the agent may take the run over unless it changes what
// an unsettled call depends on ([*AgentChangeError]; see
// [ResumeOptions.AcceptAgentChange]). It refuses a run held by another
// live worker ([ErrRunHeld]); a run past its deadline ends cancelled with
// its ledger untouched.
func (rt *Runtime) Resume(ctx context.Context, a *AgentSpec, runID string, opts *ResumeOptions) (*RunResult, error) {
	if opts == nil {
		opts = &ResumeOptions{}
	}
	return rt.resumeOpts(ctx, a, runID, opts)
}

// Stream starts a run and yields its events as they happen; the last
// event is the run's end (run.completed, run.interrupted, run.failed or
// run.cancelled), or the error that stopped the drive is yielded. Breaking
// out of the loop cancels the run's drive and waits for it to stop.
func (rt *Runtime) Stream(ctx context.Context, a *AgentSpec, in *Input) iter.Seq2[Event, error] {
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
			_, runErr = rt.Run(ctx, a, in, sink)
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

// ResumeOptions are what [Runtime.Resume] takes besides the agent and the
// run id. A nil *ResumeOptions means none of them.
type ResumeOptions struct {
	// Decisions answer the run's open interruptions; they are checked
	// against the ledger and recorded before the run goes on.
	Decisions []Decision
	// Sinks receive this drive's events, besides Config.Sinks.
	Sinks []EventSink
	// Meta, when not nil, replaces the run's Meta for this and later
	// drives (how the run is driven now: another endpoint, another model).
	// The change is recorded in a run.meta_changed event with the old and
	// the new value. Nil keeps the stored Meta. Never put secrets in it.
	Meta json.RawMessage
	// AcceptAgentChange takes over a run under an agent version that
	// changes what an unsettled call depends on (see [AgentChangeError]).
	// Who, when, why and the diff are recorded; approvals bound to a
	// changed tool or policy become void, so those calls ask again. Nil
	// refuses such a change.
	AcceptAgentChange *AcceptAgentChange
}

// Input starts a run.
type Input struct {
	// RunID is optional; an existing id is refused with [ErrRunExists].
	RunID string
	// SessionID continues a conversation: its last items (the session
	// window: AgentSpec.SessionWindow, Config.SessionWindow, by default
	// DefaultSessionWindow; or all of it with WholeSession) are prepended
	// and the run's items are appended (CAS) when it completes. The run
	// records the session revision it started from, not a copy of the
	// history.
	SessionID string
	// ParentRunID links the run to a parent run (recorded with the run and
	// in every event envelope); empty means a root run.
	ParentRunID string
	// Items are the new input (usually one user text item).
	Items []item.Item
	// Meta is caller JSON stored with the run (never secrets).
	Meta json.RawMessage
}

// Run starts a new run of agent a on input in and drives it until it
// completes, fails, is cancelled or stops with interruptions (then
// [RunResult.Interruptions] says what it waits for, and [Runtime.Resume]
// goes on). sinks receive this drive's events besides Config.Sinks. A nil
// in starts a run with no input items.
func (rt *Runtime) Run(ctx context.Context, a *AgentSpec, in *Input, sinks ...EventSink) (*RunResult, error) {
	d, err := rt.newDrive(a, sinks)
	if err != nil {
		return nil, err
	}
	in, runID, err := rt.checkInput(in)
	if err != nil {
		return nil, err
	}
	d.fence = store.Fence{Key: store.RunClaimKey(runID), Holder: rt.driveHolder()}
	cp := &checkpoint{V: 1, TraceID: rt.newID(), PolicyVersion: d.pv, Agent: recordAgent(a)}
	if in.SessionID != "" {
		if err := d.claimSession(ctx, in.SessionID); err != nil {
			return nil, err
		}
		defer d.releaseSession()
		// The run holds its session by reference: its log gets only its
		// own items (drive_session.go).
		history, rev, window, omitted, err := rt.startSession(ctx, in.SessionID, rt.sessionWindow(a))
		if err != nil {
			return nil, err
		}
		cp.SessionBase, cp.SessionPrefix, cp.SessionRef, cp.SessionWindow = rev, len(history), true, window
		if rt.sessionWindow(a) > 0 {
			cp.SessionOmitted = &omitted
		}
		cp.withPrefix(history)
	}
	for _, it := range in.Items {
		cp.Items = append(cp.Items, d.redactItem(it))
	}
	head, log, err := storedForm(cp)
	cp.logged = len(cp.Items)
	if err != nil {
		return nil, err
	}
	run := &store.Run{Tenant: rt.tenant, ID: runID, ParentID: in.ParentRunID, SessionID: in.SessionID, AgentID: a.ID,
		AgentDigest: a.Digest(), Status: store.RunRunning, Checkpoint: head, Log: log, Meta: d.redactJSON(in.Meta)}
	if a.Limits.RunTimeout > 0 {
		run.Deadline = rt.clock().Add(a.Limits.RunTimeout)
	}
	// The run is created already claimed by this drive, with its
	// run.started event (drive_claim.go).
	d.cp = cp
	fallback, err := d.createClaimed(ctx, run)
	if fallback {
		var created *store.Run
		if created, err = rt.store.RunCreate(ctx, &store.RunCreateParams{Run: run}); err == nil {
			d.run = created
		}
	}
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: %s (a run id is never re-run; continue it with Runtime.Resume)", ErrRunExists, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: create run %s: %w", runID, err)
	}
	d.cpEnc = cpEncoder{stored: cp.logged}
	return rt.claimAndDrive(ctx, d, EvRunStarted, nil)
}

// checkInput checks the input of a new run ([Runtime.Run],
// [Runtime.Enqueue]): every item valid, and a run id (the input's, or a
// new one from Config.NewID) that a store and an idempotency key accept.
// A nil in is an input with no items.
func (rt *Runtime) checkInput(in *Input) (*Input, string, error) {
	if in == nil {
		in = &Input{}
	}
	for i := range in.Items {
		if err := in.Items[i].Validate(); err != nil {
			return nil, "", fmt.Errorf("actoviq: input item %d: %w", i, err)
		}
	}
	runID, field := in.RunID, "Input.RunID"
	if runID == "" {
		runID, field = rt.newID(), "Config.NewID"
	}
	if err := checkRunID(field, runID); err != nil {
		return nil, "", err
	}
	return in, runID, nil
}

// How a drive stops when nobody asked it a question (docs/design.md#recovery):
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

// Cancel is the caller's decision to end a run, made once: when Cancel
// returns nil the run has ended cancelled, whoever was driving it and
// whatever state it was in; otherwise it returns why it did not, and the
// run is left as it was.
//
//   - A run nobody drives (queued, interrupted, stalled) is ended cancelled
//     at once.
//   - A drive of the run in this process is stopped (its context is
//     cancelled) and Cancel waits for it to end.
//   - A drive in another process is asked to stop: the request is recorded
//     in the store, bound to that drive's claim (its epoch), and that drive
//     ends the run cancelled at its next heartbeat (within LeaseTTL/3) or
//     when it stops, whichever comes first. Cancel waits for that; if the
//     drive stops without having seen the request, Cancel takes the run's
//     claim and ends the run cancelled itself.
//   - If ctx ends first, Cancel withdraws its request and returns an error:
//     a request never outlives its Cancel to act on a later drive.
//   - A run that completed or failed before the cancellation took effect is
//     not changed: Cancel returns a [*RunFinishedError] saying so. A run
//     already cancelled returns nil.
//
// A cancelled run is final, also when Cancel stopped a side effect in
// flight: nothing runs again, and a call that was started keeps its ledger
// state (started or unknown). [Runtime.Decide] can still record what
// happened to such a call (committed or failed), for the audit trail; the
// run does not continue. Every way a run ends cancelled (Cancel, the
// context of Run or Resume, its deadline) applies the parent-close policy
// to its background children ([ParentClosePolicy]), and cancels its
// foreground children with it. To stop driving without deciding anything
// (a process shutting down), use [Runtime.Close].
func (rt *Runtime) Cancel(ctx context.Context, runID string) error {
	err := rt.cancelOnce(ctx, runID)
	if err == nil {
		// Normally done by the drive that ended the run cancelled; again
		// here for a run whose canceller stopped before it was done.
		rt.closeChildren(ctx, runID)
	}
	return err
}

// RunResult is what driving a run produced.// RunResult is what driving a run produced.
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
