package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Conformance of the paged lists, counts, batched ledger reads and
// retention (issue 21).

// pageAll reads a whole list page by page with keyset cursors.
func pageAll(t *testing.T, bb *bundle, p store.RunListParams, size int) []*store.Run {
	t.Helper()
	var out []*store.Run
	p.Limit = size
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		page, err := bb.s.RunList(bb.ctx, &p)
		if err != nil {
			t.Fatalf("RunList page %d: %v", pages, err)
		}
		if len(page) > size {
			t.Fatalf("page of %d runs, limit %d", len(page), size)
		}
		out = append(out, page...)
		if len(page) < size {
			return out
		}
		p.After = store.CursorOf(page[len(page)-1], p.Order)
	}
}

func testRunListPaging(t *testing.T, bb *bundle) {
	statuses := []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted, store.RunCompleted, store.RunFailed}
	want := map[store.RunStatus][]string{}
	// 30 runs; every third shares its creation time with the one before,
	// so the id must break ties.
	for i := range 30 {
		st := statuses[i%len(statuses)]
		r := newRun("t1", fmt.Sprintf("run-%02d", i))
		r.Status = st
		if st == store.RunInterrupted {
			r.WaitKind = "approval"
		}
		mustCreate(t, bb, r)
		want[st] = append(want[st], r.ID)
		if i%3 != 0 {
			bb.clock.Advance(time.Second)
		}
	}
	mustCreate(t, bb, newRun("other", "run-x")) // another tenant
	all := pageAll(t, bb, store.RunListParams{Tenant: "t1"}, 7)
	if len(all) != 30 {
		t.Fatalf("paged %d runs, want 30: %v", len(all), ids(all))
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID {
			t.Fatalf("not newest first at %d: %s then %s", i, a.ID, b.ID)
		}
	}
	whole, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1"})
	if err != nil || !slices.Equal(ids(whole), ids(all)) {
		t.Fatalf("pages %v differ from the whole list %v (%v)", ids(all), ids(whole), err)
	}
	// Two statuses: the merge of two index walks, paged.
	two := pageAll(t, bb, store.RunListParams{Tenant: "t1", Statuses: []store.RunStatus{store.RunQueued, store.RunInterrupted}}, 4)
	var wantTwo []string
	for _, r := range all {
		if r.Status == store.RunQueued || r.Status == store.RunInterrupted {
			wantTwo = append(wantTwo, r.ID)
		}
	}
	if !slices.Equal(ids(two), wantTwo) {
		t.Fatalf("two statuses paged = %v, want %v", ids(two), wantTwo)
	}
	// Oldest write first.
	waiting := pageAll(t, bb, store.RunListParams{Tenant: "t1", Status: store.RunInterrupted, Order: store.RunsWaitingLongest}, 2)
	if !slices.Equal(ids(waiting), want[store.RunInterrupted]) {
		t.Fatalf("waiting order = %v, want %v", ids(waiting), want[store.RunInterrupted])
	}
	for _, r := range waiting {
		if r.WaitKind != "approval" {
			t.Fatalf("run %s wait kind %q, want approval", r.ID, r.WaitKind)
		}
	}
	// Agent and wait kind filters.
	mustCreate(t, bb, &store.Run{Tenant: "t1", ID: "other-agent", AgentID: "b", Status: store.RunInterrupted, WaitKind: "provider"})
	byKind, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Status: store.RunInterrupted, WaitKind: "provider"})
	if err != nil || len(byKind) != 1 || byKind[0].ID != "other-agent" {
		t.Fatalf("wait kind filter: %v %v", ids(byKind), err)
	}
	byAgent, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", AgentID: "agent", Status: store.RunInterrupted})
	if err != nil || len(byAgent) != len(want[store.RunInterrupted]) {
		t.Fatalf("agent filter: %v %v", ids(byAgent), err)
	}
	// Summary leaves the checkpoint out, and only it.
	sum, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Summary: true, Limit: 3})
	if err != nil || len(sum) != 3 {
		t.Fatalf("summary list: %v %v", ids(sum), err)
	}
	for i, r := range sum {
		if i == 0 {
			continue // other-agent, created after the list above
		}
		i--
		if r.Checkpoint != nil || r.ID != all[i].ID || r.Revision != 1 || r.AgentID != "agent" || r.Status != all[i].Status {
			t.Fatalf("summary run %+v", r)
		}
	}
}

