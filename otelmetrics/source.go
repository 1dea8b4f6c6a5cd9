package otelmetrics

import (
	"context"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// SourceScan bounds how many waiting runs [StoreSource] reads, oldest
// first, to find the oldest item of each inbox kind.
const SourceScan = 1000

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
//   - the oldest of each kind: interrupted runs in waiting order, one page
//     of up to 200 at a time, until every kind is found or [SourceScan]
//     runs were read. A kind not found within them is older than none of
//     those runs: its age is given as the last run's, an upper bound.
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
	missing := 0
	for k, ik := range s.Inbox {
		if k != "stalled" && ik.Items > 0 {
			missing++
		}
	}
	var after *store.RunCursor
	var last time.Time
	for read := 0; missing > 0 && read < SourceScan; {
		page, err := st.RunList(ctx, &store.RunListParams{Tenant: tenant, Status: store.RunInterrupted,
			Order: store.RunsWaitingLongest, Summary: true, After: after, Limit: min(200, SourceScan-read)})
		if err != nil {
			return fmt.Errorf("oldest waiting runs: %w", err)
		}
		for _, r := range page {
			k := kindOf(r.WaitKind)
			if ik, ok := s.Inbox[k]; ok && ik.Oldest.IsZero() && ik.Items > 0 {
				ik.Oldest = r.UpdatedAt
				s.Inbox[k] = ik
				missing--
			}
			last = r.UpdatedAt
		}
		read += len(page)
		if len(page) == 0 {
			break
		}
		after = store.CursorOf(page[len(page)-1], store.RunsWaitingLongest)
	}
	for k, ik := range s.Inbox {
		if ik.Items > 0 && ik.Oldest.IsZero() {
			ik.Oldest = last
			s.Inbox[k] = ik
		}
	}
	return nil
}
