package store

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// RunOrder is the order of a [Store.RunList].
type RunOrder string

// Run orders.
const (
	// RunsNewest lists newest first: CreatedAt, then ID, descending.
	RunsNewest RunOrder = ""
	// RunsWaitingLongest lists the run unchanged for longest first:
	// UpdatedAt, then ID, ascending. An interrupted run is not written
	// while it waits, so this is the order in which runs began waiting.
	RunsWaitingLongest RunOrder = "waiting"
)

// RunCursor is where a page of a [Store.RunList] ended: the sort key of
// its last run. Pass it as RunListParams.After to get the next page.
type RunCursor struct {
	// At is the last run's CreatedAt ([RunsNewest]) or UpdatedAt
	// ([RunsWaitingLongest]).
	At time.Time
	// ID is the last run's id (the tie-breaker).
	ID string
}

// CursorOf returns the cursor after r in order o.
func CursorOf(r *Run, o RunOrder) *RunCursor {
	if o == RunsWaitingLongest {
		return &RunCursor{At: r.UpdatedAt, ID: r.ID}
	}
	return &RunCursor{At: r.CreatedAt, ID: r.ID}
}

// ClaimState is the state of a run's claim ("run:<id>") at a given time.
type ClaimState string

// Claim states for [ClaimFilter].
const (
	// ClaimAny does not filter.
	ClaimAny ClaimState = ""
	// ClaimLive keeps runs whose claim has not expired.
	ClaimLive ClaimState = "live"
	// ClaimIdle keeps runs that have no claim, or whose claim expired or
	// was released.
	ClaimIdle ClaimState = "idle"
)

// ClaimFilter filters runs by their claim.
type ClaimFilter struct {
	// State is the claim state to keep.
	State ClaimState
	// HolderPrefix narrows a claim state by the holder of the live claim.
	// With ClaimIdle it also keeps runs whose live claim's holder starts
	// with it (such as "host:" for this host's processes, whose death the
	// caller can check itself). With ClaimLive it keeps only runs whose
	// live claim's holder starts with it: the runs this host's processes
	// hold. A prefix that is a host name and one ':' (see [HostPrefix]) is
	// answered from an index of the claims by host, so the read costs as
	// many rows as that host holds live claims, whatever other hosts hold.
	HolderPrefix string
}

// RunCountParams counts a tenant's runs with the filters of
// [RunListParams] (Statuses, ParentID, Claim at Now).
type RunCountParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Statuses keeps only runs in one of these statuses; empty means any.
	Statuses []RunStatus
	// ParentID keeps only children of this run; empty means any.
	ParentID string
	// Claim keeps only runs whose claim is in this state at Now.
	Claim ClaimFilter
	// Now is the time Claim is judged at; zero means the store's clock.
	Now time.Time
}

// RunCount is one group of a [Store.RunCount]: how many runs have this
// stored status and wait kind.
type RunCount struct {
	// Status is the stored status.
	Status RunStatus
	// WaitKind is [Run.WaitKind] (empty unless Status is interrupted).
	WaitKind string
	// N is the number of runs.
	N int64
}

// MaxPruneBatch is the largest RunPruneParams.Limit.
const MaxPruneBatch = 10000

// MaxLedgerRuns is the largest len(LedgerListParams.RunIDs).
const MaxLedgerRuns = 1000