func testRunListClaims(t *testing.T, bb *bundle) {
	for _, id := range []string{"a", "b", "c", "d"} {
		mustCreate(t, bb, newRun("t1", id))
		bb.clock.Advance(time.Second)
	}
	// a: live claim of this host; b: live claim of another host; c: expired
	// claim; d: no claim.
	if _, err := acquire1(bb, store.RunClaimKey("a"), "here:1:x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire1(bb, store.RunClaimKey("b"), "there:2:x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire1(bb, store.RunClaimKey("c"), "here:3:x", time.Second); err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(2 * time.Second)
	list := func(cf store.ClaimFilter) []string {
		t.Helper()
		rs, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Status: store.RunRunning, Claim: cf})
		if err != nil {
			t.Fatal(err)
		}
		out := ids(rs)
		slices.Sort(out)
		return out
	}
	if got := list(store.ClaimFilter{State: store.ClaimLive}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("live = %v", got)
	}
	if got := list(store.ClaimFilter{State: store.ClaimIdle}); !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("idle = %v", got)
	}
	if got := list(store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "here:"}); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("idle or held here = %v", got)
	}
	// Judged at a later Now, every claim has expired.
	rs, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Claim: store.ClaimFilter{State: store.ClaimIdle},
		Now: bb.clock.Now().Add(2 * time.Hour)})
	if err != nil || len(rs) != 4 {
		t.Fatalf("idle two hours later = %v %v", ids(rs), err)
	}
	cl, err := bb.s.ClaimList(bb.ctx, &store.ClaimListParams{Tenant: "t1", Keys: []string{store.RunClaimKey("c"), "nope",
		store.RunClaimKey("a"), store.RunClaimKey("b")}})
	if err != nil || len(cl) != 3 || cl[0].Key != "run:a" || cl[1].Holder != "there:2:x" || cl[2].Key != "run:c" {
		t.Fatalf("ClaimList = %+v %v", cl, err)
	}
	counts, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Claim: store.ClaimFilter{State: store.ClaimIdle}})
	if err != nil || len(counts) != 1 || counts[0] != (store.RunCount{Status: store.RunRunning, N: 2}) {
		t.Fatalf("idle counts = %+v %v", counts, err)
	}
}

