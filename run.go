package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// Input starts a run.
type Input struct {
	// RunID is optional; an existing id is refused with [ErrRunExists].
	RunID string
	// SessionID continues a conversation: its history is prepended and the
	// run's items are appended (CAS) when it completes.
	SessionID string
	// ParentRunID links the run to a parent run (recorded with the run and
	// in every event envelope); empty means a root run.
	ParentRunID string
	// Items are the new input (usually one user text item).
	Items []item.Item
	// Meta is caller JSON stored with the run (never secrets).
	Meta json.RawMessage
}

// drive is the state of one drive of one run.
type drive struct {
	e      *Runtime
	agent  *AgentSpec
	runner *tool.Runner
	pv     string // approval policy version
	limits Limits
	fence  store.Fence
	sinks  []EventSink

	run          *store.Run
	cp           *checkpoint
	cpEnc        cpEncoder // encodes cp for saveRun (cpenc.go)
	ledger       map[string]*store.LedgerEntry
	rawArgs      map[string]json.RawMessage // unredacted arguments known in this process
	sealErr      map[string]error           // why a sealed copy did not open or was not made
	sessionFence *store.Fence
	// opts are the options of a resume.
	opts *ResumeOptions
	// modelAttempts counts the transport retries reported during the
	// current model call.
	modelAttempts int

	// mu serialises writes (parallel read calls commit concurrently).
	mu sync.Mutex
	// staged collects the writes of the decisions being recorded, so they
	// are one atomic write (terminal.go); nil otherwise.
	staged *store.RunWriteParams

	// Sink panics recovered and not yet recorded (sinks.go).
	panicMu         sync.Mutex
	sinkPanics      []SinkPanickedData
	recordingPanics bool
}

func (e *Runtime) newDrive(a *AgentSpec, sinks []EventSink) (*drive, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	limits := a.Limits.withDefaults()
	runner, err := tool.NewRunner(a.Tools, &tool.RunnerConfig{Policy: a.Approval, DefaultTimeout: limits.ToolTimeout})
	if err != nil {
		return nil, fmt.Errorf("actoviq: agent %s: %w", a.ID, err)
	}
	return &drive{e: e, agent: a, runner: runner, pv: a.Approval.version(), limits: limits,
		sinks:  append(append([]EventSink(nil), e.sinks...), sinks...),
		ledger: map[string]*store.LedgerEntry{}, rawArgs: map[string]json.RawMessage{}, sealErr: map[string]error{}}, nil
}

// Run starts a new run and drives it until it completes, fails, is
// cancelled or stops with interruptions.
func (e *Runtime) Run(ctx context.Context, a *AgentSpec, in *Input, sinks ...EventSink) (*RunResult, error) {
	d, err := e.newDrive(a, sinks)
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &Input{}
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
	d.fence = store.Fence{Key: store.RunClaimKey(runID), Holder: e.driveHolder()}
	cp := &checkpoint{V: 1, TraceID: e.newID(), PolicyVersion: d.pv, Agent: recordAgent(a)}
	if in.SessionID != "" {
		if err := d.claimSession(ctx, in.SessionID); err != nil {
			return nil, err
		}
		defer d.releaseSession()
		st, err := e.store.SessionLoad(ctx, &store.SessionLoadParams{Tenant: e.tenant, SessionID: in.SessionID})
		if err != nil {
			return nil, fmt.Errorf("actoviq: load session %s: %w", in.SessionID, err)
		}
		history, err := sessionItems(st)
		if err != nil {
			return nil, err
		}
		cp.Items, cp.SessionBase, cp.SessionPrefix = history, st.Revision, len(history)
	}
	for _, it := range in.Items {
		cp.Items = append(cp.Items, d.redactItem(it))
	}
	raw, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	run := &store.Run{Tenant: e.tenant, ID: runID, ParentID: in.ParentRunID, SessionID: in.SessionID, AgentID: a.ID,
		AgentDigest: a.Digest(), Status: store.RunRunning, Checkpoint: raw, Meta: d.redactJSON(in.Meta)}
	if a.Limits.RunTimeout > 0 {
		run.Deadline = e.clock().Add(a.Limits.RunTimeout)
	}
	created, err := e.store.RunCreate(ctx, &store.RunCreateParams{Run: run})
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: %s (a run id is never re-run; continue it with Runtime.Resume)", ErrRunExists, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: create run %s: %w", runID, err)
	}
	d.run, d.cp = created, cp
	return e.claimAndDrive(ctx, d, EvRunStarted, nil)
}

