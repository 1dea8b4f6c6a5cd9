package actoviq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// A holder is "<hostname>:<pid>:<random>/<drive>" unless the user set
// Config.Holder. When a claim's holder is a process on this host that no
// longer exists (it was killed), waiting for its lease to expire only
// delays recovery: the dead process cannot write anything. The claim is
// then released with the dead holder's own fence, which fails if the claim
// moved on in the meantime, and taken over with a new epoch.

// deadLocalHolder reports whether holder names a process on this host that
// is certainly gone: it does not exist, or it is a zombie. Any doubt (another host, a live or unknown pid, a
// custom holder name) answers false: then the lease must expire.
func deadLocalHolder(holder string) bool {
	host, _ := os.Hostname()
	h := ParseHolder(holder)
	if h.PID <= 0 || host == "" || h.Host != host || h.PID == os.Getpid() {
		return false
	}
	return processGone(h.PID)
}

// signalGone checks existence only (signal 0), where /proc is missing.
func signalGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// releaseDead frees a claim held by a dead local process.
func (rt *Runtime) releaseDead(ctx context.Context, key string, held *store.ClaimHeldError) bool {
	if !deadLocalHolder(held.Holder) {
		return false
	}
	err := rt.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: rt.tenant,
		Fence: store.Fence{Key: key, Holder: held.Holder, Epoch: held.Epoch}})
	return err == nil
}

// driveSeq numbers the drives of this process.
var driveSeq atomic.Uint64

// driveHolder names one drive: the worker's holder, the runtime's instance
// token and a process-wide sequence number. Two drives are two holders
// whatever Config.NewID returns (a claim held by the same holder is
// renewed, not refused, so holder names must never collide): the sequence
// keeps drives of one process apart, the instance token (random, made by
// New) keeps runtimes that share a Config.Holder apart, in one process or
// many.
func (rt *Runtime) driveHolder() string {
	return fmt.Sprintf("%s/%s.%d", rt.holder, rt.instance, driveSeq.Add(1))
}

// A runtime's default holder is "<host>:<pid>:<start>.<random>", where
// start is the process start time (UTC, 20060102T150405Z): every claim a
// runtime or a worker takes names the machine, the process and when it
// started, and a drive adds "/<drive>" to it. Holders set through
// Config.Holder are kept as they are.

var processStart = time.Now().UTC()

const holderTimeLayout = "20060102T150405Z"

func defaultHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s.%s", host, os.Getpid(), processStart.Format(holderTimeLayout), randomID()[:8])
}

// processGone reports whether pid is certainly not a running process on
// this host: it does not exist, or it is a zombie (dead, not yet reaped by
// its parent) or dead task. On Linux the state is read from /proc; without
// /proc only existence can be checked (signal 0).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// "pid (comm) S ...": comm may hold spaces and parentheses; the
		// state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			switch b[i+2] {
			case 'Z', 'X', 'x':
				return true
			}
		}
		return false
	}
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr == nil {
			return true // /proc works and has no such pid
		}
	}
	return signalGone(pid)
}

// liveness reads the run's claim and derives the status an operator sees.
func (rt *Runtime) liveness(ctx context.Context, r *store.Run) (Status, *RunClaim, error) {
	st := statusOf(r.Status)
	if r.Status != store.RunRunning && r.Status != store.RunInterrupted {
		return st, nil, nil
	}
	c, err := rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: store.RunClaimKey(r.ID)})
	if errors.Is(err, store.ErrNotFound) {
		if r.Status == store.RunRunning {
			return StatusStalled, nil, nil
		}
		return st, nil, nil
	}
	if err != nil {
		return st, nil, fmt.Errorf("actoviq: claim of run %s: %w", r.ID, err)
	}
	h := rt.runClaim(c)
	switch {
	case h.Live:
		return StatusRunning, h, nil
	case r.Status == store.RunRunning:
		return StatusStalled, h, nil
	}
	return st, h, nil
}

// runClaim is a claim as operators see it: live only while unexpired and
// held by a process not known to be dead.
func (rt *Runtime) runClaim(c *store.Claim) *RunClaim {
	h := &RunClaim{HolderInfo: ParseHolder(c.Holder), Epoch: c.Epoch, ExpiresAt: c.ExpiresAt}
	h.Dead = deadLocalHolder(c.Holder)
	h.Live = c.ExpiresAt.After(rt.clock()) && !h.Dead
	return h
}