// testRunListHeldBy: ClaimLive with a HolderPrefix keeps the runs whose
// live claim a holder with that prefix holds (a host's, "host:", or any
// other prefix), in lists (every order, paged, with the other filters) and
// counts; expired claims, other hosts, other tenants and claims that are
// not a run's do not count.
func testRunListHeldBy(t *testing.T, bb *bundle) {
	// h1..h4 held here (h3 interrupted, h4 by a holder with no pid part),
	// o1 held by another host, x1 held here until it expired, q1 queued
	// and held here, n1 never claimed, and one run of another tenant held
	// here.
	for i, id := range []string{"h1", "o1", "h2", "x1", "h3", "q1", "n1", "h4"} {
		r := newRun("t1", id)
		switch id {
		case "h3":
			r.Status, r.WaitKind = store.RunInterrupted, "approval"
		case "q1":
			r.Status = store.RunQueued
		}
		r.AgentID = []string{"agent", "other"}[i%2]
		mustCreate(t, bb, r)
		bb.clock.Advance(time.Second)
	}
	mustCreate(t, bb, newRun("t2", "h1"))
	for _, c := range []struct {
		tenant, key, holder string
		ttl                 time.Duration
	}{
		{"t1", "run:h1", "here:1:a", time.Hour}, {"t1", "run:o1", "there:2:a", time.Hour},
		{"t1", "run:h2", "here:3:a/drive", time.Hour}, {"t1", "run:x1", "here:1:a", time.Second},
		{"t1", "run:h3", "here:4:a", time.Hour}, {"t1", "run:q1", "here:5:a", time.Hour},
		{"t1", "run:h4", "here:", time.Hour}, {"t1", "serves:*", "here:1:a/serves", time.Hour},
		{"t1", "session:s", "here:1:a", time.Hour}, {"t2", "run:h1", "here:1:a", time.Hour},
		{"t1", "run:n0", "here:1:a", time.Hour}, // a claim of a run that does not exist
	} {
		if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: c.tenant, Key: c.key, Holder: c.holder, TTL: c.ttl}); err != nil {
			t.Fatal(err)
		}
	}
	bb.clock.Advance(2 * time.Second)
	list := func(p store.RunListParams) []string {
		t.Helper()
		p.Tenant = "t1"
		rs, err := bb.s.RunList(bb.ctx, &p)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		return ids(rs)
	}
	here := store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "here:"}
	waiting := []store.RunStatus{store.RunRunning, store.RunInterrupted}
	for _, c := range []struct {
		name string
		p    store.RunListParams
		want []string
	}{
		{"here, newest first", store.RunListParams{Claim: here}, []string{"h4", "q1", "h3", "h2", "h1"}},
		{"here, waiting", store.RunListParams{Claim: here, Statuses: waiting}, []string{"h4", "h3", "h2", "h1"}},
		{"here, waiting longest first", store.RunListParams{Claim: here, Statuses: waiting, Order: store.RunsWaitingLongest},
			[]string{"h1", "h2", "h3", "h4"}},
		{"here, interrupted", store.RunListParams{Claim: here, Status: store.RunInterrupted}, []string{"h3"}},
		{"here, by wait kind", store.RunListParams{Claim: here, WaitKind: "approval"}, []string{"h3"}},
		{"here, by agent", store.RunListParams{Claim: here, AgentID: "agent"}, []string{"h3", "h2", "h1"}},
		{"here, page 1", store.RunListParams{Claim: here, Statuses: waiting, Order: store.RunsWaitingLongest, Limit: 2},
			[]string{"h1", "h2"}},
		{"there", store.RunListParams{Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "there:"}}, []string{"o1"}},
		{"a holder's own prefix", store.RunListParams{Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "here:1"}},
			[]string{"h1"}},
		{"a prefix without ':'", store.RunListParams{Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "her"}},
			[]string{"h4", "q1", "h3", "h2", "h1"}},
		{"nobody", store.RunListParams{Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "nowhere:"}}, nil},
		{"here, judged an hour later", store.RunListParams{Claim: here, Now: bb.clock.Now().Add(2 * time.Hour)}, nil},
	} {
		if got := list(c.p); !slices.Equal(got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	// Paging on from a cursor, in both orders.
	first, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Claim: here, Statuses: waiting,
		Order: store.RunsWaitingLongest, Limit: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("page 1: %v %v", ids(first), err)
	}
	if got := list(store.RunListParams{Claim: here, Statuses: waiting, Order: store.RunsWaitingLongest, Limit: 2,
		After: store.CursorOf(first[1], store.RunsWaitingLongest)}); !slices.Equal(got, []string{"h3", "h4"}) {
		t.Errorf("page 2 = %v", got)
	}
	newest, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Claim: here, Limit: 2})
	if err != nil || !slices.Equal(ids(newest), []string{"h4", "q1"}) {
		t.Fatalf("newest page 1: %v %v", ids(newest), err)
	}
	if got := list(store.RunListParams{Claim: here, Limit: 2, After: store.CursorOf(newest[1], store.RunsNewest)}); !slices.Equal(got, []string{"h3", "h2"}) {
		t.Errorf("newest page 2 = %v", got)
	}
	// Summary still comes without the checkpoint.
	sum, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Claim: here, Status: store.RunInterrupted, Summary: true})
	if err != nil || len(sum) != 1 || sum[0].Checkpoint != nil || sum[0].WaitKind != "approval" {
		t.Fatalf("summary = %+v %v", sum, err)
	}
	counts, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Statuses: waiting, Claim: here})
	want := []store.RunCount{{Status: store.RunInterrupted, WaitKind: "approval", N: 1}, {Status: store.RunRunning, N: 3}}
	if err != nil || !slices.Equal(counts, want) {
		t.Fatalf("counts held here = %+v %v, want %+v", counts, err, want)
	}
	counts, err = bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "there:"}})
	if err != nil || !slices.Equal(counts, []store.RunCount{{Status: store.RunRunning, N: 1}}) {
		t.Fatalf("counts held there = %+v %v", counts, err)
	}
	// A HolderPrefix needs a claim state.
	if _, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Claim: store.ClaimFilter{HolderPrefix: "here:"}}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("HolderPrefix without a state: %v", err)
	}
	// Released: no longer held.
	c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t1", Key: "run:h2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}}); err != nil {
		t.Fatal(err)
	}
	if got := list(store.RunListParams{Claim: here, Statuses: waiting}); !slices.Equal(got, []string{"h4", "h3", "h1"}) {
		t.Errorf("after a release = %v", got)
	}
}

