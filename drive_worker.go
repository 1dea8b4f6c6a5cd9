package actoviq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// registry holds the agents a worker can build, by id and digest: two
// versions of one agent may be registered while runs of both exist.
type registry struct {
	mu     sync.Mutex
	agents map[string]map[string]*AgentSpec // id → digest → agent
}

func (rt *Runtime) registered(id, digest string) (*AgentSpec, bool) {
	rt.reg.mu.Lock()
	defer rt.reg.mu.Unlock()
	a, ok := rt.reg.agents[id][digest]
	return a, ok
}

func (rt *Runtime) registeredIDs() []string {
	rt.reg.mu.Lock()
	defer rt.reg.mu.Unlock()
	ids := make([]string, 0, len(rt.reg.agents))
	for id := range rt.reg.agents {
		ids = append(ids, id)
	}
	return ids
}

// work drives one claimed run.
func (rt *Runtime) work(ctx context.Context, o *WorkOptions, run *store.Run, claim *store.Claim) (*RunResult, error) {
	fence := store.Fence{Key: claim.Key, Holder: claim.Holder, Epoch: claim.Epoch}
	// The version that drives the run now: the one it started with, or the
	// one that took it over since (agent_change.go). A worker never takes a
	// run back to an older version, even one it has registered.
	digest := run.AgentDigest
	if d := lastAgentDigest(run); d != "" {
		digest = d
	}
	a, ok := rt.registered(run.AgentID, digest)
	if !ok && o.Resolve != nil {
		info, err := rt.Get(ctx, run.ID)
		if err != nil {
			rt.releaseFence(ctx, fence)
			return nil, err
		}
		ra, err := o.Resolve(ctx, info)
		if err != nil {
			return rt.park(ctx, run.ID, fence, CodeNoAgent, fmt.Sprintf("the worker could not build agent %s: %v", run.AgentID, err))
		}
		a, ok = ra, ra.Digest() == digest
		if !ok {
			return rt.park(ctx, run.ID, fence, CodeAgentChanged, fmt.Sprintf(
				"the run is driven by agent %s digest %s; the worker built digest %s", run.AgentID, digest, ra.Digest()))
		}
	}
	if !ok {
		return rt.park(ctx, run.ID, fence, CodeNoAgent, fmt.Sprintf(
			"no registered version of agent %s has digest %s, the version that drives the run", run.AgentID, digest))
	}
	return rt.driveClaimed(ctx, a, run.ID, fence, o.Sinks)
}

// retryInPlace queues a retry-safe background child again when its drive
// stops for what a retry may get past (a provider outage, a started read
// or idempotent write) and it has attempts left: after the backoff, under
// the drive's claim, it records the re-execute decisions (same keys) and
// the queued status in one write. The child is never left interrupted
// for a retry nobody will make, whoever drove it (a worker, a Resume).
func (d *drive) retryInPlace(ctx context.Context) (*RunResult, error, bool) {
	ci, ins := d.cp.Child, d.cp.Interruptions
	if ci == nil || ci.Mode != "background" || ci.Failure != RetrySafe || ci.Attempts+1 >= ci.MaxAttempts || !retriable(ins) {
		return nil, nil, false
	}
	backoff := ci.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	backoff = min(backoff<<min(ci.Attempts, 16), time.Hour)
	t := time.NewTimer(backoff)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	if d.pastDeadline() || d.cancelled(ctx) || errors.Is(context.Cause(ctx), errLostClaim) {
		if res, err, stop := d.stopCheck(ctx); stop {
			return res, err, true
		}
	}
	var ds []Decision
	for _, in := range ins {
		if in.Kind == InterruptRecovery && in.RunID == "" {
			ds = append(ds, Decision{CallID: in.CallID, Kind: DecideReexecute, By: "retry-safe",
				Reason: "a retry-safe child: its tools are all read or idempotent-write, so a new attempt with the same key is safe", byRuntime: true})
		}
	}
	released := d.event(EvRunReleased, "", &RunReleasedData{Holder: d.fence.Holder, Epoch: d.fence.Epoch,
		Reason: fmt.Sprintf("retry-safe: attempt %d of %d after %s", ci.Attempts+2, ci.MaxAttempts, backoff)})
	if err := d.applyDecisionsAndQueue(ctx, ds, func(cp *checkpoint) {
		cp.Child.Attempts++
		cp.Interruptions = nil
	}, released); err != nil {
		return nil, err, true
	}
	return &RunResult{RunID: d.run.ID, Status: StatusQueued, Usage: d.cp.Usage}, nil, true
}

// driveClaimed drives a run whose claim the caller holds.
func (rt *Runtime) driveClaimed(ctx context.Context, a *AgentSpec, runID string, fence store.Fence, sinks []EventSink) (*RunResult, error) {
	d, err := rt.newDrive(a, sinks)
	if err != nil {
		rt.releaseFence(ctx, fence)
		return nil, err
	}
	d.fence = fence
	if err := d.read(ctx, runID); err != nil {
		d.release(ctx)
		return nil, err
	}
	// A version the run may not take (a refused change to what an unsettled
	// call depends on) parks the run with the reason, under this claim: a
	// run left claimable would be claimed again at once, and refused again.
	var changed *AgentChangeError
	if err := d.checkAgent(nil); errors.As(err, &changed) {
		return rt.park(ctx, runID, fence, CodeAgentChanged, changed.Error())
	}
	if d.run.SessionID != "" {
		if err := d.claimSession(ctx, d.run.SessionID); err != nil {
			d.release(ctx)
			return nil, err
		}
		defer d.releaseSession()
	}
	if ci := d.cp.Child; ci != nil { // a child keeps to its tree's budget
		left, why, err := rt.budgetLeft(ctx, ci)
		if err != nil {
			d.release(ctx)
			return nil, err
		}
		if why != "" {
			left = &budgetLeft{} // spent: the first check ends the run failed
		}
		ctx = withBudget(ctx, left)
	}
	start := EvRunResumed
	if d.run.EventSeq == 0 {
		start = EvRunStarted
	}
	return rt.claimAndDrive(ctx, d, start, nil)
}

