package storetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// idleView is what a live inbox shows of the tenant's runs, as the store
// lists them: the interrupted and running runs that no live claim holds,
// with their status, wait kind and last write, and their counts.
func idleView(t *testing.T, bb *bundle, now time.Time) string {
	t.Helper()
	runs := pageAll(t, bb, store.RunListParams{Tenant: "t1", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now, Summary: true}, 100)
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "%s/%s/%s/%d,", r.ID, r.Status, r.WaitKind, r.UpdatedAt.UnixMicro())
	}
	counts, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%v", counts)
	return b.String()
}

// testWaitingStampRandom: random claims taken, renewed, released and
// expiring, runs created, written and pruned, one to three of them
// between two stamps; whenever what the inbox lists changed, the stamp
// changed.
//
// ACTOVIQ_STAMP_SEEDS=N runs N seeds (each on a fresh tenant state of its
// own bundle is not needed: later seeds go on from the state the earlier
// ones left), for a longer search than CI's one.
func testWaitingStampRandom(t *testing.T, bb *bundle) {
	seeds := 1
	if n, err := strconv.Atoi(os.Getenv("ACTOVIQ_STAMP_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := range seeds {
		testWaitingStampSteps(t, bb, uint64(7+seed), 150)
	}
}

func testWaitingStampSteps(t *testing.T, bb *bundle, seed uint64, steps int) {
	ws := bb.s.(store.WaitingStamper)
	rng := rand.New(rand.NewPCG(seed, seed))
	kinds := []string{"approval", "reconciliation"}
	statuses := []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted, store.RunCompleted}
	var ids []string
	stamp := func() string {
		t.Helper()
		s, err := ws.WaitingStamp(bb.ctx, "t1", bb.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	lastStamp, lastView := stamp(), idleView(t, bb, bb.clock.Now())
	var done []string
	for step := range steps {
		for range 1 + rng.IntN(3) {
			name := ""
			switch op := rng.IntN(10); {
			case op < 2 || len(ids) < 4:
				id := fmt.Sprintf("s%d-%04d", seed, step*4+len(done))
				r := newRun("t1", id)
				r.Status, r.WaitKind = statuses[rng.IntN(len(statuses))], kinds[rng.IntN(len(kinds))]
				p := &store.RunCreateParams{Run: r}
				if rng.IntN(3) == 0 {
					p.Holder, p.TTL = "h:1:x", time.Duration(10+rng.IntN(80))*time.Second
				}
				if _, err := bb.s.RunCreate(bb.ctx, p); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
				name = "create " + id + " " + string(r.Status)
			case op < 7:
				id := ids[rng.IntN(len(ids))]
				name = claimOp(t, bb, rng, "t1", id)
			case op < 8:
				bb.clock.Advance(time.Duration(rng.IntN(40)) * time.Second)
				name = "clock"
			case op < 9:
				id := ids[rng.IntN(len(ids))]
				r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: id})
				if err != nil {
					t.Fatal(err)
				}
				st := statuses[rng.IntN(len(statuses))]
				if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: id,
					Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: st, Checkpoint: r.Checkpoint, WaitKind: kinds[rng.IntN(2)]}}); err != nil {
					t.Fatal(err)
				}
				name = "write " + id + " " + string(st)
			default:
				res, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t1", FinishedBefore: bb.clock.Now(), Limit: 2})
				if err != nil {
					t.Fatal(err)
				}
				ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(res.RunIDs, id) })
				name = fmt.Sprintf("prune %v", res.RunIDs)
			}
			done = append(done, name)
			// Distinct instants: a waiting run's row written in the very
			// microsecond of the newest waiting run's last write, with a
			// smaller id, is an exception store.WaitingStamper names.
			bb.clock.Advance(time.Microsecond)
		}
		s, v := stamp(), idleView(t, bb, bb.clock.Now())
		if v != lastView && s == lastStamp {
			t.Fatalf("step %d (%v): the inbox changed (%s -> %s), the stamp did not: %s", step, done, lastView, v, s)
		}
		lastStamp, lastView, done = s, v, done[:0]
	}
}
