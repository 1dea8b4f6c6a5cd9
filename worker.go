package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// A worker is a loop over the store's queue: it claims a queued run (or a
// running one whose holder is gone) with RunClaimNext, which takes the
// run's claim with a new epoch in the same transaction, and drives it
// through the same loop as Run and Resume, heartbeat and fenced writes
// included. A stale run is resumed from its checkpoint, so the recovery
// rules of SPEC §4 decide what happens to a call its dead holder had
// started: a side effect of unknown outcome stops the run for
// reconciliation; it is never replayed.

// ErrReleased is the cause a worker cancels a drive with when its grace
// period after shutdown has passed: the run goes back to the queue at its
// next step (status queued), for another worker. It is not a cancellation
// of the run.
var ErrReleased = errors.New("actoviq: run released by its worker")

// StatusQueued is the status of a run that waits for a worker.
const StatusQueued Status = "queued"

// EvRunReleased is the event of a run handed back to the queue.
const EvRunReleased = "run.released"

// RunReleasedData is the payload of run.released: a run went back to the
// queue, from a worker that shut down ([ErrReleased]) or by
// [Runtime.Requeue].
type RunReleasedData struct {
	// Holder and Epoch name the drive that released it; empty for Requeue.
	Holder string `json:"holder,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	// Reason says why.
	Reason string `json:"reason"`
}

// EventTypes implements [EventData].
func (*RunReleasedData) EventTypes() []string { return []string{EvRunReleased} }

// registry holds the agents a worker can build, by id and digest: two
// versions of one agent may be registered while runs of both exist.
type registry struct {
	mu     sync.Mutex
	agents map[string]map[string]*AgentSpec // id → digest → agent
}

// Register makes agents available to [Runtime.Work], which runs a queued
// run only under the agent with the run's agent id and digest. Registering
// a second version of an agent id keeps the first: runs started under
// either are driven by the version they started with.
func (e *Runtime) Register(agents ...*AgentSpec) error {
	for _, a := range agents {
		if err := a.Validate(); err != nil {
			return err
		}
	}
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	if e.reg.agents == nil {
		e.reg.agents = map[string]map[string]*AgentSpec{}
	}
	for _, a := range agents {
		if e.reg.agents[a.ID] == nil {
			e.reg.agents[a.ID] = map[string]*AgentSpec{}
		}
		e.reg.agents[a.ID][a.Digest()] = a
	}
	return nil
}

func (e *Runtime) registered(id, digest string) (*AgentSpec, bool) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	a, ok := e.reg.agents[id][digest]
	return a, ok
}

func (e *Runtime) registeredIDs() []string {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	ids := make([]string, 0, len(e.reg.agents))
	for id := range e.reg.agents {
		ids = append(ids, id)
	}
	return ids
}

// WorkOptions configures [Runtime.Work]. A nil *WorkOptions means
// defaults.
type WorkOptions struct {
	// Concurrency bounds the runs driven at once; 0 means 1.
	Concurrency int
	// PollInterval is how long an idle worker waits before it looks for
	// work again when nothing wakes it earlier (a store that implements
	// store.QueueNotifier wakes it when a run is queued; a lease that
	// expires wakes nobody). Zero means 1 s.
	PollInterval time.Duration
	// Grace is how long in-flight drives may go on after ctx ends. Then
	// they are released: cancelled with [ErrReleased], each run goes back
	// to the queue at its next step (a call that was running when the
	// cancellation reached it is recorded as the recovery rules say). Zero
	// means 30 s; negative means no grace.
	Grace time.Duration
	// Abort, when closed, ends the grace period at once (a second signal).
	Abort <-chan struct{}
	// Resolve builds the agent of a run whose agent id and digest are not
	// registered (the command line rebuilds it from the run's Meta). Nil
	// means registered agents only.
	Resolve func(ctx context.Context, run *RunInfo) (*AgentSpec, error)
	// ResolveAgentIDs are the agent ids Resolve can build, so that the
	// worker claims only runs it can drive. Empty with Resolve set means
	// any agent id.
	ResolveAgentIDs []string
	// Sinks receive the events of every drive, after [Config.Sinks].
	Sinks []EventSink
	// Logger logs claims, ends of drives and store errors; nil means none.
	Logger *slog.Logger
	// OnDrive, when set, is called after each drive with its outcome.
	OnDrive func(runID string, res *RunResult, err error)
}

func (o *WorkOptions) withDefaults() (WorkOptions, error) {
	var c WorkOptions
	if o != nil {
		c = *o
	}
	switch {
	case c.Concurrency < 0:
		return c, errors.New("actoviq: WorkOptions.Concurrency is negative")
	case c.Concurrency == 0:
		c.Concurrency = 1
	}
	switch {
	case c.PollInterval < 0:
		return c, errors.New("actoviq: WorkOptions.PollInterval is negative")
	case c.PollInterval == 0:
		c.PollInterval = time.Second
	}
	if c.Grace == 0 {
		c.Grace = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Work claims queued runs of this runtime's tenant (and running runs whose
// holder is gone) and drives them, at most Concurrency at a time, until
// ctx ends. Then it stops claiming, lets in-flight drives finish for the
// grace period, releases the rest back to the queue, and returns nil.
//
// Several workers, in one process or on many machines, may work one store:
// a run is claimed by one of them at a time (PostgreSQL: FOR UPDATE SKIP
// LOCKED; SQLite: one write transaction), every write of a drive is fenced
// by its claim's epoch, and a drive that loses its claim stops. A run whose
// agent the worker cannot build, or whose agent changed, is stopped
// interrupted with the reason, for Runtime.Resume with the right agent.
func (e *Runtime) Work(ctx context.Context, opts *WorkOptions) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	ids := e.registeredIDs()
	if len(ids) == 0 && o.Resolve == nil {
		return errors.New("actoviq: Work: no agents registered (Runtime.Register) and no WorkOptions.Resolve")
	}
	var filter []string
	if o.Resolve == nil || len(o.ResolveAgentIDs) > 0 {
		filter = append(ids, o.ResolveAgentIDs...)
	}
	qn, _ := e.store.(store.QueueNotifier)

	// Drives outlive ctx by the grace period: they run on a context of
	// their own, cancelled with ErrReleased when the grace ends.
	driveCtx, release := context.WithCancelCause(context.WithoutCancel(ctx))
	defer release(nil)
	slots := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	failures := 0
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		var wake <-chan struct{}
		if qn != nil {
			if ch, err := qn.QueueWatch(ctx, e.tenant); err == nil {
				wake = ch
			}
		}
		holder := e.driveHolder()
		run, claim, err := e.store.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: e.tenant, Holder: holder, TTL: e.ttl,
			AgentIDs: filter, Stale: true})
		if err == nil {
			failures = 0
			o.Logger.Info("claimed run", "run", run.ID, "agent", run.AgentID, "holder", holder, "epoch", claim.Epoch)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				res, err := e.work(driveCtx, &o, run, claim)
				switch {
				case err != nil:
					o.Logger.Warn("drive stopped", "run", run.ID, "err", err)
				default:
					o.Logger.Info("drive ended", "run", run.ID, "status", res.Status)
				}
				if o.OnDrive != nil {
					o.OnDrive(run.ID, res, err)
				}
			}()
			continue
		}
		<-slots
		if ctx.Err() != nil {
			break
		}
		wait := o.PollInterval
		if !errors.Is(err, store.ErrNotFound) {
			// The store is failing: back off, up to ten poll intervals.
			failures++
			o.Logger.Warn("claim failed", "err", err)
			wait = min(time.Duration(failures)*o.PollInterval, 10*o.PollInterval)
			wake = nil
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var graceOver <-chan time.Time
	if o.Grace > 0 {
		t := time.NewTimer(o.Grace)
		defer t.Stop()
		graceOver = t.C
	} else {
		release(ErrReleased)
	}
	select {
	case <-done:
		return nil
	case <-graceOver:
	case <-o.Abort:
	}
	o.Logger.Info("grace period over: releasing in-flight runs")
	release(ErrReleased)
	<-done
	return nil
}

// work drives one claimed run.
func (e *Runtime) work(ctx context.Context, o *WorkOptions, run *store.Run, claim *store.Claim) (*RunResult, error) {
	fence := store.Fence{Key: claim.Key, Holder: claim.Holder, Epoch: claim.Epoch}
	a, ok := e.registered(run.AgentID, run.AgentDigest)
	if d := lastAgentDigest(run); !ok && d != "" {
		a, ok = e.registered(run.AgentID, d) // a version that took the run over (agent_change.go)
	}
	if !ok && o.Resolve != nil {
		info, err := e.Get(ctx, run.ID)
		if err != nil {
			e.releaseFence(ctx, fence)
			return nil, err
		}
		ra, err := o.Resolve(ctx, info)
		if err != nil {
			return e.park(ctx, run.ID, fence, "no_agent", fmt.Sprintf("the worker could not build agent %s: %v", run.AgentID, err))
		}
		a, ok = ra, ra.Digest() == run.AgentDigest || ra.Digest() == lastAgentDigest(run)
		if !ok {
			return e.park(ctx, run.ID, fence, "agent_changed", fmt.Sprintf(
				"the run was started with agent %s digest %s; the worker built digest %s", run.AgentID, run.AgentDigest, ra.Digest()))
		}
	}
	if !ok {
		return e.park(ctx, run.ID, fence, "no_agent", fmt.Sprintf(
			"no registered version of agent %s has digest %s", run.AgentID, run.AgentDigest))
	}
	res, err := e.driveClaimed(ctx, a, run.ID, fence, o.Sinks)
	if err == nil && res.Status == StatusInterrupted && retriable(res.Interruptions) {
		if again, rerr := e.retryBackground(ctx, run.ID, res.Interruptions); rerr != nil || again != nil {
			return again, rerr
		}
	}
	return res, err
}

// retryBackground queues a retry-safe background child again after a
// drive that stopped for what a retry may get past (a provider outage, a
// started read or idempotent write), recording the re-execute decisions,
// while it has attempts left. It returns nil when the run is not retried.
func (e *Runtime) retryBackground(ctx context.Context, runID string, ins []Interruption) (*RunResult, error) {
	run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID})
	if err != nil {
		return nil, err
	}
	cp, err := decodeCheckpoint(run)
	if err != nil {
		return nil, err
	}
	ci := cp.Child
	if ci == nil || ci.Mode != "background" || ci.Failure != RetrySafe || ci.Attempts+1 >= ci.MaxAttempts {
		return nil, nil
	}
	var ds []Decision
	for _, in := range ins {
		if in.Kind == InterruptRecovery && in.RunID == "" {
			ds = append(ds, Decision{CallID: in.CallID, Kind: DecideReexecute, By: "retry-safe",
				Reason: "a retry-safe child: its tools are all read or idempotent-write, so a new attempt with the same key is safe"})
		}
	}
	err = e.requeueWith(ctx, runID, ds, func(cp *checkpoint) {
		if cp.Child != nil {
			cp.Child.Attempts++
		}
	}, fmt.Sprintf("retry-safe: attempt %d of %d", ci.Attempts+2, ci.MaxAttempts))
	if err != nil {
		return nil, err
	}
	return &RunResult{RunID: runID, Status: StatusQueued, Usage: cp.Usage}, nil
}

// driveClaimed drives a run whose claim the caller holds.
func (e *Runtime) driveClaimed(ctx context.Context, a *AgentSpec, runID string, fence store.Fence, sinks []EventSink) (*RunResult, error) {
	d, err := e.newDrive(a, sinks)
	if err != nil {
		e.releaseFence(ctx, fence)
		return nil, err
	}
	d.fence = fence
	if err := d.read(ctx, runID); err != nil {
		d.release(ctx)
		return nil, err
	}
	if d.run.SessionID != "" {
		if err := d.claimSession(ctx, d.run.SessionID); err != nil {
			d.release(ctx)
			return nil, err
		}
		defer d.releaseSession()
	}
	if ci := d.cp.Child; ci != nil { // a child keeps to its tree's budget (child.go)
		left, why, err := e.budgetLeft(ctx, ci)
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
	return e.claimAndDrive(ctx, d, start, nil)
}

// park stops a claimed run that this worker cannot drive: interrupted,
// with the reason as its error, its ledger untouched, for an operator (or
// a worker with the right agent after Runtime.Resume).
func (e *Runtime) park(ctx context.Context, runID string, fence store.Fence, code, msg string) (*RunResult, error) {
	d := e.bareDrive()
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
var parkCodes = map[string]bool{"no_agent": true, "agent_changed": true}

// unpark clears the reason a worker parked the run with, now that a drive
// with an agent takes it up again.
func (d *drive) unpark() {
	if d.cp.Error != nil && parkCodes[d.cp.Error.Code] && d.run.Status == store.RunInterrupted {
		d.cp.Error = nil
	}
}

func (e *Runtime) releaseFence(ctx context.Context, f store.Fence) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.commitTO)
	defer cancel()
	_ = e.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: e.tenant, Fence: f})
}

// handBack ends a released drive: the run goes back to the queue as it is.
func (d *drive) handBack(ctx context.Context) (*RunResult, error) {
	if err := d.saveRun(ctx, store.RunQueued, nil, d.event(EvRunReleased, "", &RunReleasedData{
		Holder: d.fence.Holder, Epoch: d.fence.Epoch, Reason: "the worker shut down before the run ended"})); err != nil {
		return nil, err
	}
	return &RunResult{RunID: d.run.ID, Status: StatusQueued, Usage: d.cp.Usage}, nil
}

// Enqueue creates a run in status queued and returns its id without
// driving it: a worker ([Runtime.Work]) with the agent registered claims
// it. Input.SessionID is refused: a queued run would read its session's
// history before the runs queued ahead of it have appended theirs.
func (e *Runtime) Enqueue(ctx context.Context, a *AgentSpec, in *Input) (string, error) {
	run, err := e.newQueued(ctx, a, in)
	if err != nil {
		return "", err
	}
	return run.ID, nil
}

// newQueued writes a queued run record.
func (e *Runtime) newQueued(ctx context.Context, a *AgentSpec, in *Input) (*store.Run, error) {
	return e.newQueuedWith(ctx, a, in, nil)
}

// newQueuedWith is newQueued; mutate, when set, adjusts the checkpoint and
// the record before they are written.
func (e *Runtime) newQueuedWith(ctx context.Context, a *AgentSpec, in *Input, mutate func(*checkpoint, *store.Run)) (*store.Run, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if in == nil {
		in = &Input{}
	}
	if in.SessionID != "" {
		return nil, fmt.Errorf("actoviq: run for session %s: a queued run cannot continue a session; use Runtime.Run", in.SessionID)
	}
	for i := range in.Items {
		if err := in.Items[i].Validate(); err != nil {
			return nil, fmt.Errorf("actoviq: input item %d: %w", i, err)
		}
	}
	runID, field := in.RunID, "Input.RunID"
	if runID == "" {
		runID, field = e.newID(), "Config.NewID"
	}
	if err := checkRunID(field, runID); err != nil {
		return nil, err
	}
	d := &drive{e: e}
	cp := &checkpoint{V: 1, TraceID: e.newID(), PolicyVersion: a.Approval.version()}
	for _, it := range in.Items {
		cp.Items = append(cp.Items, d.redactItem(it))
	}
	run := &store.Run{Tenant: e.tenant, ID: runID, ParentID: in.ParentRunID, AgentID: a.ID,
		AgentDigest: a.Digest(), Status: store.RunQueued, Meta: in.Meta}
	if a.Limits.RunTimeout > 0 {
		run.Deadline = e.clock().Add(a.Limits.RunTimeout)
	}
	if mutate != nil {
		mutate(cp, run)
	}
	raw, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	run.Checkpoint = raw
	created, err := e.store.RunCreate(ctx, &store.RunCreateParams{Run: run})
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: %s (a run id is never re-run; use Resume)", ErrRunExists, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: create run %s: %w", runID, err)
	}
	return created, nil
}

// Requeue records decisions on a run that is not being driven and hands
// it back to the queue, for a worker to resume. A run that already ended
// is returned unchanged with [ErrRunFinished].
func (e *Runtime) Requeue(ctx context.Context, runID string, decisions ...Decision) error {
	return e.requeueWith(ctx, runID, decisions, nil, "handed to the queue (Runtime.Requeue)")
}

func (e *Runtime) requeueWith(ctx context.Context, runID string, decisions []Decision, mutate func(*checkpoint), reason string) error {
	d := e.bareDrive()
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
	// and the decisions are refused, as Resume does (terminal.go).
	if err, stop := d.resumeDecisions(ctx, decisions); err != nil || stop {
		return err
	}
	if mutate != nil {
		mutate(d.cp)
	}
	return d.saveRun(ctx, store.RunQueued, nil, d.event(EvRunReleased, "", &RunReleasedData{Reason: reason}))
}

// Wait blocks until the run stops (completed, failed, cancelled or
// interrupted) and returns its result, however it is driven: by a worker,
// a Resume, another process. It polls the store; ctx bounds the wait.
func (e *Runtime) Wait(ctx context.Context, runID string) (*RunResult, error) {
	delay := 10 * time.Millisecond
	for {
		run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID})
		if err != nil {
			return nil, fmt.Errorf("actoviq: wait for %s: %w", runID, err)
		}
		if run.Status.Terminal() || run.Status == store.RunInterrupted {
			cp, err := decodeCheckpoint(run)
			if err != nil {
				return nil, err
			}
			// A retry-safe background child its worker is about to queue
			// again has not stopped.
			ci := cp.Child
			retrying := run.Status == store.RunInterrupted && ci != nil && ci.Mode == "background" && ci.Failure == RetrySafe &&
				ci.Attempts+1 < ci.MaxAttempts && retriable(cp.Interruptions)
			if !retrying {
				return cp.result(run.ID, run.Status), nil
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("actoviq: wait for %s: %w", runID, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