// RunPruneParams removes finished runs, in one bounded batch (one short
// transaction), with their ledger, events and claims (every claim
// [RunOwnsClaim] gives to the run: its own, its tree's child-budget places,
// its cancel requests). Removed are runs in a
// terminal status (completed, failed, cancelled) last written before
// FinishedBefore. Never removed, whatever the parameters:
//
//   - a run that is not finished (queued, running, interrupted);
//   - a finished run with a call still unsettled (ledger state started or
//     unknown: what happened may still be recorded, for the record);
//   - a run of a tree that is not finished: while any run of the tree (its
//     top-level run and every descendant) is not finished, none of them
//     is removed (a running grandchild's budget is read from its root,
//     and counts the turns and tokens of every branch). A child's tree is
//     recorded when it is created (its parent's);
//   - a run whose claim is live;
//   - unless Sessions is set, a run of a session still in use: one with a
//     run that is not finished or was written at or after FinishedBefore.
//
// Session journals are never removed by a prune.
//
// A run created with a ParentID needs its parent to exist (see
// [RunCreateParams]), and a prune does not remove a run that gained a child
// while the batch was chosen: a child is never left without its parent by
// a prune racing the child's creation.
type RunPruneParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// FinishedBefore is the cut-off: runs last written before it.
	FinishedBefore time.Time
	// Limit is the batch size, from 1 to [MaxPruneBatch].
	Limit int
	// Sessions also removes the finished runs of sessions still in use.
	Sessions bool
	// DryRun removes nothing and reports what a prune would remove.
	DryRun bool
	// After continues a prune: only runs after this position (UpdatedAt,
	// then ID) are looked at, so that a batch does not walk again over
	// what the previous ones removed or kept. Nil starts at the oldest.
	After *RunCursor
}

// RunPruneResult is what a [Store.RunPrune] batch removed (or, for a dry
// run, would remove).
type RunPruneResult struct {
	// RunIDs are the runs removed, oldest first.
	RunIDs []string
	// LedgerEntries and Events count the rows removed with them.
	LedgerEntries int64
	// Events counts the events removed with them.
	Events int64
	// More reports that the batch was full: there may be more to prune.
	More bool
	// Last is the position of the batch's last run (RunPruneParams.After
	// of the next batch); nil when the batch was empty.
	Last *RunCursor
}

// Validate checks the parameters.
func (p *RunCountParams) Validate() error {
	for i, s := range p.Statuses {
		if !s.Valid() {
			return invalid(fmt.Sprintf("Statuses[%d]", i), fmt.Sprintf("unknown status %q", s))
		}
	}
	return firstErr(needTenant(p.Tenant), p.Claim.validate())
}

// Validate checks the parameters.
func (p *RunPruneParams) Validate() error {
	if p.FinishedBefore.IsZero() {
		return invalid("FinishedBefore", "zero")
	}
	if p.Limit < 1 || p.Limit > MaxPruneBatch {
		return invalid("Limit", fmt.Sprintf("%d is not from 1 to %d", p.Limit, MaxPruneBatch))
	}
	return needTenant(p.Tenant)
}

func (f *ClaimFilter) validate() error {
	switch f.State {
	case ClaimAny, ClaimLive, ClaimIdle:
	default:
		return invalid("Claim.State", fmt.Sprintf("unknown claim state %q", f.State))
	}
	if f.HolderPrefix != "" && f.State == ClaimAny {
		return invalid("Claim.HolderPrefix", "only with ClaimIdle or ClaimLive")
	}
	return nil
}

// ListStatuses returns the statuses a list keeps (Status and Statuses,
// without duplicates, in the order given); nil means any.
func (p *RunListParams) ListStatuses() []RunStatus {
	return mergeStatuses(p.Status, p.Statuses)
}

func mergeStatuses(one RunStatus, many []RunStatus) []RunStatus {
	var out []RunStatus
	seen := map[RunStatus]bool{}
	add := func(s RunStatus) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(one)
	for _, s := range many {
		add(s)
	}
	return out
}

// Terminal statuses, for queries.
var terminalStatuses = []RunStatus{RunCompleted, RunFailed, RunCancelled}

// TerminalStatuses returns the statuses of finished runs.
func TerminalStatuses() []RunStatus { return append([]RunStatus(nil), terminalStatuses...) }

// StoredWaitKind is the wait kind stored with a run in status s: kind for
// an interrupted run, empty otherwise.
func StoredWaitKind(s RunStatus, kind string) string {
	if s != RunInterrupted {
		return ""
	}
	return kind
}

