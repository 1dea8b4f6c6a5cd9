package actoviq

import (
	"context"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// The inbox: every run that waits for a person, oldest first, paged, with
// totals. A page is a fixed number of store queries whatever the number of
// runs waiting or stored: the page of runs (an index walk of the waiting
// runs from the cursor), their ledgers, the ledgers of the children their
// questions come from, their claims, and the totals.

// InboxKindStalled is the inbox kind of a stalled run (see
// [StatusStalled]): its worker is gone and someone must resume it.
const InboxKindStalled = "stalled"

// InboxKindResume is the inbox kind of an interrupted run whose questions
// are all decided: it waits to be resumed.
const InboxKindResume = "resume"

// InboxParams pages [Runtime.Inbox].
type InboxParams struct {
	// Kind keeps only runs that stopped for this kind (approval,
	// reconciliation, recovery, provider) or "stalled"; empty means all.
	Kind string
	// AgentID keeps only runs of this agent; empty means all.
	AgentID string
	// Limit is the page size in runs; 0 means 50, at most 1000.
	Limit int
	// After continues: the Next of the previous [InboxPage].
	After string
}

// InboxRun is one run of the inbox with what it waits for.
type InboxRun struct {
	// Run is the run, with its derived status (interrupted or stalled).
	Run *RunInfo
	// Kind is what it stopped for: an [InterruptionKind], or
	// [InboxKindStalled]; the kind the totals count it under.
	Kind string
	// Interruptions are the open questions of an interrupted run (as
	// [Runtime.Get] reports them). None for a stalled run, or for an
	// interrupted run whose questions are all decided (it waits to be
	// resumed: [InboxKindResume]).
	Interruptions []Interruption
}

// InboxPage is one page of [Runtime.Inbox].
type InboxPage struct {
	// Runs wait for a person, the one waiting longest first (by the time
	// of their last write).
	Runs []*InboxRun
	// Totals counts every run waiting, by kind, over the whole inbox (not
	// only this page, and whatever the filters). An interrupted run counts
	// under the kind of its first question as it stopped.
	Totals map[string]int64
	// Total is the sum of Totals.
	Total int64
	// Next is the cursor of the next page (InboxParams.After); empty when
	// no run follows.
	Next string
}

// interruptionOpen reports whether in is still open, given the ledger its
// call is recorded in (the run's own, or the child's for a child's call).
func interruptionOpen(in Interruption, ledger map[string]*store.LedgerEntry) bool {
	if in.Kind == InterruptProvider { // open until the next drive
		return true
	}
	en, ok := ledger[in.CallID]
	if !ok {
		return false
	}
	if in.Kind == InterruptApproval {
		return en.State == store.LedgerAwaitingApproval
	}
	return en.State == store.LedgerStarted || en.State == store.LedgerUnknown
}

// Inbox lists one page of the runs that wait for a person: interrupted
// runs nobody is driving, and stalled runs. See [InboxPage].
func (rt *Runtime) Inbox(ctx context.Context, p *InboxParams) (*InboxPage, error) {
	if p == nil {
		p = &InboxParams{}
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > store.MaxLedgerRuns:
		return nil, &store.InvalidError{Field: "Limit", Reason: fmt.Sprintf("%d is not from 0 to %d", limit, store.MaxLedgerRuns)}
	}
	after, err := decodeCursor(p.After)
	if err != nil {
		return nil, err
	}
	now := rt.clock()
	idle := store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: localHolderPrefix()}
	sp := store.RunListParams{Tenant: rt.tenant, Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		AgentID: p.AgentID, Claim: idle, Now: now, Order: store.RunsWaitingLongest, After: after}
	switch p.Kind {
	case "":
	case InboxKindStalled:
		sp.Statuses = []store.RunStatus{store.RunRunning}
	default:
		sp.Statuses, sp.WaitKind = []store.RunStatus{store.RunInterrupted}, p.Kind
	}
	page := &InboxPage{Runs: []*InboxRun{}, Totals: map[string]int64{}}
	var dataErr error
	// The store is asked for one run more than the page needs: when it
	// is there, the page has a next one; when it is not, Next stays empty.
	for {
		need := limit - len(page.Runs)
		sp.Limit = need + 1
		runs, err := rt.store.RunList(ctx, &sp)
		if err != nil && !errors.Is(err, store.ErrData) {
			return nil, fmt.Errorf("actoviq: inbox: %w", err)
		}
		if err != nil {
			dataErr = errors.Join(dataErr, fmt.Errorf("actoviq: inbox: %w", err))
		}
		more := len(runs) > need
		if more {
			runs = runs[:need]
		}
		items, bad, err := rt.inboxRuns(ctx, runs)
		if err != nil {
			return nil, err
		}
		dataErr = errors.Join(dataErr, bad)
		page.Runs = append(page.Runs, items...)
		if len(runs) > 0 {
			sp.After = store.CursorOf(runs[len(runs)-1], store.RunsWaitingLongest)
		}
		if !more {
			break
		}
		if len(page.Runs) == limit {
			page.Next = encodeCursor(sp.After)
			break
		}
		// Runs the derivation left out (a live claim of a process of
		// this host) leave the page short: read on from where it stopped.
	}
	counts, err := rt.store.RunCount(ctx, &store.RunCountParams{Tenant: rt.tenant,
		Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning}, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
	if err != nil {
		return nil, fmt.Errorf("actoviq: inbox totals: %w", err)
	}
	for _, c := range counts {
		kind := c.WaitKind
		if c.Status == store.RunRunning {
			kind = InboxKindStalled
		}
		if kind == "" {
			kind = string(StatusInterrupted) // stopped before kinds were recorded
		}
		page.Totals[kind] += c.N
		page.Total += c.N
	}
	// The page lists the runs whose live claim is held by a process of
	// this host that is gone (see deadLocalHolder); the store's idle count
	// cannot see that, so they are added here. The store is asked only
	// for the runs this host's processes hold (an index of the claims by
	// host): as many as this host drives right now, whatever other hosts
	// drive.
	if prefix := localHolderPrefix(); prefix != "" {
		live, err := rt.store.RunList(ctx, &store.RunListParams{Tenant: rt.tenant,
			Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
			Claim:    store.ClaimFilter{State: store.ClaimLive, HolderPrefix: prefix}, Now: now, Summary: true})
		if err != nil {
			return nil, fmt.Errorf("actoviq: inbox totals: %w", err)
		}
		claims, err := rt.claimsOf(ctx, live)
		if err != nil {
			return nil, fmt.Errorf("actoviq: inbox totals: %w", err)
		}
		for _, r := range live {
			c := claims[store.RunClaimKey(r.ID)]
			if c == nil || !c.ExpiresAt.After(now) || !deadLocalHolder(c.Holder) {
				continue
			}
			kind := r.WaitKind
			switch {
			case r.Status == store.RunRunning:
				kind = InboxKindStalled
			case kind == "":
				kind = string(StatusInterrupted)
			}
			page.Totals[kind]++
			page.Total++
		}
	}
	return page, dataErr
}

// inboxRuns derives what each run waits for, reading the ledgers and
// claims of all of them in one query each. A run that does not wait after
// all (a live claim of a process of this host that is alive) is left out.
//
// A run whose checkpoint does not decode hides no other: it is reported
// in bad (matching store.ErrData) and left out.
func (rt *Runtime) inboxRuns(ctx context.Context, runs []*store.Run) (out []*InboxRun, bad, err error) {
	infos, err := rt.summaries(ctx, runs)
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	cps := make([]*checkpoint, len(runs))
	for i, r := range runs {
		if r.Status != store.RunInterrupted {
			continue
		}
		cp, err := decodeCheckpoint(r)
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("actoviq: inbox: run %s: %w", r.ID, err))
			continue
		}
		cps[i] = cp
		ids = append(ids, r.ID)
	}
	ledgers, err := rt.ledgersOf(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	var childIDs []string
	for _, cp := range cps {
		if cp == nil {
			continue
		}
		for _, in := range cp.Interruptions {
			if in.RunID != "" {
				if _, ok := ledgers[in.RunID]; !ok {
					childIDs = append(childIDs, in.RunID)
					ledgers[in.RunID] = nil
				}
			}
		}
	}
	children, err := rt.ledgersOf(ctx, childIDs)
	if err != nil {
		return nil, nil, err
	}
	for id, l := range children {
		ledgers[id] = l
	}
	for i, r := range runs {
		info := infos[i]
		if r.Status == store.RunInterrupted && cps[i] == nil {
			continue // reported in bad
		}
		switch info.Status {
		case StatusStalled:
			out = append(out, &InboxRun{Run: info, Kind: InboxKindStalled})
		case StatusInterrupted:
			it := &InboxRun{Run: info, Kind: r.WaitKind}
			for _, in := range cps[i].Interruptions {
				ledger := ledgers[r.ID]
				if in.RunID != "" {
					ledger = ledgers[in.RunID]
				}
				if interruptionOpen(in, ledger) {
					if en := ledger[in.CallID]; in.Kind == InterruptApproval && en != nil {
						// Where the approval stands (approvers so far,
						// escalation): in memory, from the entry read.
						in.Approval = rt.approvalStatus(ctx, &store.Run{ID: en.RunID, AgentID: r.AgentID}, en)
					}
					it.Interruptions = append(it.Interruptions, in)
				}
			}
			if it.Kind == "" && len(cps[i].Interruptions) > 0 {
				it.Kind = string(cps[i].Interruptions[0].Kind)
			}
			out = append(out, it)
		}
	}
	return out, bad, nil
}

// ledgersOf reads the ledgers of several runs in one query per
// store.MaxLedgerRuns runs, by run and call id.
func (rt *Runtime) ledgersOf(ctx context.Context, ids []string) (map[string]map[string]*store.LedgerEntry, error) {
	out := map[string]map[string]*store.LedgerEntry{}
	for len(ids) > 0 {
		n := min(len(ids), store.MaxLedgerRuns)
		entries, err := rt.store.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.tenant, RunIDs: ids[:n]})
		if err != nil {
			return nil, fmt.Errorf("actoviq: ledgers: %w", err)
		}
		for _, en := range entries {
			if out[en.RunID] == nil {
				out[en.RunID] = map[string]*store.LedgerEntry{}
			}
			out[en.RunID][en.CallID] = en
		}
		ids = ids[n:]
	}
	return out, nil
}