func testRunCount(t *testing.T, bb *bundle) {
	kinds := []string{"approval", "reconciliation", "approval", "provider", "approval"}
	for i, k := range kinds {
		r := newRun("t1", fmt.Sprintf("i%d", i))
		r.Status, r.WaitKind = store.RunInterrupted, k
		mustCreate(t, bb, r)
	}
	q := newRun("t1", "q")
	q.Status, q.WaitKind = store.RunQueued, "approval" // not interrupted: not stored
	mustCreate(t, bb, q)
	mustCreate(t, bb, newRun("t1", "r"))
	mustCreate(t, bb, newRun("t2", "elsewhere"))
	got, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.RunCount{
		{Status: store.RunInterrupted, WaitKind: "approval", N: 3},
		{Status: store.RunInterrupted, WaitKind: "provider", N: 1},
		{Status: store.RunInterrupted, WaitKind: "reconciliation", N: 1},
		{Status: store.RunQueued, N: 1},
		{Status: store.RunRunning, N: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	// A write changes the kind; leaving interrupted clears it.
	r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "i1",
		Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunInterrupted, Checkpoint: r.Checkpoint, WaitKind: "recovery"}})
	if err != nil || res.Run.WaitKind != "recovery" {
		t.Fatalf("write wait kind: %v %+v", err, res)
	}
	res, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "i1",
		Run: &store.RunUpdate{ExpectedRevision: res.Run.Revision, Status: store.RunQueued, Checkpoint: r.Checkpoint, WaitKind: "recovery"}})
	if err != nil || res.Run.WaitKind != "" {
		t.Fatalf("queued keeps a wait kind: %v %+v", err, res.Run)
	}
	again, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "i1"})
	if again.WaitKind != "" || again.Status != store.RunQueued {
		t.Fatalf("read back %+v", again)
	}
	// Claiming an interrupted-then-queued run clears nothing it should keep.
	got, err = bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Statuses: []store.RunStatus{store.RunInterrupted}})
	if err != nil {
		t.Fatal(err)
	}
	want = []store.RunCount{{Status: store.RunInterrupted, WaitKind: "approval", N: 3}, {Status: store.RunInterrupted, WaitKind: "provider", N: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("interrupted counts = %+v, want %+v", got, want)
	}
	empty, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "none"})
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("empty tenant counts = %#v %v", empty, err)
	}
}

