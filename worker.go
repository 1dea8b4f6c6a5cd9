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

// Register makes agents available to [Runtime.Work], which drives a run
// only under the agent with the run's agent id and the digest of the
// version that drives it now: the version it started with, or the one
// that took it over since (a Resume with a new version). Registering a
// second version of an agent id keeps the first, for the runs the first
// still drives; a worker never takes a run back to an older version. A run
// no registered version can drive is parked (interrupted, code no_agent
// or agent_changed), not left for the next claim.
func (rt *Runtime) Register(agents ...*AgentSpec) error {
	for _, a := range agents {
		if err := a.Validate(); err != nil {
			return err
		}
	}
	rt.reg.mu.Lock()
	defer rt.reg.mu.Unlock()
	if rt.reg.agents == nil {
		rt.reg.agents = map[string]map[string]*AgentSpec{}
	}
	for _, a := range agents {
		if rt.reg.agents[a.ID] == nil {
			rt.reg.agents[a.ID] = map[string]*AgentSpec{}
		}
		rt.reg.agents[a.ID][a.Digest()] = a
	}
	return nil
}

// A worker is a loop over the store's queue: it claims a queued run (or a
// running one whose holder is gone) with RunClaimNext, which takes the
// run's claim with a new epoch in the same transaction, and drives it
// through the same loop as Run and Resume, heartbeat and fenced writes
// included. A stale run is resumed from its checkpoint, so the recovery
// rules of docs/design.md#recovery decide what happens to a call its dead holder had
// started: a side effect of unknown outcome stops the run for
// reconciliation; it is never replayed.

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
	// EscalateEvery is how often the worker runs
	// [Runtime.EscalateApprovals] (with [Config].Approvers set). Zero
	// means 30 s; negative means never.
	EscalateEvery time.Duration
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
	if c.EscalateEvery == 0 {
		c.EscalateEvery = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Work claims queued runs of this runtime's tenant (and running runs whose
// holder is gone) and drives them, at most Concurrency at a time, until
// ctx ends. With [Config.Retention] set it also removes finished runs by
// that policy, in bounded batches, every Retention.Every. Then it stops claiming, lets in-flight drives finish for the
// grace period, releases the rest back to the queue, and returns nil.
//
// Several workers, in one process or on many machines, may work one store:
// a run is claimed by one of them at a time (PostgreSQL: FOR UPDATE SKIP
// LOCKED; SQLite: one write transaction), every write of a drive is fenced
// by its claim's epoch, and a drive that loses its claim stops. A run whose
// agent the worker cannot build, or whose agent changed, is stopped
// interrupted with the reason, for Runtime.Resume with the right agent.
func (rt *Runtime) Work(ctx context.Context, opts *WorkOptions) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	ids := rt.registeredIDs()
	if len(ids) == 0 && o.Resolve == nil {
		return errors.New("actoviq: Work: no agents registered (Runtime.Register) and no WorkOptions.Resolve")
	}
	var filter []string
	if o.Resolve == nil || len(o.ResolveAgentIDs) > 0 {
		filter = append(ids, o.ResolveAgentIDs...)
	}
	qn, _ := rt.store.(store.QueueNotifier)
	if rt.retention.KeepFinished > 0 {
		// Retention sweeps beside the claims, in bounded batches.
		var sweeping sync.WaitGroup
		sweeping.Add(1)
		go func() { defer sweeping.Done(); rt.sweep(ctx, &o) }()
		defer sweeping.Wait()
	}
	stopPresence := rt.advertise(ctx, filter, &o)
	defer stopPresence()

	// Drives outlive ctx by the grace period: they run on a context of
	// their own, cancelled with ErrReleased when the grace ends.
	driveCtx, release := context.WithCancelCause(context.WithoutCancel(ctx))
	defer release(nil)
	slots := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	failures, leaseLogged := 0, 0
	logLease := func() { // a lease too short for the store (lease.go)
		if w, n := rt.leaseWarned(leaseLogged); w != nil {
			leaseLogged = n
			o.Logger.Warn("lease too short for the store", "lease", w.LeaseTTL, "op", w.Op, "took", w.Took, "suggested", w.Suggested, "warning", w.String())
		}
	}
	defer logLease() // after the drives: what they saw last
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		var wake <-chan struct{}
		if qn != nil {
			if ch, err := qn.QueueWatch(ctx, rt.tenant); err == nil {
				wake = ch
			}
		}
		holder := rt.driveHolder()
		began := rt.clock()
		run, claim, err := rt.store.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: rt.tenant, Holder: holder, TTL: rt.ttl,
			AgentIDs: filter, Stale: true})
		rt.observeStore("claim", began)
		logLease()
		if err == nil {
			failures = 0
			rt.claimed(ctx, o.Sinks, run, claim, rt.clock().Sub(began))
			o.Logger.Info("claimed run", "run", run.ID, "agent", run.AgentID, "holder", holder, "epoch", claim.Epoch)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				res, err := rt.work(driveCtx, &o, run, claim)
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

// Enqueue creates a run in status queued and returns its id without
// driving it: a worker ([Runtime.Work]) with the agent registered claims
// it. Input.SessionID is refused: a queued run would read its session's
// history before the runs queued ahead of it have appended theirs.
func (rt *Runtime) Enqueue(ctx context.Context, a *AgentSpec, in *Input) (string, error) {
	run, err := rt.newQueued(ctx, a, in)
	if err != nil {
		return "", err
	}
	return run.ID, nil
}

// Requeue records decisions on a run that is not being driven and hands
// it back to the queue, for a worker to resume. A decision for a call of
// one of the run's children (the run lists it among its interruptions) is
// recorded on that child, as [Runtime.Decide] does. A run that already
// ended is returned unchanged with [ErrRunFinished].
func (rt *Runtime) Requeue(ctx context.Context, runID string, decisions ...Decision) error {
	rest, kids, err := rt.splitChildDecisions(ctx, runID, decisions)
	if err != nil {
		return err
	}
	if err := kids.check(ctx, rt); err != nil {
		return err
	}
	return rt.requeueWith(ctx, runID, rest, kids, "handed to the queue (Runtime.Requeue)")
}

// Wait blocks until the run has ended (completed, failed, cancelled) or
// waits for a person (interrupted, and no drive holds it), and returns its
// result, however it is driven: by a worker, a Resume, another process. A
// queued run, or a stalled one (its holder died), is taken by a worker, so
// Wait goes on waiting for it; a retry-safe background child that its
// drive queues again is queued, never interrupted. It polls the store; ctx
// bounds the wait.
func (rt *Runtime) Wait(ctx context.Context, runID string) (*RunResult, error) {
	delay := 10 * time.Millisecond
	for {
		run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: runID})
		if err != nil {
			return nil, fmt.Errorf("actoviq: wait for %s: %w", runID, err)
		}
		stopped := run.Status.Terminal()
		if run.Status == store.RunInterrupted {
			// A Resume under way keeps the stored status until its next
			// write: interrupted and held is not stopped.
			h, err := rt.runHolder(ctx, runID)
			stopped = err == nil && (h == nil || !h.Live)
		}
		if stopped {
			cp, err := decodeCheckpoint(run)
			if err != nil {
				return nil, err
			}
			return cp.result(run.ID, run.Status), nil
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

// claimed emits run.claimed to the runtime's and the worker's sinks. A run
// is taken over when it had run before (it has events) and its last event
// is not its hand-back to the queue: its status was running under a holder
// that is gone.
func (rt *Runtime) claimed(ctx context.Context, sinks []EventSink, run *store.Run, claim *store.Claim, took time.Duration) {
	d := rt.bareDrive()
	d.sinks = append(d.sinks, sinks...)
	if len(d.sinks) == 0 {
		return
	}
	takeover := false
	if run.EventSeq > 0 {
		evs, err := rt.store.EventList(ctx, &store.EventListParams{Tenant: rt.tenant, RunID: run.ID, AfterSeq: run.EventSeq - 1, Limit: 1})
		takeover = err == nil && len(evs) == 1 && evs[0].Type != EvRunReleased
	}
	data, _ := json.Marshal(&RunClaimedData{AgentID: run.AgentID, Holder: claim.Holder, Epoch: claim.Epoch, Took: took, Takeover: takeover})
	d.emit(ctx, Event{Schema: EventSchema, ID: rt.newID(), RunID: run.ID, ParentRunID: run.ParentID,
		SpanID: spanID(run.ID, ""), Type: EvRunClaimed, Time: rt.clock(), Data: data})
}
