package actoviq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

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
func (e *Runtime) liveness(ctx context.Context, r *store.Run) (Status, *RunClaim, error) {
	st := statusOf(r.Status)
	if r.Status != store.RunRunning && r.Status != store.RunInterrupted {
		return st, nil, nil
	}
	c, err := e.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: e.tenant, Key: store.RunClaimKey(r.ID)})
	if errors.Is(err, store.ErrNotFound) {
		if r.Status == store.RunRunning {
			return StatusStalled, nil, nil
		}
		return st, nil, nil
	}
	if err != nil {
		return st, nil, fmt.Errorf("actoviq: claim of run %s: %w", r.ID, err)
	}
	h := e.runClaim(c)
	switch {
	case h.Live:
		return StatusRunning, h, nil
	case r.Status == store.RunRunning:
		return StatusStalled, h, nil
	}
	return st, h, nil
}

// list is List with derived statuses: a filter on running, stalled or
// interrupted reads the stored statuses it can come from, derives, filters
// and then applies the limit.
func (e *Runtime) list(ctx context.Context, p *ListParams) ([]*RunInfo, error) {
	var from []store.RunStatus
	switch p.Status {
	case StatusStalled:
		from = []store.RunStatus{store.RunRunning}
	case StatusRunning:
		from = []store.RunStatus{store.RunRunning, store.RunInterrupted}
	case StatusInterrupted:
		from = []store.RunStatus{store.RunInterrupted}
	case "":
		from = []store.RunStatus{""}
	default:
		from = []store.RunStatus{store.RunStatus(p.Status)}
	}
	derived := p.Status == StatusStalled || p.Status == StatusRunning || p.Status == StatusInterrupted
	var runs []*store.Run
	var dataErr error
	for _, s := range from {
		limit := p.Limit
		if derived {
			limit = 0 // filtered below
		}
		rs, err := e.store.RunList(ctx, &store.RunListParams{Tenant: e.tenant, Status: s, Limit: limit})
		if err != nil && !errors.Is(err, store.ErrData) {
			return nil, fmt.Errorf("actoviq: list runs: %w", err)
		}
		if err != nil {
			// A corrupt run hides no other: the healthy ones come with the error.
			dataErr = errors.Join(dataErr, fmt.Errorf("actoviq: list runs: %w", err))
		}
		runs = append(runs, rs...)
	}
	if len(from) > 1 {
		slices.SortStableFunc(runs, func(a, b *store.Run) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
	}
	out := make([]*RunInfo, 0, len(runs))
	for _, r := range runs {
		status, holder, err := e.liveness(ctx, r)
		if err != nil {
			return nil, err
		}
		if derived && status != p.Status {
			continue
		}
		if p.Limit > 0 && len(out) == p.Limit {
			break
		}
		out = append(out, &RunInfo{ID: r.ID, ParentID: r.ParentID, SessionID: r.SessionID, AgentID: r.AgentID, AgentDigest: r.AgentDigest,
			Status: status, StoredStatus: statusOf(r.Status), Holder: holder, Meta: r.Meta, Deadline: r.Deadline,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Revision: r.Revision})
	}
	return out, dataErr
}

// runClaim is a claim as operators see it: live only while unexpired and
// held by a process not known to be dead.
func (e *Runtime) runClaim(c *store.Claim) *RunClaim {
	h := &RunClaim{HolderInfo: ParseHolder(c.Holder), Epoch: c.Epoch, ExpiresAt: c.ExpiresAt}
	h.Dead = deadLocalHolder(c.Holder)
	h.Live = c.ExpiresAt.After(e.clock()) && !h.Dead
	return h
}

func newRunHeldError(runID string, held *store.ClaimHeldError) *RunHeldError {
	hi := ParseHolder(held.Holder)
	return &RunHeldError{RunID: runID, Claim: held, Host: hi.Host, PID: hi.PID}
}