// park stops a claimed run that this worker cannot drive: interrupted,
// with the reason as its error, its ledger untouched, for an operator (or
// a worker with the right agent after Runtime.Resume).
func (rt *Runtime) park(ctx context.Context, runID string, fence store.Fence, code, msg string) (*RunResult, error) {
	d := rt.bareDrive()
	d.fence = fence
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return nil, err
	}
	d.cp.Error = &RunError{Code: code, Message: msg + "; resume it with the agent it was started with (Runtime.Resume)"}
	if err := d.finish(ctx, store.RunInterrupted, EvRunInterrupted); err != nil {
		return nil, err
	}
	return d.cp.result(runID, store.RunInterrupted), nil
}

// parkCodes are the RunError codes park writes.
var parkCodes = map[string]bool{CodeNoAgent: true, CodeAgentChanged: true}

// unpark clears the reason a worker parked the run with, now that a drive
// with an agent takes it up again.
func (d *drive) unpark() {
	if d.cp.Error != nil && parkCodes[d.cp.Error.Code] && d.run.Status == store.RunInterrupted {
		d.cp.Error = nil
	}
}

func (rt *Runtime) releaseFence(ctx context.Context, f store.Fence) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rt.commitTO)
	defer cancel()
	_ = rt.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: rt.tenant, Fence: f})
}

// handBack ends a released drive: the run goes back to the queue as it is.
func (d *drive) handBack(ctx context.Context) (*RunResult, error) {
	if res, err, stop := d.requestedStop(ctx); stop { // a Cancel from another process (drive_cancel.go)
		return res, err
	}
	if err := d.saveRun(ctx, store.RunQueued, nil, d.event(EvRunReleased, "", &RunReleasedData{
		Holder: d.fence.Holder, Epoch: d.fence.Epoch, Reason: "the worker shut down before the run ended"})); err != nil {
		return nil, err
	}
	return &RunResult{RunID: d.run.ID, Status: StatusQueued, Usage: d.cp.Usage}, nil
}

// newQueued writes a queued run record.
func (rt *Runtime) newQueued(ctx context.Context, a *AgentSpec, in *Input) (*store.Run, error) {
	return rt.newQueuedWith(ctx, a, in, nil)
}

// newQueuedWith is newQueued; mutate, when set, adjusts the checkpoint and
// the record before they are written.
func (rt *Runtime) newQueuedWith(ctx context.Context, a *AgentSpec, in *Input, mutate func(*checkpoint, *store.Run)) (*store.Run, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if in != nil && in.SessionID != "" {
		return nil, fmt.Errorf("actoviq: run for session %s: a queued run cannot continue a session; use Runtime.Run", in.SessionID)
	}
	in, runID, err := rt.checkInput(in)
	if err != nil {
		return nil, err
	}
	d := &drive{rt: rt}
	cp := &checkpoint{V: 1, TraceID: rt.newID(), PolicyVersion: a.Approval.version(), Agent: recordAgent(a)}
	for _, it := range in.Items {
		cp.Items = append(cp.Items, d.redactItem(it))
	}
	run := &store.Run{Tenant: rt.tenant, ID: runID, ParentID: in.ParentRunID, AgentID: a.ID,
		AgentDigest: a.Digest(), Status: store.RunQueued, Meta: in.Meta}
	if a.Limits.RunTimeout > 0 {
		run.Deadline = rt.clock().Add(a.Limits.RunTimeout)
	}
	if mutate != nil {
		mutate(cp, run)
	}
	head, log, err := storedForm(cp)
	if err != nil {
		return nil, err
	}
	run.Checkpoint, run.Log = head, log
	created, err := rt.store.RunCreate(ctx, &store.RunCreateParams{Run: run})
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: %s (a run id is never re-run; use Resume)", ErrRunExists, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: create run %s: %w", runID, err)
	}
	return created, nil
}

// requeueWith records decisions and queues the run, under its claim; the
// decisions for its children's calls (kids) are recorded after the run is
// stored queued, while the claim still keeps workers off it.
func (rt *Runtime) requeueWith(ctx context.Context, runID string, decisions []Decision, kids *childDecisions, reason string) error {
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return err
	}
	if d.run.Status.Terminal() {
		return fmt.Errorf("%w: %s is %s", ErrRunFinished, runID, d.run.Status)
	}
	if err := d.checkDecisions(decisions); err != nil {
		return err
	}
	if err := d.claim(ctx); err != nil {
		return err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return err
	}
	if d.run.Status.Terminal() {
		return fmt.Errorf("%w: %s is %s", ErrRunFinished, runID, d.run.Status)
	}
	// Past its deadline the run ends cancelled with its ledger untouched,
	// and the decisions are refused, as Resume does.
	if len(decisions) > 0 && d.pastDeadline() {
		err, _ := d.resumeDecisions(ctx, decisions)
		return err
	}
	// The decisions and the queued status are one write.
	if err := d.applyDecisionsAndQueue(ctx, decisions, nil, d.event(EvRunReleased, "", &RunReleasedData{Reason: reason})); err != nil {
		return err
	}
	// A process that dies here leaves the run queued with its children's
	// questions open: the next drive stops on them again, for a person.
	return kids.record(ctx, rt)
}
