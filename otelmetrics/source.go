package otelmetrics

import (
	"context"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// StoreSource reads the gauges from a store with bounded queries, each
// served by an index over the runs that are not finished (never a scan of
// finished runs):
//
//   - runs by status: one [store.Store.RunCount] over queued, running and
//     interrupted runs, and one over running runs whose claim is idle
//     (stalled: their holder is gone);
//   - inbox items by kind: the interrupted runs' counts by wait kind (a run
//     whose engine recorded no wait kind counts as "interrupted"), plus the
//     stalled runs;
//   - the oldest of each kind: one [store.Store.RunList] per kind that has
//     items, filtered by wait kind, in waiting order, limit 1 (an ordered
//     index lookup).
//
// now is the clock stalled claims are judged at; nil means the store's.
func StoreSource(st store.Store, tenant string, now func() time.Time) Source {
	return func(ctx context.Context) (*Snapshot, error) {
		var at time.Time
		if now != nil {
			at = now()
		}
		counts, err := st.RunCount(ctx, &store.RunCountParams{Tenant: tenant,
			Statuses: []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted}})
		if err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		stalled, err := st.RunCount(ctx, &store.RunCountParams{Tenant: tenant, Statuses: []store.RunStatus{store.RunRunning},
			Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: at})
		if err != nil {
			return nil, fmt.Errorf("count stalled runs: %w", err)
		}
		s := &Snapshot{Runs: map[string]int64{"queued": 0, "running": 0, "stalled": 0, "interrupted": 0},
			Inbox: map[string]InboxKind{}}
		for _, c := range counts {
			s.Runs[string(c.Status)] += c.N
			if c.Status == store.RunInterrupted {
				k := kindOf(c.WaitKind)
				ik := s.Inbox[k]
				ik.Items += c.N
				s.Inbox[k] = ik
			}
		}
		var nStalled int64
		for _, c := range stalled {
			nStalled += c.N
		}
		s.Runs["stalled"] = nStalled
		s.Runs["running"] -= nStalled
		s.Inbox["stalled"] = InboxKind{Items: nStalled}

		if nStalled > 0 {
			runs, err := st.RunList(ctx, &store.RunListParams{Tenant: tenant, Status: store.RunRunning,
				Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: at, Order: store.RunsWaitingLongest, Summary: true, Limit: 1})
			if err != nil {
				return nil, fmt.Errorf("oldest stalled run: %w", err)
			}
			if len(runs) == 1 {
				s.Inbox["stalled"] = InboxKind{Items: nStalled, Oldest: runs[0].UpdatedAt}
			}
		}
		if err := oldestByKind(ctx, st, tenant, s); err != nil {
			return nil, err
		}
		return s, nil
	}
}

func kindOf(waitKind string) string {
	if waitKind == "" {
		return "interrupted"
	}
	return waitKind
}

func oldestByKind(ctx context.Context, st store.Store, tenant string, s *Snapshot) error {
	for k, ik := range s.Inbox {
		if k == "stalled" || ik.Items == 0 {
			continue
		}
		p := &store.RunListParams{Tenant: tenant, Status: store.RunInterrupted, WaitKind: k,
			Order: store.RunsWaitingLongest, Summary: true, Limit: 1}
		if k == "interrupted" { // no wait kind recorded: the oldest interrupted run of any kind
			p.WaitKind = ""
		}
		runs, err := st.RunList(ctx, p)
		if err != nil {
			return fmt.Errorf("oldest %s item: %w", k, err)
		}
		if len(runs) == 1 {
			ik.Oldest = runs[0].UpdatedAt
			s.Inbox[k] = ik
		}
	}
	return nil
}
