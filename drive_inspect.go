package actoviq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// childLedger reads (once per Get) the ledger of a child run whose call
// interrupted its parent.
func (rt *Runtime) childLedger(ctx context.Context, cache map[string]map[string]*store.LedgerEntry, runID string) (map[string]*store.LedgerEntry, error) {
	if l, ok := cache[runID]; ok {
		return l, nil
	}
	entries, err := rt.store.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.tenant, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: ledger of child run %s: %w", runID, err)
	}
	l := map[string]*store.LedgerEntry{}
	for _, en := range entries {
		l[en.CallID] = en
	}
	cache[runID] = l
	return l, nil
}

// list is List with derived statuses: a filter on running, stalled or
// interrupted reads the stored statuses it can come from, derives, filters
// and then applies the limit.
func (rt *Runtime) list(ctx context.Context, p *ListParams) ([]*RunInfo, error) {
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
		rs, err := rt.store.RunList(ctx, &store.RunListParams{Tenant: rt.tenant, Status: s, Limit: limit})
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
		status, holder, err := rt.liveness(ctx, r)
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

// unsettled lists the calls a finished run left started or unknown, with
// the evidence of the interruption that stopped it when there is one.
func (rt *Runtime) unsettled(run *store.Run, cp *checkpoint, entries []*store.LedgerEntry) []Interruption {
	var out []Interruption
	// The view is read-only, but building an interruption redacts its
	// text, which needs the runtime (its redactor and clock).
	d := &drive{rt: rt, cp: cp, run: run}
	for _, en := range entries {
		if !ledger.MayHaveRun(en.State) {
			continue
		}
		if in := d.openInterruption(en.CallID); in != nil && in.State == string(en.State) {
			out = append(out, *in)
			continue
		}
		kind := InterruptReconciliation
		if en.Effect != tool.SideEffect.String() {
			kind = InterruptRecovery
		}
		out = append(out, d.interruption(kind, en, fmt.Sprintf(
			"the run ended %s while this call was %s; it will not run again, but what happened can be recorded (committed or failed)",
			run.Status, en.State), nil))
	}
	return out
}