func testLedgerListRuns(t *testing.T, bb *bundle) {
	for _, id := range []string{"r1", "r2", "r3"} {
		mustCreate(t, bb, newRun("t1", id))
	}
	for _, w := range []struct {
		run  string
		call string
		idx  int
	}{{"r2", "b", 1}, {"r2", "a", 0}, {"r1", "z", 0}, {"r3", "c", 0}} {
		if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: w.run,
			Ledger: []store.LedgerWrite{{Entry: entry("t1", w.run, w.call, w.idx, store.LedgerPrepared)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t1", RunIDs: []string{"r2", "r1", "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.RunID+"/"+e.CallID)
	}
	if !slices.Equal(keys, []string{"r1/z", "r2/a", "r2/b"}) {
		t.Fatalf("ledgers of r2, r1 = %v", keys)
	}
	_, err = bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t1", RunID: "r1", RunIDs: []string{"r2"}})
	if err == nil {
		t.Fatal("RunID with RunIDs accepted")
	}
}

// finish creates a run in status st, last written at the clock's time.
func (bb *bundle) finish(t *testing.T, id string, st store.RunStatus, mod func(r *store.Run)) {
	t.Helper()
	r := newRun("t1", id)
	r.Status = st
	if mod != nil {
		mod(r)
	}
	mustCreate(t, bb, r)
}

// testRunPruneOwnedClaims: a prune removes, with each run, the claims it
// owns (store.RunOwnsClaim): its own, the child-budget places of the tree
// it is the root of, its cancel requests; a dry run removes none, and the
// claims of other runs (one whose id extends the pruned one's, one of
// another tenant, keys that only look alike) stay.
func testRunPruneOwnedClaims(t *testing.T, bb *bundle) {
	bb.finish(t, "r", store.RunCompleted, nil)
	bb.finish(t, "r.k", store.RunCompleted, func(r *store.Run) { r.ParentID = "r" })
	bb.finish(t, "rr", store.RunRunning, nil)
	owned := []string{"run:r", store.ChildPlaceKey("r", 0), store.ChildPlaceKey("r", 1), store.ChildPlaceKey("r", 12),
		store.CancelRequestKey("r", 3), "run:r.k"}
	kept := []string{"run:rr", store.ChildPlaceKey("rr", 0), store.ChildPlaceKey("r.k2", 0), "children:r:x", "children:r:",
		"children:r:1:2", "cancel:r:", "cancel:rr:1", "session:r", "children:r", "children:r;0"}
	for _, k := range append(append([]string{}, owned...), kept...) {
		if _, err := acquire1(bb, k, "h", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t2", Key: store.ChildPlaceKey("r", 0), Holder: "h", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(time.Minute) // every claim expired: none keeps its run
	for _, k := range []string{store.ChildPlaceKey("r", 0), "cancel:r:3", "run:r"} {
		if !store.RunOwnsClaim(k, "r") {
			t.Fatalf("RunOwnsClaim(%s, r) = false", k)
		}
	}
	for _, k := range kept {
		if store.RunOwnsClaim(k, "r") || store.RunOwnsClaim(k, "r.k") {
			t.Fatalf("RunOwnsClaim(%s) = true", k)
		}
	}
	prune := func(dry bool) []string {
		t.Helper()
		res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: bb.clock.Now(), Limit: 10, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		out := slices.Clone(res.RunIDs)
		slices.Sort(out)
		return out
	}
	stored := func(tenant, k string) bool {
		t.Helper()
		_, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: tenant, Key: k})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if got := prune(true); !slices.Equal(got, []string{"r", "r.k"}) {
		t.Fatalf("dry run = %v", got)
	}
	for _, k := range owned {
		if !stored("t1", k) {
			t.Fatalf("a dry run removed claim %s", k)
		}
	}
	if got := prune(false); !slices.Equal(got, []string{"r", "r.k"}) {
		t.Fatalf("prune = %v", got)
	}
	for _, k := range owned {
		if stored("t1", k) {
			t.Errorf("claim %s of a pruned run is still stored", k)
		}
	}
	for _, k := range kept {
		if !stored("t1", k) {
			t.Errorf("claim %s, not a pruned run's, was removed", k)
		}
	}
	if !stored("t2", store.ChildPlaceKey("r", 0)) {
		t.Error("another tenant's claim was removed")
	}
}

// testRunPruneRacesChildCreate: a prune and the creation of a child of
// the finished run it may remove, at once (on a second handle), many
// times: either the child is refused (its parent is gone: a NotFoundError)
// or it is written and its parent is kept. No child is ever left without
// its parent.
func testRunPruneRacesChildCreate(t *testing.T, bb *bundle) {
	other := bb.open(t, bb.clock.Now)
	const rounds = 60
	for i := range rounds {
		parent := fmt.Sprintf("p%03d", i)
		bb.finish(t, parent, store.RunCompleted, nil)
		child := newRun("t1", fmt.Sprintf("c%03d", i))
		child.Status, child.ParentID = store.RunQueued, parent
		var createErr, pruneErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, createErr = other.RunCreate(bb.ctx, &store.RunCreateParams{Run: child})
		}()
		go func() {
			defer wg.Done()
			_, pruneErr = bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: bb.clock.Now().Add(time.Second), Limit: 10})
		}()
		wg.Wait()
		if pruneErr != nil {
			t.Fatal(pruneErr)
		}
		_, perr := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: parent})
		_, cerr := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: child.ID})
		switch {
		case createErr == nil && (perr != nil || cerr != nil):
			t.Fatalf("round %d: the child was written but the parent reads %v, the child %v", i, perr, cerr)
		case createErr != nil && !errors.Is(createErr, store.ErrNotFound):
			t.Fatalf("round %d: create: %v", i, createErr)
		case createErr != nil && (!errors.Is(perr, store.ErrNotFound) || !errors.Is(cerr, store.ErrNotFound)):
			t.Fatalf("round %d: the child was refused, yet the parent reads %v and the child %v", i, perr, cerr)
		}
	}
}

