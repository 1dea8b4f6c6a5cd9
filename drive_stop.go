package actoviq

import (
	"context"
	"errors"

	"github.com/actoviq/actoviq-go/store"
)

// stopCheck reports whether the drive must stop before doing more work,
// and how: past the run's deadline or cancelled, the run ends cancelled;
// closed, it stops without a final status.
func (d *drive) stopCheck(ctx context.Context) (*RunResult, error, bool) {
	past := d.pastDeadline()
	if !past && ctx.Err() == nil {
		return nil, nil, false
	}
	d.stopped = true
	if past {
		// Past the deadline: the run ends cancelled, the ledger untouched.
		d.cp.Error = &RunError{Code: CodeDeadline, Message: "the run's deadline passed"}
		res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
		return res, err, true
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrClosed):
		return nil, &ClosedError{RunID: d.run.ID, Driven: true}, true
	case errors.Is(cause, errLostClaim):
		return nil, cause, true
	case errors.Is(cause, ErrReleased): // a worker's shutdown: back to the queue
		res, err := d.handBack(ctx)
		return res, err, true
	}
	d.cp.Error = &RunError{Code: CodeCancelled, Message: cause.Error()}
	res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
	return res, err, true
}

// stopInterrupted ends a drive whose pending calls left interruptions. A
// cancellation or a passed deadline ends the run cancelled for good (the
// interruptions stay in the checkpoint as the evidence a later
// [Runtime.Decide] records with); otherwise the run stops interrupted,
// which is also how a shutdown during a side effect ends.
func (d *drive) stopInterrupted(ctx context.Context, interrupts []Interruption) (*RunResult, error) {
	d.cp.Interruptions = flattenChild(interrupts)
	if d.pastDeadline() || d.cancelled(ctx) {
		if res, err, stop := d.stopCheck(ctx); stop {
			return res, err
		}
	}
	if res, err, stop := d.requestedStop(ctx); stop { // a Cancel from another process (drive_cancel.go)
		return res, err
	}
	if res, err, stop := d.retryInPlace(ctx); stop { // a retry-safe background child (drive_worker.go)
		return res, err
	}
	return d.end(ctx, store.RunInterrupted, EvRunInterrupted)
}

// requestedStop ends the run cancelled when a Cancel in another process
// asked this drive to stop and the drive is about to stop without a final
// status (interrupted, handed back): the request takes effect on this
// drive even when it stops before its next heartbeat.
func (d *drive) requestedStop(ctx context.Context) (*RunResult, error, bool) {
	if d.fence.Epoch == 0 {
		return nil, nil, false
	}
	rctx, cancel := d.detached(ctx)
	defer cancel()
	cause := d.cancelRequested(rctx)
	if cause == nil {
		return nil, nil, false
	}
	d.cp.Error = &RunError{Code: CodeCancelled, Message: cause.Error()}
	res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
	return res, err, true
}

// isContextErr reports whether err is a context's cancellation or deadline.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