// Resume continues a run: decisions are recorded first, then the recovery
// rules are applied to the ledger, then the run goes on.
func (e *Runtime) resumeOpts(ctx context.Context, a *AgentSpec, runID string, opts *ResumeOptions) (*RunResult, error) {
	if len(opts.Decisions) > 0 { // decisions for a child's calls are recorded on the child (child.go)
		rest, err := e.routeChildDecisions(ctx, runID, opts.Decisions)
		if err != nil {
			return nil, err
		}
		o := *opts
		o.Decisions = rest
		opts = &o
	}
	d, err := e.newDrive(a, opts.Sinks)
	if err != nil {
		return nil, err
	}
	if err := d.load(ctx, runID); err != nil {
		return nil, err
	}
	if d.run.Status.Terminal() {
		return d.resumeFinished(opts.Decisions)
	}
	if err := d.checkAgent(opts.AcceptAgentChange); err != nil {
		return nil, err
	}
	d.opts = opts
	if d.run.SessionID != "" {
		if err := d.claimSession(ctx, d.run.SessionID); err != nil {
			return nil, err
		}
		defer d.releaseSession()
	}
	return e.claimAndDrive(ctx, d, EvRunResumed, opts.Decisions)
}

func (d *drive) load(ctx context.Context, runID string) error {
	d.fence = store.Fence{Key: store.RunClaimKey(runID), Holder: d.e.driveHolder()}
	return d.read(ctx, runID)
}

// read reads the run and its ledger. It runs again once the claim is held,
// so that the drive starts from what the previous holder left.
func (d *drive) read(ctx context.Context, runID string) error {
	e := d.e
	run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID})
	if err != nil {
		return fmt.Errorf("actoviq: load run %s: %w", runID, err)
	}
	cp, err := decodeCheckpoint(run)
	if err != nil {
		return err
	}
	entries, err := e.store.LedgerList(ctx, &store.LedgerListParams{Tenant: e.tenant, RunID: runID})
	if err != nil {
		return fmt.Errorf("actoviq: load ledger of %s: %w", runID, err)
	}
	d.run, d.cp = run, cp
	clear(d.ledger)
	for _, en := range entries {
		d.ledger[en.CallID] = en
	}
	d.recallArgs()
	return nil
}

// claimAndDrive takes the run's claim, keeps it alive while driving, and
// gives it up at the end.
func (e *Runtime) claimAndDrive(ctx context.Context, d *drive, startEvent string, decisions []Decision) (*RunResult, error) {
	if d.fence.Epoch == 0 { // a worker's drive arrives with its claim (worker.go)
		if err := d.claim(ctx); err != nil {
			return nil, err
		}
	}
	if startEvent == EvRunResumed {
		if err := d.read(ctx, d.run.ID); err != nil {
			d.release(ctx)
			return nil, err
		}
		if d.run.Status.Terminal() { // another worker finished it meanwhile
			d.release(ctx)
			return d.resumeFinished(decisions)
		}
		d.cp.PolicyVersion = d.pv
		d.unpark() // a worker that could not build the agent said why (worker.go)
		if err := d.adopt(ctx, d.opts); err != nil {
			d.release(ctx)
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		cancel(nil)
		d.release(ctx)
		return nil, &ClosedError{RunID: d.run.ID}
	}
	e.cancels[d.run.ID] = cancel
	e.wg.Add(1)
	e.mu.Unlock()
	stopBeat := d.heartbeat(ctx, cancel)
	defer func() {
		stopBeat()
		e.mu.Lock()
		delete(e.cancels, d.run.ID)
		e.mu.Unlock()
		cancel(nil)
		d.release(ctx)
		e.wg.Done()
	}()
	if err := d.write(ctx, &store.RunWriteParams{Events: []*store.Event{d.event(startEvent, "", &RunStartedData{
		AgentID: d.agent.ID, AgentDigest: d.run.AgentDigest, Model: d.agent.Model, Holder: d.fence.Holder, Epoch: d.fence.Epoch,
	})}}); err != nil {
		return nil, err
	}
	// A run past its deadline ends cancelled with its ledger untouched, so
	// decisions are refused then (terminal.go).
	if err, stop := d.resumeDecisions(ctx, decisions); err != nil || stop {
		return nil, err
	}
	if startEvent == EvRunResumed {
		if res, err, done := d.sessionOnResume(ctx); done {
			return res, err // session.go
		}
	}
	return d.loop(ctx)
}

func (d *drive) claim(ctx context.Context) error {
	p := &store.ClaimAcquireParams{Tenant: d.e.tenant, Key: d.fence.Key, Holder: d.fence.Holder, TTL: d.e.ttl}
	c, err := d.e.store.ClaimAcquire(ctx, p)
	var held *store.ClaimHeldError
	if errors.As(err, &held) && d.e.releaseDead(ctx, p.Key, held) {
		c, err = d.e.store.ClaimAcquire(ctx, p)
	}
	if errors.As(err, &held) {
		return newRunHeldError(d.run.ID, held)
	}
	if err != nil {
		return fmt.Errorf("actoviq: claim run %s: %w", d.run.ID, err)
	}
	d.fence.Epoch = c.Epoch
	return nil
}

func (d *drive) claimSession(ctx context.Context, sessionID string) error {
	f := &store.Fence{Key: "session:" + sessionID, Holder: d.e.driveHolder()}
	p := &store.ClaimAcquireParams{Tenant: d.e.tenant, Key: f.Key, Holder: f.Holder, TTL: d.e.ttl}
	c, err := d.e.store.ClaimAcquire(ctx, p)
	var held *store.ClaimHeldError
	if errors.As(err, &held) && d.e.releaseDead(ctx, p.Key, held) {
		// A dead holder's session claim is taken over at once, like its
		// run claim.
		c, err = d.e.store.ClaimAcquire(ctx, p)
	}
	if errors.Is(err, store.ErrClaimHeld) {
		return fmt.Errorf("%w: %s: %v", ErrSessionBusy, sessionID, err)
	}
	if err != nil {
		return fmt.Errorf("actoviq: claim session %s: %w", sessionID, err)
	}
	f.Epoch = c.Epoch
	d.sessionFence = f
	return nil
}

func (d *drive) releaseSession() {
	if d.sessionFence == nil {
		return
	}
	ctx, cancel := d.detached(context.Background())
	defer cancel()
	_ = d.e.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: d.e.tenant, Fence: *d.sessionFence})
}

