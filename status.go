package actoviq

import (
	"github.com/actoviq/actoviq-go/store"
)

// Whether a run is being driven is not stored: it is read from the run's
// claim when the run is looked at. A stored status says what the last
// drive wrote; the claim says whether a live process drives it now.
//
//   - running: a live holder holds an unexpired claim (a first drive, or a
//     resume or decision under way on a run stored as interrupted);
//   - stalled: the stored status is running, but the claim expired or its
//     holder is dead (a process killed during a drive); Resume continues it;
//   - interrupted, completed, failed, cancelled: as stored, nobody drives it.
//
// Because it is derived, a stalled status can never go stale: the moment a
// new drive takes the claim, the run reads running again.

// StatusStalled is a derived status: the run's stored status is running,
// but no live process holds its claim (it expired, or its holder died). It
// is never stored. Resume it with [Runtime.Resume].
const StatusStalled Status = "stalled"

func statusOf(s store.RunStatus) Status {
	switch s {
	case store.RunCompleted:
		return StatusCompleted
	case store.RunInterrupted:
		return StatusInterrupted
	case store.RunFailed:
		return StatusFailed
	case store.RunCancelled:
		return StatusCancelled
	case store.RunQueued:
		return StatusQueued
	}
	return StatusRunning
}

// Status is the outcome of driving a run.
type Status string

// Run statuses as the public API reports them.
const (
	StatusRunning     Status = "running"
	StatusCompleted   Status = "completed"
	StatusInterrupted Status = "interrupted"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled"
)

// StatusQueued is the status of a run that waits for a worker.
const StatusQueued Status = "queued"