func (d *drive) claim(ctx context.Context) error {
	p := &store.ClaimAcquireParams{Tenant: d.rt.tenant, Key: d.fence.Key, Holder: d.fence.Holder, TTL: d.rt.ttl}
	began := d.rt.clock()
	c, err := d.rt.store.ClaimAcquire(ctx, p)
	if w := d.rt.observeStore("claim", began); w != nil { // a lease too short for the store (lease.go)
		d.leaseShort(ctx, w, d.run.ID, d.run.ParentID)
	}
	var held *store.ClaimHeldError
	if errors.As(err, &held) && d.rt.releaseDead(ctx, p.Key, held) {
		c, err = d.rt.store.ClaimAcquire(ctx, p)
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

// A drive's first and last round trips carry its claim. Runtime.Run
// creates the run already claimed, with its run.started event, in one
// store call (store.RunCreateParams.Holder): no other process can take
// the run between its creation and its claim (a Cancel from another
// process finds it held and asks the drive to stop). The drive's last
// write, the one that ends it (finish), gives the claim up in the same
// transaction (store.RunWriteParams.Release), so a finished drive costs
// no release of its own; the heartbeat stops renewing before that write,
// so no renewal can revive the claim after it.

// claimEnds is a drive's state around its claim.
type claimEnds struct {
	// created are the events stored with the run's create, emitted when
	// the drive starts; nil when the run was not created claimed.
	created []*store.EventRecord
	// releaseLast makes the drive's last write (finish) release the claim.
	releaseLast bool
	// stopped: stopCheck decided that the drive stops, so claimAndDrive
	// does not map the drive's error through it a second time.
	stopped bool
	// beatMu orders the heartbeat's renewals with that write: ending is
	// set under it before the write, and no renewal starts after.
	beatMu sync.Mutex
	ending bool
	// released: the last write committed and released the claim.
	released bool
}

// startedEvent is the run.started (or run.resumed) event of this drive.
func (d *drive) startedEvent(typ string) *store.EventRecord {
	data := &RunStartedData{
		AgentID: d.agent.ID, AgentDigest: d.run.AgentDigest, Model: d.agent.Model, Holder: d.fence.Holder, Epoch: d.fence.Epoch,
		Session: d.run.SessionID,
	}
	if d.run.SessionID != "" && d.cp != nil {
		data.SessionRevision, data.SessionItems = d.cp.SessionBase, d.cp.SessionPrefix
		if d.cp.SessionOmitted != nil {
			data.SessionOmitted = *d.cp.SessionOmitted
		}
	}
	return d.event(typ, "", data)
}

// createClaimed creates run claimed by the drive, with its run.started
// event, and makes it the drive's run. fallback reports that a claim was
// already stored under the run's key (left by something else than a
// run, which removes its claims with it): nothing was created, and the
// caller creates the run unclaimed and claims it as a resume does.
func (d *drive) createClaimed(ctx context.Context, run *store.Run) (fallback bool, err error) {
	d.run = run
	d.fence.Epoch = store.CreatedClaimEpoch
	started := d.startedEvent(EvRunStarted)
	began := d.rt.clock()
	created, err := d.rt.store.RunCreate(ctx, &store.RunCreateParams{Run: run, Holder: d.fence.Holder, TTL: d.rt.ttl,
		Events: []*store.EventRecord{started}})
	if w := d.rt.observeStore("claim", began); w != nil { // a lease too short for the store (lease.go)
		d.leaseShort(ctx, w, run.ID, run.ParentID)
	}
	var ex *store.ExistsError
	if errors.As(err, &ex) && ex.Kind == "claim" {
		d.fence.Epoch = 0
		return true, nil
	}
	if err != nil {
		d.fence.Epoch = 0
		return false, err
	}
	ev := *started
	ev.Tenant, ev.RunID, ev.Seq, ev.Time = run.Tenant, run.ID, 1, store.Time(started.Time)
	d.run, d.created = created, []*store.EventRecord{&ev}
	return false, nil
}

// heartbeat renews the claims every TTL/3. When a renewal is fenced out the
// drive is cancelled: another worker owns the run now.
func (d *drive) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d.rt.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if !d.renew(ctx, cancel) {
					return
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// renew is one beat: it renews the claims and reads a cancel request;
// false stops the heartbeat (the drive is ending, or must stop).
func (d *drive) renew(ctx context.Context, cancel context.CancelCauseFunc) bool {
	d.beatMu.Lock()
	defer d.beatMu.Unlock()
	if d.ending {
		return false
	}
	fences := []store.Fence{d.fence}
	if d.sessionFence != nil {
		fences = append(fences, *d.sessionFence)
	}
	for _, f := range fences {
		began := d.rt.clock()
		_, err := d.rt.store.ClaimRenew(ctx, &store.ClaimRenewParams{Tenant: d.rt.tenant, Fence: f, TTL: d.rt.ttl})
		if w := d.rt.observeStore("renew", began); w != nil { // a lease too short for the store (lease.go)
			d.mu.Lock()
			runID, parent := d.run.ID, d.run.ParentID
			d.mu.Unlock()
			d.leaseShort(ctx, w, runID, parent)
		}
		if errors.Is(err, store.ErrFenced) {
			if f == d.fence {
				d.leaseLost(ctx, f)
			}
			cancel(fmt.Errorf("%w %s: %w", errLostClaim, f.Key, err))
			return false
		}
	}
	if cause := d.cancelRequested(ctx); cause != nil { // Cancel from another process
		cancel(cause)
		return false
	}
	return true
}

// lastWrite marks p as the drive's last write when the drive gives its
// claim up with it (see claimEnds): the heartbeat renews no more.
func (d *drive) lastWrite(p *store.RunWriteParams) {
	if !d.releaseLast || d.fence.Epoch == 0 {
		return
	}
	d.beatMu.Lock()
	d.ending = true
	d.beatMu.Unlock()
	p.Release = true
}

// release gives the run's claim up (detached: it must happen), unless the
// drive's last write did.
func (d *drive) release(ctx context.Context) {
	if d.released {
		return
	}
	rctx, cancel := d.detached(ctx)
	defer cancel()
	_ = d.rt.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: d.rt.tenant, Fence: d.fence})
}

// leaseLost emits run.lease_lost from the heartbeat's goroutine.
func (d *drive) leaseLost(ctx context.Context, f store.Fence) {
	d.mu.Lock()
	runID, parent := d.run.ID, d.run.ParentID
	d.mu.Unlock()
	data, _ := json.Marshal(&RunLeaseLostData{Holder: f.Holder, Epoch: f.Epoch, LeaseShort: d.rt.LeaseWarning()})
	d.emit(ctx, Event{Schema: EventSchema, ID: d.rt.newID(), RunID: runID, ParentRunID: parent, TraceID: d.cp.TraceID,
		SpanID: spanID(runID, ""), Type: EvRunLeaseLost, Time: d.rt.clock(), Data: data})
}