// heartbeat renews the claims every TTL/3. When a renewal is fenced out the
// drive is cancelled: another worker owns the run now.
func (d *drive) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d.e.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				fences := []store.Fence{d.fence}
				if d.sessionFence != nil {
					fences = append(fences, *d.sessionFence)
				}
				for _, f := range fences {
					_, err := d.e.store.ClaimRenew(ctx, &store.ClaimRenewParams{Tenant: d.e.tenant, Fence: f, TTL: d.e.ttl})
					if errors.Is(err, store.ErrFenced) {
						cancel(fmt.Errorf("%w %s: %w", errLostClaim, f.Key, err))
						return
					}
				}
				if cause := d.cancelRequested(ctx); cause != nil { // Cancel from another process (cancel.go)
					cancel(cause)
					return
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// release gives the run's claim up (detached: it must happen).
func (d *drive) release(ctx context.Context) {
	rctx, cancel := d.detached(ctx)
	defer cancel()
	_ = d.e.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: d.e.tenant, Fence: d.fence})
}

// pastDeadline reports whether the run's deadline has passed (engine clock).
func (d *drive) pastDeadline() bool {
	return !d.run.Deadline.IsZero() && !d.e.clock().Before(d.run.Deadline)
}

// withinDeadline bounds ctx by the time left before the run's deadline, as
// the engine's clock measures it.
func (d *drive) withinDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.run.Deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d.run.Deadline.Sub(d.e.clock()))
}

// detached returns a context that ignores the caller's cancellation, for
// writes that record something that already happened.
func (d *drive) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d.e.commitTO)
}

// Cancel is the caller's decision to end a run: it stops a live drive of
// the run in this process, if any, and marks a run that is not being driven
// as cancelled. A cancelled run is final, also when Cancel stopped a side
// effect in flight: nothing runs again, and a call that was started keeps
// its ledger state (started or unknown). [Runtime.Decide] can still record
// what happened to such a call (committed or failed), for the audit trail;
// the run does not continue. A run driven by another process (a worker
// elsewhere) is asked to stop: the request is recorded in the store and
// that drive ends the run cancelled at its next heartbeat (within
// LeaseTTL/3). Cancel also applies the parent-close policy to the run's
// children ([ParentClosePolicy]). To stop driving without deciding anything (a process
// shutting down), use [Runtime.Close].
func (e *Runtime) Cancel(ctx context.Context, runID string) (err error) {
	defer func() { // its children, by their parent-close policy (child.go)
		if err == nil {
			e.closeChildren(ctx, runID)
		}
	}()
	e.mu.Lock()
	c, live := e.cancels[runID]
	e.mu.Unlock()
	if live {
		c(context.Canceled)
		return nil
	}
	run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID})
	if err != nil {
		return fmt.Errorf("actoviq: cancel %s: %w", runID, err)
	}
	if run.Status.Terminal() {
		return nil
	}
	d := e.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return err
	}
	if err := d.claim(ctx); err != nil {
		if errors.Is(err, ErrRunHeld) { // driven by another process: ask it (cancel.go)
			return e.requestCancel(ctx, runID)
		}
		return err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil || d.run.Status.Terminal() {
		return err
	}
	d.cp.Error = &RunError{Code: "cancelled", Message: "cancelled by request"}
	return d.finish(ctx, store.RunCancelled, EvRunCancelled)
}

func sessionItems(st *store.SessionState) ([]item.Item, error) {
	var out []item.Item
	if st.Snapshot != nil {
		if err := json.Unmarshal(st.Snapshot, &out); err != nil {
			return nil, &store.DataError{Kind: "session snapshot", ID: st.SessionID, Err: err}
		}
	}
	for _, en := range st.Entries {
		var it item.Item
		if err := json.Unmarshal(en.Item, &it); err != nil {
			return nil, &store.DataError{Kind: "session", ID: fmt.Sprintf("%s#%d", st.SessionID, en.Seq), Err: err}
		}
		out = append(out, it)
	}
	return out, nil
}
