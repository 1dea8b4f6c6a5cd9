package cli

import (
	"context"

	actoviq "github.com/actoviq/actoviq-go"
)

// shutdownOnSignal makes the end of ctx (SIGINT or SIGTERM: cmd/actoviq
// cancels it) a shutdown of rt, not a cancellation of the run it drives.
// The drive runs on the returned context, which ignores ctx; when ctx ends,
// rt.Close stops the drive without ending the run, so `actoviq resume`
// continues it (into a reconciliation if a side effect was in flight).
// Cancelling a run is a decision, never a side effect of a signal.
func shutdownOnSignal(ctx context.Context, rt *actoviq.Runtime) (context.Context, func()) {
	stop := context.AfterFunc(ctx, func() { rt.Close() })
	return context.WithoutCancel(ctx), func() { stop() }
}
