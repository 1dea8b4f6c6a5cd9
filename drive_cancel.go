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
// as a claim on the key "cancel:<run>" held by the requester: every drive
// reads it at each heartbeat (every LeaseTTL/3) and, when it is there,
// ends the run cancelled, as a Cancel in its own process would.

// cancelRequestTTL is how long a cancel request stays; a run that is
// still driven after that is not cancelled by it.
const cancelRequestTTL = 7 * 24 * time.Hour

func cancelKey(runID string) string { return "cancel:" + runID }

// requestCancel records that runID is to be cancelled by its holder.
func (rt *Runtime) requestCancel(ctx context.Context, runID string) error {
	_, err := rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: cancelKey(runID),
		Holder: rt.holder, TTL: cancelRequestTTL})
	if err != nil && !errors.Is(err, store.ErrClaimHeld) { // held: someone asked already
		return fmt.Errorf("actoviq: cancel %s: record the request for its holder: %w", runID, err)
	}
	return nil
}

// cancelRequested returns the cancellation cause when someone asked to
// cancel the drive's run from another process.
func (d *drive) cancelRequested(ctx context.Context) error {
	// The fence key, not d.run: the drive replaces d.run as it writes.
	runID := strings.TrimPrefix(d.fence.Key, "run:")
	c, err := d.rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: d.rt.tenant, Key: cancelKey(runID)})
	if err != nil || !c.ExpiresAt.After(d.rt.clock()) {
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