// testRunPruneKeepsOpenTrees: a run is removed only when no run of its
// tree (its root and every descendant of the root) is unfinished. A root
// whose finished child has a running grandchild stays (its budget is read
// by that grandchild), and so does a finished branch beside a running one
// (the tree's budget counts its turns and tokens). A finished tree goes
// whole, and an open one once its last run ends.
func testRunPruneKeepsOpenTrees(t *testing.T, bb *bundle) {
	tree := func(st store.RunStatus, ids ...string) {
		t.Helper()
		for _, id := range ids {
			parent := ""
			if i := strings.LastIndexByte(id, '.'); i >= 0 {
				parent = id[:i]
			}
			s := store.RunCompleted
			if id == ids[len(ids)-1] {
				s = st
			}
			bb.finish(t, id, s, func(r *store.Run) { r.ParentID = parent })
		}
	}
	// a: a running grandchild under a finished child, and a finished
	// branch a.2 beside it. b: finished whole. c: a running root. d: an
	// interrupted child. e: a queued great-grandchild.
	tree(store.RunRunning, "a", "a.1", "a.2", "a.2.1", "a.1.1")
	tree(store.RunCompleted, "b", "b.1", "b.1.1")
	bb.finish(t, "c", store.RunRunning, nil)
	tree(store.RunCompleted, "c.1", "c.1.1")
	tree(store.RunInterrupted, "d", "d.1")
	tree(store.RunQueued, "e", "e.1", "e.1.1", "e.1.1.1")
	cut := bb.clock.Now().Add(time.Second)
	prune := func(dry bool) []string {
		t.Helper()
		var out []string
		var after *store.RunCursor
		for {
			res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 2, DryRun: dry, After: after})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.RunIDs...)
			if !res.More {
				return sortedIDs(out)
			}
			after = res.Last
		}
	}
	if got := prune(true); !slices.Equal(got, []string{"b", "b.1", "b.1.1"}) {
		t.Fatalf("dry run = %v, want the finished tree b only", got)
	}
	if got := prune(false); !slices.Equal(got, []string{"b", "b.1", "b.1.1"}) {
		t.Fatalf("prune = %v, want the finished tree b only", got)
	}
	for _, id := range []string{"a", "a.1", "a.2", "a.2.1", "a.1.1", "e", "e.1", "e.1.1"} {
		if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: id}); err != nil {
			t.Fatalf("run %s of a tree not finished: %v", id, err)
		}
	}
	// The grandchild ends: its whole tree goes.
	g, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "a.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "a.1.1",
		Run: &store.RunUpdate{ExpectedRevision: g.Revision, Status: store.RunCompleted, Checkpoint: g.Checkpoint}}); err != nil {
		t.Fatal(err)
	}
	cut = bb.clock.Now().Add(time.Second)
	if got := prune(false); !slices.Equal(got, []string{"a", "a.1", "a.1.1", "a.2", "a.2.1"}) {
		t.Fatalf("prune after the grandchild ended = %v, want tree a", got)
	}
}

// testClaimReleaseRemove: a release with Remove deletes the place's row
// (the next holder starts at epoch 1); a stale fence removes nothing; a
// key that is not a child-budget place is refused.
func testClaimReleaseRemove(t *testing.T, bb *bundle) {
	place := store.ChildPlaceKey("r", 0)
	c, err := acquire1(bb, place, "child a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stale := store.Fence{Key: place, Holder: "child a", Epoch: c.Epoch + 1}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: stale, Remove: true}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Remove with a stale fence = %v, want ErrFenced", err)
	}
	if _, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t1", Key: place}); err != nil {
		t.Fatalf("a refused Remove removed the place: %v", err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Remove: true,
		Fence: store.Fence{Key: place, Holder: c.Holder, Epoch: c.Epoch}}); err != nil {
		t.Fatal(err)
	}
	if got, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t1", Key: place}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the removed place reads %+v, %v", got, err)
	}
	again, err := acquire1(bb, place, "child b", time.Hour)
	if err != nil || again.Epoch != 1 {
		t.Fatalf("the place taken again: %+v, %v (want epoch 1)", again, err)
	}
	r, err := acquire1(bb, store.RunClaimKey("r"), "h", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	err = bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Remove: true, Fence: store.Fence{Key: r.Key, Holder: r.Holder, Epoch: r.Epoch}})
	if !isInvalid(err) {
		t.Fatalf("Remove of a run's claim = %v, want an InvalidError", err)
	}
}

