package actoviq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Cancelling a run that a drive in another process holds (a worker on
// another machine) cannot take its claim. The request is recorded instead,
// as a claim on the key "cancel:<run>:<epoch>" held by the requester, where
// epoch is the epoch of the drive it is addressed to: that drive reads it
// at each heartbeat (every LeaseTTL/3) and when it stops, and ends the run
// cancelled. A later drive has a larger epoch and never reads it, so a
// request left behind (its requester died while waiting) cannot act on a
// drive that started after it. The requester waits for the run to end
// (Runtime.Cancel); when the drive stops without having seen the request,
// the requester takes the claim and cancels the run itself.

// cancelRequestTTL bounds how long a cancel request is kept; it names one
// drive, so it only needs to outlive that drive's lease.
const cancelRequestTTL = 24 * time.Hour

func cancelKey(runID string, epoch int64) string { return store.CancelRequestKey(runID, epoch) }

// cancelOnce ends the run cancelled, waiting for a drive that holds it to
// stop, or says why it did not.
func (rt *Runtime) cancelOnce(ctx context.Context, runID string) error {
	var requests []store.Fence // the requests this Cancel recorded, withdrawn when it returns
	defer func() {
		for _, f := range requests {
			rt.releaseFence(ctx, f)
		}
	}()
	delay := 5 * time.Millisecond
	for {
		rt.mu.Lock()
		c, live := rt.cancels[runID]
		rt.mu.Unlock()
		if live {
			c(context.Canceled) // a drive in this process: it ends the run cancelled at its next step
		}
		run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: runID})
		if err != nil {
			return fmt.Errorf("actoviq: cancel %s: %w", runID, err)
		}
		if run.Status == store.RunCancelled {
			return nil
		}
		if run.Status.Terminal() {
			return &RunFinishedError{RunID: runID, Status: statusOf(run.Status),
				Reason: "it ended before the cancellation took effect; nothing was cancelled"}
		}
		if !live {
			done, err := rt.cancelUnheld(ctx, runID, &requests)
			if done || err != nil {
				return err
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("actoviq: cancel %s: not cancelled: the drive that holds it did not stop before the caller gave up (%w); "+
				"the request was withdrawn (it takes effect only if that drive read it already)", runID, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// cancelUnheld ends the run cancelled under its claim, or, when another
// drive holds it, records a request for that drive. done reports that the
// run was ended here.
func (rt *Runtime) cancelUnheld(ctx context.Context, runID string, requests *[]store.Fence) (done bool, err error) {
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return false, err
	}
	err = d.claim(ctx)
	var held *RunHeldError
	if errors.As(err, &held) { // driven by another process: ask that drive
		key := cancelKey(runID, held.Claim.Epoch)
		for _, f := range *requests {
			if f.Key == key {
				return false, nil // asked already
			}
		}
		c, err := rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: key, Holder: rt.driveHolder(), TTL: cancelRequestTTL})
		if errors.Is(err, store.ErrClaimHeld) {
			return false, nil // another Cancel asked already
		}
		if err != nil {
			return false, fmt.Errorf("actoviq: cancel %s: record the request for its holder: %w", runID, err)
		}
		*requests = append(*requests, store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch})
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return false, err
	}
	if d.run.Status.Terminal() {
		return false, nil // the caller's next look reports it
	}
	d.cp.Error = &RunError{Code: CodeCancelled, Message: "cancelled by request"}
	d.releaseLast = true // the cancelling write gives the claim up
	return true, d.finish(ctx, store.RunCancelled, EvRunCancelled)
}

// cancelRequested returns the cancellation cause when someone asked, from
// another process, to cancel this drive of the run.
func (d *drive) cancelRequested(ctx context.Context) error {
	// The fence key, not d.run: the drive replaces d.run as it writes.
	runID := strings.TrimPrefix(d.fence.Key, "run:")
	c, err := d.rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: d.rt.tenant, Key: cancelKey(runID, d.fence.Epoch)})
	if err != nil || c.Holder == "" || !c.ExpiresAt.After(d.rt.clock()) {
		return nil
	}
	return fmt.Errorf("cancelled by request of %s: %w", c.Holder, context.Canceled)
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
