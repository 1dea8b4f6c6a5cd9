package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// The counts of active runs (issue 21): a backend may answer a count of
// queued, running and interrupted runs from counters it keeps on every
// write (store.Counted). Whatever it does, the counts must stay equal to
// a full count of the runs, under creations, status and kind changes,
// claims, writes that fail and roll back, prunes, and concurrent writers.

var activeStatuses = []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted}

// fullCount counts the tenant's runs in statuses by reading every one of
// them (a list, not a count: the reference the counts are checked
// against), with the claim filter cf at time now.
func fullCount(t *testing.T, bb *bundle, s store.Store, tenant string, statuses []store.RunStatus, cf store.ClaimFilter, now time.Time) []store.RunCount {
	t.Helper()
	runs := pageAll(t, bb, store.RunListParams{Tenant: tenant, Statuses: statuses, Claim: cf, Now: now, Summary: true}, 100)
	n := map[[2]string]int64{}
	for _, r := range runs {
		n[[2]string{string(r.Status), r.WaitKind}]++
	}
	out := []store.RunCount{}
	for k, v := range n {
		out = append(out, store.RunCount{Status: store.RunStatus(k[0]), WaitKind: k[1], N: v})
	}
	store.SortCounts(out)
	return out
}

// checkCounts compares every counted form of RunCount with a full count,
// at the clock's time and, for the idle-claim filter, 45 seconds before it
// (claims released since then were live at that time) and 45 after it
// (claims held now have expired by then).
func checkCounts(t *testing.T, bb *bundle, s store.Store, step string) {
	t.Helper()
	for _, tenant := range []string{"t1", "t2"} {
		for _, sts := range [][]store.RunStatus{activeStatuses, {store.RunInterrupted, store.RunRunning}, {store.RunQueued}} {
			for _, cf := range []store.ClaimFilter{{}, {State: store.ClaimIdle}} {
				for _, d := range []time.Duration{0, -45 * time.Second, 45 * time.Second} {
					if d != 0 && cf.State == store.ClaimAny {
						continue
					}
					now := bb.clock.Now().Add(d)
					p := &store.RunCountParams{Tenant: tenant, Statuses: sts, Claim: cf, Now: now}
					if !store.Counted(p) {
						t.Fatalf("%+v is not a counted count", p)
					}
					got, err := s.RunCount(bb.ctx, p)
					if err != nil {
						t.Fatalf("%s: RunCount: %v", step, err)
					}
					if want := fullCount(t, bb, s, tenant, sts, cf, now); !slices.Equal(got, want) {
						t.Fatalf("%s: %s %v claim %q at %v: counts %+v, full count %+v", step, tenant, sts, cf.State, d, got, want)
					}
				}
			}
		}
	}
}

// claimOp takes, renews or releases the claim of run id (in
// tenant), as a drive, a resume or an operator's process would: the
// held-claim counters a backend may keep must follow every one of them.
func claimOp(t *testing.T, bb *bundle, rng *rand.Rand, tenant, id string) string {
	t.Helper()
	key := store.RunClaimKey(id)
	c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: tenant, Key: key})
	if errors.Is(err, store.ErrNotFound) {
		c = nil
	} else if err != nil {
		t.Fatal(err)
	}
	holder := []string{"h:1:x", "h:2:x", "other:3:y"}[rng.IntN(3)]
	switch op := rng.IntN(5); {
	case c == nil || op == 0: // take (or take over, or renew by taking again)
		_, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: tenant, Key: key, Holder: holder,
			TTL: time.Duration(10+rng.IntN(80)) * time.Second})
		var held *store.ClaimHeldError
		if err != nil && !errors.As(err, &held) {
			t.Fatal(err)
		}
		return "acquire " + id
	case op == 1: // heartbeat (also of an expired claim, which the fence allows; a released one is fenced out, changing nothing)
		if _, err := bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: tenant, Fence: store.Fence{Key: key, Holder: c.Holder, Epoch: c.Epoch},
			TTL: time.Duration(10+rng.IntN(80)) * time.Second}); err != nil && !releasedFence(err) {
			t.Fatal(err)
		}
		return "renew " + id
	case op == 2 || op == 3: // release (a run's claim row stays until a prune removes it with the run)
		if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: tenant, Fence: store.Fence{Key: key, Holder: c.Holder, Epoch: c.Epoch}}); err != nil {
			t.Fatal(err)
		}
		return "release " + id
	default: // a write under the claim that moves the run and releases the claim
		r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: tenant, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		st := []store.RunStatus{store.RunInterrupted, store.RunCompleted, store.RunRunning}[rng.IntN(3)]
		if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: tenant, RunID: id,
			Fence: &store.Fence{Key: key, Holder: c.Holder, Epoch: c.Epoch}, Release: rng.IntN(3) > 0,
			Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: st, Checkpoint: r.Checkpoint, WaitKind: "approval"}}); err != nil && !releasedFence(err) {
			t.Fatal(err)
		}
		return "write under the claim of " + id + " to " + string(st)
	}
}

// releasedFence reports a call fenced out because its holder released the
// claim (store.FencedError.Released).
func releasedFence(err error) bool {
	var fe *store.FencedError
	return errors.As(err, &fe) && fe.Released
}

