package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

func claimNext(t *testing.T, bb *bundle, p *store.RunClaimNextParams) (*store.Run, *store.Claim) {
	t.Helper()
	if p.Tenant == "" {
		p.Tenant = "t"
	}
	if p.TTL == 0 {
		p.TTL = time.Minute
	}
	r, c, err := bb.s.RunClaimNext(bb.ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		t.Fatalf("RunClaimNext %+v: %v", p, err)
	}
	return r, c
}

func testRunClaimNextAgents(t *testing.T, bb *bundle) {
	for _, a := range []struct{ id, agent string }{{"r-a", "alpha"}, {"r-b", "beta"}} {
		r := newRun("t", a.id)
		r.AgentID, r.Status = a.agent, store.RunQueued
		mustCreate(t, bb, r)
		bb.clock.Advance(time.Millisecond)
	}
	if r, _ := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w", AgentIDs: []string{"gamma"}}); r != nil {
		t.Fatalf("a worker without the agent claimed %s (agent %s)", r.ID, r.AgentID)
	}
	r, _ := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w", AgentIDs: []string{"gamma", "beta"}})
	if r == nil || r.ID != "r-b" {
		t.Fatalf("claim for beta got %+v, want r-b (the older r-a is alpha's)", r)
	}
	r, _ = claimNext(t, bb, &store.RunClaimNextParams{Holder: "w"})
	if r == nil || r.ID != "r-a" {
		t.Fatalf("claim for any agent got %+v, want r-a", r)
	}
	_, _, err := bb.s.RunClaimNext(bb.ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "w", TTL: time.Minute, AgentIDs: []string{""}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty agent id: %v, want ErrInvalid", err)
	}
}

// testRunClaimNextStale: with Stale, a running run whose holder is gone is
// claimable with a new epoch; a live claim, a fresh unclaimed run and
// runs in other statuses never are.
func testRunClaimNextStale(t *testing.T, bb *bundle) {
	const ttl = time.Minute
	// expired: running, claimed, and the claim runs out.
	mustCreate(t, bb, newRun("t", "expired"))
	old, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("expired"), Holder: "dead", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(time.Millisecond)
	// released: running, its holder gave the claim up (a drained worker).
	mustCreate(t, bb, newRun("t", "released"))
	rel, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("released"), Holder: "gone", TTL: 10 * ttl})
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: store.Fence{Key: rel.Key, Holder: rel.Holder, Epoch: rel.Epoch}}); err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(time.Millisecond)
	// unclaimed: running, created and never claimed.
	mustCreate(t, bb, newRun("t", "unclaimed"))
	bb.clock.Advance(time.Millisecond)
	// live: running under a claim that outlives the test.
	mustCreate(t, bb, newRun("t", "live"))
	if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("live"), Holder: "alive", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []store.RunStatus{store.RunInterrupted, store.RunCompleted, store.RunFailed, store.RunCancelled} {
		r := newRun("t", "st-"+string(st))
		r.Status = st
		mustCreate(t, bb, r)
	}

	if r, _ := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w", TTL: ttl}); r != nil {
		t.Fatalf("without Stale, claimed running run %s", r.ID)
	}
	// The released claim is stale at once; the unclaimed run is too young.
	r, c := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w1", TTL: 10 * ttl, Stale: true})
	if r == nil || r.ID != "released" || r.Status != store.RunRunning || c.Epoch != rel.Epoch+1 || c.Holder != "w1" {
		t.Fatalf("first stale claim = %+v %+v, want released at epoch %d", r, c, rel.Epoch+1)
	}
	if r, _ := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w1", TTL: ttl, Stale: true}); r != nil {
		t.Fatalf("claimed %s while every stale run's holder could still be alive", r.ID)
	}
	bb.clock.Advance(ttl)
	r, c = claimNext(t, bb, &store.RunClaimNextParams{Holder: "w2", TTL: ttl, Stale: true})
	if r == nil || r.ID != "expired" || c.Epoch != old.Epoch+1 {
		t.Fatalf("after the TTL: %+v %+v, want expired at epoch %d", r, c, old.Epoch+1)
	}
	// The dead holder's fence no longer writes.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "expired",
		Fence: &store.Fence{Key: old.Key, Holder: old.Holder, Epoch: old.Epoch},
		Run:   &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunCompleted, Checkpoint: r.Checkpoint}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("write by the dead holder after a stale claim: %v, want ErrFenced", err)
	}
	r, c = claimNext(t, bb, &store.RunClaimNextParams{Holder: "w3", TTL: ttl, Stale: true})
	if r == nil || r.ID != "unclaimed" || c.Epoch != 1 {
		t.Fatalf("third stale claim = %+v %+v, want unclaimed at epoch 1", r, c)
	}
	if r, _ := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w4", TTL: ttl, Stale: true}); r != nil {
		t.Fatalf("claimed %s (status %s): only queued and stale running runs are claimable", r.ID, r.Status)
	}
}

// testQueueWatch: a store that offers QueueWatch wakes a watcher when a
// run is created queued or written back to queued, and not for others.
func testQueueWatch(t *testing.T, bb *bundle) {
	qn, ok := bb.s.(store.QueueNotifier)
	if !ok {
		t.Skip("the backend has no QueueNotifier: workers poll")
	}
	other := bb.open(t, bb.clock.Now) // a second handle: another process
	watch := func(tenant string) <-chan struct{} {
		ch, err := qn.QueueWatch(bb.ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up after %s", what)
		}
	}
	ch := watch("t")
	otherTenant := watch("u")
	if _, err := other.RunCreate(bb.ctx, &store.RunCreateParams{Run: func() *store.Run {
		r := newRun("t", "q1")
		r.Status = store.RunQueued
		return r
	}()}); err != nil {
		t.Fatal(err)
	}
	wait(ch, "a queued run was created")
	r, c := claimNext(t, bb, &store.RunClaimNextParams{Holder: "w"})
	if r == nil {
		t.Fatal("the queued run is not claimable")
	}
	ch = watch("t")
	if _, err := other.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: r.ID,
		Fence: &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch},
		Run:   &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunQueued, Checkpoint: r.Checkpoint}}); err != nil {
		t.Fatal(err)
	}
	wait(ch, "a run was written back to queued")
	select {
	case <-otherTenant:
		t.Fatal("tenant u was woken by tenant t's runs")
	default:
	}
}
