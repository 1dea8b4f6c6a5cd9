package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// drive is the state of one drive of one run.
type drive struct {
	rt     *Runtime
	agent  *AgentSpec
	runner *tool.Runner
	pv     string // approval policy version
	limits Limits
	fence  store.Fence
	sinks  []EventSink
	// fenceCopy is the copy of fence the writes hand the store, made
	// again when fence changes (writeResult).
	fenceCopy *store.Fence
	// woFor is the context last given to a write, and wo the same without
	// its cancellation (uncancelled); under mu.
	woFor, wo context.Context

	run   *store.Run
	cp    *checkpoint
	cpEnc cpEncoder // encodes cp for saveRun
	// tcheck checks the transcript before each model call, one new item
	// at a time; it holds the call ids the transcript has.
	tcheck       llm.TranscriptCheck
	ledger       map[string]*store.LedgerEntry
	rawArgs      map[string]json.RawMessage // unredacted arguments known in this process
	secretsMu    sync.Mutex
	secrets      map[string]secretsMemo // secretsOf's answers, by call id
	resultsMu    sync.Mutex
	results      map[string]resultMemo      // what commitResult encoded, by call id, until fold
	sealErr      map[string]error           // why a sealed copy did not open or was not made
	handles      map[string]*ToolHandleData // the last handle each call recorded in this process (drive_handle.go); under mu
	spans        spanCache                  // the span id of each call (entryEvent)
	sessionFence *store.Fence
	// opts are the options of a resume.
	opts *ResumeOptions
	// modelAttempts counts the transport retries reported during the
	// current model call.
	modelAttempts int

	// mu serialises writes (parallel read calls commit concurrently).
	mu sync.Mutex
	// staged collects the writes of the decisions being recorded, so they
	// are one atomic write; nil otherwise.
	staged *store.RunWriteParams
	// childDecs are the decisions a Resume was given for its children's
	// calls, recorded once the run is stored running.
	childDecs *childDecisions

	// Sink panics recovered and not yet recorded.
	panicMu         sync.Mutex
	sinkPanics      []SinkPanickedData
	recordingPanics bool

	claimEnds      // the claim taken with the run's create, given up with its last write (drive_claim.go)
	carried        // a committed write that goes with the next call's first write (drive_carry.go)
	foldedResponse // the model's answer, which goes with its first call's started write (drive_fold.go)
}

func (rt *Runtime) newDrive(a *AgentSpec, sinks []EventSink) (*drive, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	limits := a.Limits.withDefaults()
	runner, err := tool.NewRunner(a.Tools, &tool.RunnerConfig{Policy: a.Approval, DefaultTimeout: limits.ToolTimeout})
	if err != nil {
		return nil, fmt.Errorf("actoviq: agent %s: %w", a.ID, err)
	}
	return &drive{rt: rt, agent: a, runner: runner, pv: a.Approval.version(), limits: limits,
		sinks:  append(append([]EventSink(nil), rt.sinks...), sinks...),
		ledger: map[string]*store.LedgerEntry{}, rawArgs: map[string]json.RawMessage{}, sealErr: map[string]error{}}, nil
}