// SortCounts sorts counts by status, then wait kind, the order every
// backend returns them in.
func SortCounts(c []RunCount) {
	slices.SortFunc(c, func(a, b RunCount) int {
		if x := strings.Compare(string(a.Status), string(b.Status)); x != 0 {
			return x
		}
		return strings.Compare(a.WaitKind, b.WaitKind)
	})
}

// ClaimListParams reads several claims: those named by Keys (at most
// [MaxLedgerRuns]), or those of a holder prefix that are due (HolderPrefix,
// ExpiredBy, Limit), ordered by key or by expiry.
type ClaimListParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Keys are the claims' keys, such as "run:<id>"; the claims found are
	// returned in key order.
	Keys []string
	// HolderPrefix, instead of Keys, lists the claims whose holder starts
	// with it and whose expiry is at or before ExpiredBy, soonest first
	// (then by key), at most Limit: a claim used as a timer, due when it
	// expires (the runtime keeps when an approval wait escalates so). It
	// must be a host prefix ([HostPrefix]): the backends read these claims
	// from their index by the holder's host part and expiry, so the answer
	// costs what it returns, not the claims that are not due.
	HolderPrefix string
	// ExpiredBy is the time the claims listed by HolderPrefix are due by.
	ExpiredBy time.Time
	// Limit bounds the claims listed by HolderPrefix, from 1 to
	// [MaxLedgerRuns].
	Limit int
}

// Validate checks the parameters.
func (p *ClaimListParams) Validate() error {
	if len(p.Keys) > MaxLedgerRuns {
		return invalid("Keys", fmt.Sprintf("%d keys, more than %d", len(p.Keys), MaxLedgerRuns))
	}
	for i, k := range p.Keys {
		if k == "" {
			return invalid(fmt.Sprintf("Keys[%d]", i), "empty")
		}
	}
	switch {
	case p.HolderPrefix == "" && (!p.ExpiredBy.IsZero() || p.Limit != 0):
		return invalid("HolderPrefix", "empty, with ExpiredBy or Limit")
	case p.HolderPrefix != "" && len(p.Keys) > 0:
		return invalid("HolderPrefix", "with Keys")
	case p.HolderPrefix != "" && !HostPrefix(p.HolderPrefix):
		return invalid("HolderPrefix", fmt.Sprintf("%q is not a host prefix (a name, then one ':')", p.HolderPrefix))
	case p.HolderPrefix != "" && p.ExpiredBy.IsZero():
		return invalid("ExpiredBy", "zero")
	case p.HolderPrefix != "" && (p.Limit < 1 || p.Limit > MaxLedgerRuns):
		return invalid("Limit", fmt.Sprintf("%d is not from 1 to %d", p.Limit, MaxLedgerRuns))
	}
	return needTenant(p.Tenant)
}

// SubtractCounts returns all minus some, group by group, without the
// groups that reach zero (for the backends' counts of idle claims).
func SubtractCounts(all, some []RunCount) []RunCount {
	type g struct {
		s RunStatus
		k string
	}
	n := map[g]int64{}
	for _, c := range all {
		n[g{c.Status, c.WaitKind}] += c.N
	}
	for _, c := range some {
		n[g{c.Status, c.WaitKind}] -= c.N
	}
	out := []RunCount{}
	for k, v := range n {
		if v > 0 {
			out = append(out, RunCount{Status: k.s, WaitKind: k.k, N: v})
		}
	}
	SortCounts(out)
	return out
}

// countedStatuses are the statuses whose runs the backends count as they
// write them: the runs that are not finished.
var countedStatuses = []RunStatus{RunQueued, RunRunning, RunInterrupted}