// testClaimListDue: claims used as timers (holder prefix, expiry) are
// listed when due, soonest first, at most Limit; not those not yet due,
// not other holders' or other tenants' expired claims.
func testClaimListDue(t *testing.T, bb *bundle) {
	for i, c := range []struct {
		key, holder string
		ttl         time.Duration
	}{
		{"escalate:c", "(escalation):c", 3 * time.Minute},
		{"escalate:a", "(escalation):a", time.Minute},
		{"escalate:b", "(escalation):b", time.Minute},
		{"escalate:late", "(escalation):late", time.Hour},
		{"run:x", "host:1:x", time.Second},
		{"run:y", "(escalation)x:1", time.Second},
	} {
		if _, err := acquire1(bb, c.key, c.holder, c.ttl); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t2", Key: "escalate:a", Holder: "(escalation):a", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	list := func(limit int) []string {
		t.Helper()
		cs, err := bb.s.ClaimList(bb.ctx, &store.ClaimListParams{Tenant: "t1", HolderPrefix: store.EscalationHolderPrefix,
			ExpiredBy: bb.clock.Now(), Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Key)
		}
		return out
	}
	if got := list(10); len(got) != 0 {
		t.Fatalf("due before any expiry: %v", got)
	}
	bb.clock.Advance(5 * time.Minute)
	if got := list(10); !slices.Equal(got, []string{"escalate:a", "escalate:b", "escalate:c"}) {
		t.Fatalf("due = %v, want a, b, c (soonest first, then by key)", got)
	}
	if got := list(2); !slices.Equal(got, []string{"escalate:a", "escalate:b"}) {
		t.Fatalf("due, limit 2 = %v", got)
	}
	for _, p := range []*store.ClaimListParams{
		{Tenant: "t1", HolderPrefix: "host", ExpiredBy: bb.clock.Now(), Limit: 1},
		{Tenant: "t1", HolderPrefix: "host:", Limit: 1},
		{Tenant: "t1", HolderPrefix: "host:", ExpiredBy: bb.clock.Now()},
		{Tenant: "t1", HolderPrefix: "host:", ExpiredBy: bb.clock.Now(), Limit: store.MaxLedgerRuns + 1},
		{Tenant: "t1", HolderPrefix: "host:", ExpiredBy: bb.clock.Now(), Limit: 1, Keys: []string{"run:x"}},
		{Tenant: "t1", Limit: 1},
	} {
		if _, err := bb.s.ClaimList(bb.ctx, p); !isInvalid(err) {
			t.Fatalf("ClaimList(%+v) = %v, want an InvalidError", p, err)
		}
	}
}