// Resume continues a run: decisions are recorded first, then the recovery
// rules are applied to the ledger, then the run goes on.
func (rt *Runtime) resumeOpts(ctx context.Context, a *AgentSpec, runID string, opts *ResumeOptions) (*RunResult, error) {
	// Decisions for a child's calls are recorded on the child, once this
	// drive has stored the parent running (claimAndDrive).
	var kids *childDecisions
	if len(opts.Decisions) > 0 {
		rest, k, err := rt.splitChildDecisions(ctx, runID, opts.Decisions)
		if err != nil {
			return nil, err
		}
		if err := k.check(ctx, rt); err != nil {
			return nil, err
		}
		o := *opts
		o.Decisions = rest
		opts, kids = &o, k
	}
	d, err := rt.newDrive(a, opts.Sinks)
	if err != nil {
		return nil, err
	}
	d.childDecs = kids
	if err := d.load(ctx, runID); err != nil {
		return nil, err
	}
	if d.run.Status.Terminal() {
		if err := kids.record(ctx, rt); err != nil { // as Decide would
			return nil, err
		}
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
	return rt.claimAndDrive(ctx, d, EvRunResumed, opts.Decisions)
}

func (d *drive) load(ctx context.Context, runID string) error {
	d.fence = store.Fence{Key: store.RunClaimKey(runID), Holder: d.rt.driveHolder()}
	return d.read(ctx, runID)
}

// read reads the run and its ledger. It runs again once the claim is held,
// so that the drive starts from what the previous holder left.
func (d *drive) read(ctx context.Context, runID string) error {
	e := d.rt
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
	d.cpEnc = cpEncoder{stored: cp.logged}
	d.tcheck = llm.TranscriptCheck{}
	clear(d.ledger)
	for _, en := range entries {
		d.ledger[en.CallID] = en
	}
	d.recallArgs()
	return nil
}

// claimAndDrive takes the run's claim, keeps it alive while driving, and
// gives it up at the end.
func (rt *Runtime) claimAndDrive(ctx context.Context, d *drive, startEvent string, decisions []Decision) (res *RunResult, err error) {
	if d.fence.Epoch == 0 { // a worker's drive arrives with its claim
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
			if err := d.childDecs.record(ctx, rt); err != nil {
				return nil, err
			}
			return d.resumeFinished(decisions)
		}
		d.cp.PolicyVersion = d.pv
		d.unpark() // a worker that could not build the agent said why
		if err := d.adopt(ctx, d.opts); err != nil {
			d.release(ctx)
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		cancel(nil)
		d.release(ctx)
		return nil, &ClosedError{RunID: d.run.ID}
	}
	rt.cancels[d.run.ID] = cancel
	rt.wg.Add(1)
	rt.mu.Unlock()
	stopBeat := d.heartbeat(ctx, cancel)
	defer func() {
		stopBeat()
		rt.mu.Lock()
		delete(rt.cancels, d.run.ID)
		rt.mu.Unlock()
		cancel(nil)
		d.release(ctx)
		rt.wg.Done()
	}()
	// From here on, an error that is only the drive's context ending (a
	// Close, a lost claim, a worker's release, the caller's cancellation)
	// stops the drive as the loop's own stop points do: a closed runtime's
	// ErrClosed with the run left resumable, not the store's bare context
	// error. Deferred after the release above, so it runs while the claim
	// is still held. Not once the drive's last write stored the run's end
	// and gave the claim up (d.released): the run has stopped (completed,
	// interrupted waiting for a person...), and a context error after that
	// write (the escalation timer finish sets after it) must not end it a
	// second time, cancelled for good.
	//
	// A write that records a tool's outcome keeps its retries of a busy
	// store through a Close (drive_write.go): when its budget is spent all
	// the same, the error says both, the runtime closed and the store busy.
	defer func() {
		if err != nil && !d.stopped && !d.released && ctx.Err() != nil && isContextErr(err) {
			if r, serr, stop := d.stopCheck(ctx); stop {
				res, err = r, serr
			}
		}
		if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrClosed) && !errors.Is(err, ErrClosed) && errors.Is(err, store.ErrBusy) {
			err = fmt.Errorf("%w; %w", &ClosedError{RunID: d.run.ID, Driven: true}, err)
		}
	}()
	// From here the drive's last write (finish) gives the claim up.
	d.releaseLast = true
	if d.created != nil {
		// Run created the run claimed, its run.started stored with it.
		d.emitStored(ctx, d.created)
	} else if started := d.startedEvent(startEvent); d.run.Status == store.RunRunning {
		err = d.write(ctx, &store.RunWriteParams{Events: []*store.EventRecord{started}})
	} else {
		// A drive of an interrupted or queued run stores it running: if the
		// process dies before its next write, the run reads stalled and a
		// worker adopts it, instead of staying interrupted with its
		// questions already answered, which no worker claims.
		err = d.saveRun(ctx, store.RunRunning, nil, started)
	}
	if err != nil {
		return nil, err
	}
	// A child whose parent closed it (cancelled, or settled the call that
	// waited for it) ends cancelled before anything runs (drive_child.go).
	if res, err, stop := d.parentClosed(ctx); stop {
		if err == nil && len(decisions) > 0 {
			return nil, &RunFinishedError{RunID: d.run.ID, Status: StatusCancelled, Reason: res.Error.Message + "; the decisions given to Resume were not recorded"}
		}
		return res, err
	}
	// The decisions for its children's calls, now that the run is stored
	// running (resumeOpts).
	if err := d.childDecs.record(ctx, rt); err != nil {
		return nil, err
	}
	// A run past its deadline ends cancelled with its ledger untouched, so
	// decisions are refused then.
	if err, stop := d.resumeDecisions(ctx, decisions); err != nil || stop {
		return nil, err
	}
	if startEvent == EvRunResumed {
		if res, err, done := d.sessionOnResume(ctx); done {
			return res, err
		}
	}
	return d.loop(ctx)
}

// pastDeadline reports whether the run's deadline has passed (engine clock).
func (d *drive) pastDeadline() bool {
	return !d.run.Deadline.IsZero() && !d.rt.clock().Before(d.run.Deadline)
}

// withinDeadline bounds ctx by the time left before the run's deadline, as
// the engine's clock measures it.
func (d *drive) withinDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.run.Deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d.run.Deadline.Sub(d.rt.clock()))
}

// detached returns a context that ignores the caller's cancellation, for
// writes that record something that already happened, bounded by the
// commit timeout (a writeCtx: its timer is made only if the store waits
// on it).
func (d *drive) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return newWriteCtx(ctx, d.rt.commitTO)
}

// bareDrive is a drive without an agent, for writes made on a run nobody
// drives ([Runtime.Decide], [Runtime.Cancel]). Its events reach every
// configured sink, like those of a drive.
func (rt *Runtime) bareDrive() *drive {
	return &drive{rt: rt, ledger: map[string]*store.LedgerEntry{}, sinks: append([]EventSink(nil), rt.sinks...)}
}
