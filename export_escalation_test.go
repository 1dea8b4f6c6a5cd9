package actoviq

import (
	"context"

	"github.com/actoviq/actoviq-go/store"
)

// RescheduleAfterStaleRead makes the escalation loop's reschedule of run
// runID's timer as if the loop had read the run while it was still driven
// (running, one revision before), and the drive then stopped and set its
// timer: the race the console's loop meets with a drive that stops.
func RescheduleAfterStaleRead(ctx context.Context, rt *Runtime, runID string) error {
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return err
	}
	t, err := rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: store.EscalationKey(runID)})
	if err != nil {
		return err
	}
	stale := *d.run
	stale.Status, stale.Revision = store.RunRunning, stale.Revision-1
	d.run = &stale
	return rt.rescheduleEscalation(ctx, d, t)
}