func testRunPrune(t *testing.T, bb *bundle) {
	// Old enough to prune, all written at T0.
	bb.finish(t, "done", store.RunCompleted, nil)
	bb.finish(t, "failed", store.RunFailed, nil)
	bb.finish(t, "unsettled", store.RunCancelled, nil)
	bb.finish(t, "waiting", store.RunInterrupted, nil)
	bb.finish(t, "parent-of-running", store.RunCompleted, nil)
	bb.finish(t, "child-running", store.RunRunning, func(r *store.Run) { r.ParentID = "parent-of-running" })
	bb.finish(t, "parent-running", store.RunRunning, nil)
	bb.finish(t, "child-of-running", store.RunCompleted, func(r *store.Run) { r.ParentID = "parent-running" })
	bb.finish(t, "claimed", store.RunCompleted, nil)
	bb.finish(t, "sess-old", store.RunCompleted, func(r *store.Run) { r.SessionID = "busy" })
	bb.finish(t, "sess-done-1", store.RunCompleted, func(r *store.Run) { r.SessionID = "idle" })
	bb.finish(t, "with-events", store.RunCompleted, nil)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "unsettled",
		Ledger: []store.LedgerWrite{{Entry: entry("t1", "unsettled", "c1", 0, store.LedgerUnknown)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "with-events",
		Ledger: []store.LedgerWrite{{Entry: entry("t1", "with-events", "c1", 0, store.LedgerCommitted)}},
		Events: []*store.EventRecord{{Type: "a"}, {Type: "b"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire1(bb, store.RunClaimKey("done"), "h:1:x", time.Minute); err != nil { // expires
		t.Fatal(err)
	}
	bb.clock.Advance(2 * time.Hour)
	cut := bb.clock.Now().Add(-time.Hour)
	if _, err := acquire1(bb, store.RunClaimKey("claimed"), "h:1:x", time.Hour); err != nil { // live now
		t.Fatal(err)
	}
	// Younger than the cut-off, in session "busy" (which keeps sess-old).
	bb.finish(t, "young", store.RunCompleted, func(r *store.Run) { r.SessionID = "busy" })

	prunable := []string{"done", "failed", "sess-done-1", "with-events"}
	dry, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 100, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedIDs(dry.RunIDs); !slices.Equal(got, prunable) || dry.More || dry.Events != 2 || dry.LedgerEntries != 1 {
		t.Fatalf("dry run = %+v (ids %v), want %v, 2 events, 1 ledger entry", dry, got, prunable)
	}
	if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "done"}); err != nil {
		t.Fatalf("a dry run removed a run: %v", err)
	}
	// After: a batch continues after the previous batch's last run.
	if dry.Last == nil || dry.Last.ID != dry.RunIDs[len(dry.RunIDs)-1] {
		t.Fatalf("dry run's Last = %+v, want the last of %v", dry.Last, dry.RunIDs)
	}
	first, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 1, DryRun: true})
	if err != nil || len(first.RunIDs) != 1 || !first.More {
		t.Fatalf("first batch of one: %+v %v", first, err)
	}
	rest, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 100, DryRun: true, After: first.Last})
	if err != nil || len(rest.RunIDs) != len(prunable)-1 || slices.Contains(rest.RunIDs, first.RunIDs[0]) {
		t.Fatalf("after %+v: %+v %v", first.Last, rest, err)
	}
	// Batches of two: More until the last.
	var removed []string
	var events, ledger int64
	for batch := 0; ; batch++ {
		res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.RunIDs) > 2 {
			t.Fatalf("batch of %d, limit 2", len(res.RunIDs))
		}
		removed = append(removed, res.RunIDs...)
		events += res.Events
		ledger += res.LedgerEntries
		if !res.More {
			break
		}
		if batch > 5 {
			t.Fatal("prune does not end")
		}
	}
	if got := sortedIDs(removed); !slices.Equal(got, prunable) || events != 2 || ledger != 1 {
		t.Fatalf("removed %v (%d events, %d ledger), want %v", got, events, ledger, prunable)
	}
	for _, id := range prunable {
		if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: id}); err == nil {
			t.Fatalf("pruned run %s is still there", id)
		}
	}
	if evs, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t1", RunID: "with-events"}); err != nil || len(evs) != 0 {
		t.Fatalf("events of a pruned run: %d %v", len(evs), err)
	}
	if l, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t1", RunID: "with-events"}); err != nil || len(l) != 0 {
		t.Fatalf("ledger of a pruned run: %d %v", len(l), err)
	}
	if _, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t1", Key: store.RunClaimKey("done")}); err == nil {
		t.Fatal("the claim of a pruned run is still there")
	}
	kept, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	wantKept := []string{"child-of-running", "child-running", "claimed", "parent-of-running", "parent-running", "sess-old", "unsettled", "waiting", "young"}
	if got := sortedIDs(ids(kept)); !slices.Equal(got, wantKept) {
		t.Fatalf("kept %v, want %v", got, wantKept)
	}
	// Sessions: the policy may include runs of sessions still in use.
	res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 100, Sessions: true})
	if err != nil || !slices.Equal(res.RunIDs, []string{"sess-old"}) {
		t.Fatalf("prune with sessions = %+v %v", res, err)
	}
	// Nothing more to prune: an empty batch, not an error.
	res, err = bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: cut, Limit: 100, Sessions: true})
	if err != nil || len(res.RunIDs) != 0 || res.More || res.RunIDs == nil {
		t.Fatalf("empty prune = %#v %v", res, err)
	}
	// Bad parameters are refused with a typed error.
	for _, p := range []*store.RunPruneParams{
		{Tenant: "t1", Limit: 1},
		{Tenant: "t1", FinishedBefore: cut},
		{Tenant: "t1", FinishedBefore: cut, Limit: store.MaxPruneBatch + 1},
		{FinishedBefore: cut, Limit: 1},
	} {
		if _, err := bb.s.RunPrune(bb.ctx, p); !isInvalid(err) {
			t.Fatalf("RunPrune(%+v) = %v, want an InvalidError", p, err)
		}
	}
}

func sortedIDs(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

func isInvalid(err error) bool {
	var ie *store.InvalidError
	return errors.As(err, &ie)
}

func acquire1(bb *bundle, key, holder string, ttl time.Duration) (*store.Claim, error) {
	return bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t1", Key: key, Holder: holder, TTL: ttl})
}
