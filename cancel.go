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
func (e *Runtime) requestCancel(ctx context.Context, runID string) error {
	_, err := e.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: e.tenant, Key: cancelKey(runID),
		Holder: e.holder, TTL: cancelRequestTTL})
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
	c, err := d.e.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: d.e.tenant, Key: cancelKey(runID)})
	if err != nil || !c.ExpiresAt.After(d.e.clock()) {
		return nil
	}
	return fmt.Errorf("cancelled by request of %s: %w", c.Holder, context.Canceled)
}