func testRunCounters(t *testing.T, bb *bundle) {
	rng := rand.New(rand.NewPCG(21, 21))
	statuses := []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted, store.RunCompleted,
		store.RunFailed, store.RunCancelled}
	kinds := []string{"approval", "reconciliation", "provider", ""}
	var ids []string
	tenantOf := map[string]string{}
	get := func(id string) *store.Run {
		r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: tenantOf[id], ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for step := range 400 {
		name := ""
		switch op := rng.IntN(13); {
		case op < 3 || len(ids) < 5: // a new run, in any status, claimed once in four
			id := fmt.Sprintf("c%04d", step)
			tenant := []string{"t1", "t2"}[rng.IntN(2)]
			r := newRun(tenant, id)
			r.Status, r.WaitKind = statuses[rng.IntN(len(statuses))], kinds[rng.IntN(len(kinds))]
			p := &store.RunCreateParams{Run: r}
			name = "create " + id + " " + string(r.Status)
			switch rng.IntN(5) {
			case 0:
				p.Holder, p.TTL = "h:1:x", time.Minute
			case 1: // its claim taken before the run exists: the run's creation counts it
				if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: tenant, Key: store.RunClaimKey(id),
					Holder: "h:2:x", TTL: time.Duration(10+rng.IntN(80)) * time.Second}); err != nil {
					t.Fatal(err)
				}
				name += " over a claim taken first"
			}
			if _, err := bb.s.RunCreate(bb.ctx, p); err != nil {
				t.Fatal(err)
			}
			ids, tenantOf[id] = append(ids, id), tenant
		case op >= 10: // a claim taken, renewed, released or removed
			id := ids[rng.IntN(len(ids))]
			name = claimOp(t, bb, rng, tenantOf[id], id)
		case op < 6: // a status or kind change
			id := ids[rng.IntN(len(ids))]
			r := get(id)
			st, k := statuses[rng.IntN(len(statuses))], kinds[rng.IntN(len(kinds))]
			if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: r.Tenant, RunID: id,
				Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: st, Checkpoint: r.Checkpoint, WaitKind: k}}); err != nil {
				t.Fatal(err)
			}
			name = fmt.Sprintf("write %s %s->%s/%s", id, r.Status, st, k)
		case op < 7: // a write whose run update applies, then fails: all of it rolls back
			id := ids[rng.IntN(len(ids))]
			r := get(id)
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: r.Tenant, RunID: id,
				Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: statuses[rng.IntN(len(statuses))],
					Checkpoint: r.Checkpoint, WaitKind: "approval"},
				Ledger: []store.LedgerWrite{{Entry: entry(r.Tenant, id, "never", 0, store.LedgerPrepared), ExpectedRevision: 9}}})
			if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("failing write: %v", err)
			}
			name = "rolled back " + id
		case op < 8: // a claim: the oldest queued run becomes running
			tenant := []string{"t1", "t2"}[rng.IntN(2)]
			_, _, err := bb.s.RunClaimNext(bb.ctx, &store.RunClaimNextParams{Tenant: tenant, Holder: "h:1:x", TTL: time.Minute})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			name = "claim"
		case op < 9: // time passes: claims expire
			bb.clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
			name = "clock"
		default: // a prune of what finished before now
			for _, tenant := range []string{"t1", "t2"} {
				res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: tenant, FinishedBefore: bb.clock.Now(), Limit: 3})
				if err != nil {
					t.Fatal(err)
				}
				ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(res.RunIDs, id) })
			}
			name = "prune"
		}
		if step%10 == 0 || step == 399 {
			checkCounts(t, bb, bb.s, fmt.Sprintf("step %d (%s)", step, name))
		}
	}

	// Concurrent writers on two handles flip statuses back and forth: no
	// write fails for the counters' sake (no deadlock), and the counts
	// still agree.
	handles := []store.Store{bb.s, bb.open(t, bb.clock.Now)}
	var flips []string
	for i := range 16 {
		id := fmt.Sprintf("flip%02d", i)
		r := newRun("t1", id)
		r.Status, r.WaitKind = store.RunInterrupted, "approval"
		mustCreate(t, bb, r)
		flips, tenantOf[id] = append(flips, id), "t1"
		if i%2 == 0 { // half of them move between groups with their claim held
			if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t1", Key: store.RunClaimKey(id),
				Holder: "h:9:x", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := handles[w%2]
			for i := range 25 {
				id := flips[(w*2+i)%len(flips)]
				for {
					r, err := s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: id})
					if err != nil {
						errs <- err
						return
					}
					st, k := store.RunRunning, ""
					if r.Status == store.RunRunning {
						st, k = store.RunInterrupted, []string{"approval", "provider"}[i%2]
					}
					_, err = s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: id,
						Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: st, Checkpoint: json.RawMessage(`{}`), WaitKind: k}})
					if errors.Is(err, store.ErrConflict) {
						continue // another writer changed it first: read again
					}
					if err != nil {
						errs <- fmt.Errorf("flip %s: %w", id, err)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCounts(t, bb, bb.s, "after concurrent writers")
	// A store opened afresh reads the same counts.
	checkCounts(t, bb, bb.open(t, bb.clock.Now), "new handle")
}