// Counted reports whether a backend answers p from the counters it keeps
// on every write (a few rows, whatever the number of runs): a count of
// the whole tenant (no ParentID) over statuses that are all counted (not
// finished), with no claim filter or the idle-claim filter without
// HolderPrefix (the runs a live claim takes out come from counters of the
// runs whose claim is held, taken and not released, less those whose
// lease expired without a release: they cost the claims expired so, not
// the runs being driven).
func Counted(p *RunCountParams) bool {
	if p.ParentID != "" || len(p.Statuses) == 0 || p.Claim.HolderPrefix != "" ||
		(p.Claim.State != ClaimAny && p.Claim.State != ClaimIdle) {
		return false
	}
	for _, st := range p.Statuses {
		if !slices.Contains(countedStatuses, st) {
			return false
		}
	}
	return true
}

// LiveFromClaims tells a backend where to start a list of the runs whose
// claim is live (a ClaimLive filter without a HolderPrefix): from the
// claims side (the live claims of runs, through an index of them by
// expiry, each run by key: it costs the runs being driven, whatever the
// page) or from the runs side (the runs of the listed statuses, newest
// first, each probing its claim: it costs the page plus the runs without
// a live claim met before it is full). listed is how many runs the listed
// statuses hold, running how many are running (the counters), limit the
// page (0: no limit). The runs side is chosen when its expected cost, the
// page over the share of listed runs that are live (about running/listed),
// is below the claims side's (running): not with many runs waiting and few
// being driven, where it would walk the waiting ones.
func LiveFromClaims(limit int, listed, running int64) bool {
	if limit <= 0 {
		return listed > running
	}
	return int64(limit)*listed > running*running
}

// LiveCountCap is the number of live claims from which [LiveFromClaims]
// (limit, listed, n) chooses the runs side: a backend that counts the live
// claims of runs only up to it decides as it would with the exact count,
// and reads at most that many claims to know.
func LiveCountCap(limit int, listed int64) int64 {
	if limit <= 0 {
		return max(listed, 0)
	}
	target := int64(limit) * listed
	n := int64(math.Sqrt(float64(target)))
	for n*n < target {
		n++
	}
	for n > 0 && (n-1)*(n-1) >= target {
		n--
	}
	return n
}

// LiveSide decides where a list of the runs whose claim is live (a
// ClaimLive filter without a HolderPrefix) starts, as [LiveFromClaims]
// would with the number of live claims, at a cost that grows neither with
// the runs being driven nor with the stalled ones (claims that expired
// without a release). limit is the page, listed how many runs the listed
// statuses hold (the counters), held how many of them have a held claim
// (the held-claim counters: the live ones and those whose lease expired
// without a release). count counts, each up to k, the held claims of runs
// that expired and those that are live.
//
// A held count below [LiveCountCap] chooses the claims side unread (it
// costs at most held). Otherwise both kinds are counted up to k, k
// growing fourfold from 128 to the cap: the first kind found below k gives
// the number of live claims (directly, or as held less the expired ones),
// so the reads cost about the smaller of the two, never more than twice
// the cap; both at the cap mean the runs side.
func LiveSide(limit int, listed, held int64, count func(k int64) (expired, live int64, err error)) (fromClaims bool, err error) {
	limitCap := LiveCountCap(limit, listed)
	if limitCap <= 0 {
		return false, nil // nothing listed: the runs side reads nothing
	}
	if held < limitCap {
		return true, nil
	}
	for k := min(int64(128), limitCap); ; k = min(4*k, limitCap) {
		e, l, err := count(k)
		if err != nil {
			return false, err
		}
		switch {
		case l < k:
			return LiveFromClaims(limit, listed, l), nil
		case e < k:
			return LiveFromClaims(limit, listed, max(held-e, 0)), nil
		case k == limitCap:
			return false, nil
		}
	}
}

// HostPrefix reports whether a holder prefix is a host's: a name without
// ':' followed by one ':', which is how a runtime's default holder starts
// ("host:pid:..."). The backends index claims by that part of the holder
// (the holder up to and including its first ':'), so a ClaimLive filter
// with such a HolderPrefix reads only the claims of that host.
func HostPrefix(prefix string) bool {
	i := strings.IndexByte(prefix, ':')
	return i > 0 && i == len(prefix)-1
}
