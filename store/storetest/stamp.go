package storetest

import (
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// testWaitingStamp: the stamp of what waits for a person changes with
// every change a live inbox must show, and stays equal otherwise.
func testWaitingStamp(t *testing.T, bb *bundle) {
	ws, ok := bb.s.(store.WaitingStamper)
	if !ok {
		t.Fatalf("%T does not implement store.WaitingStamper", bb.s)
	}
	stamp := func() string {
		t.Helper()
		s, err := ws.WaitingStamp(bb.ctx, "t1", bb.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	last := stamp()
	step := func(what string, changes bool) {
		t.Helper()
		s := stamp()
		if changed := s != last; changed != changes {
			t.Fatalf("%s: stamp %q -> %q, want changed=%v", what, last, s, changes)
		}
		last = s
	}
	step("nothing", false)
	bb.finish(t, "done", store.RunCompleted, nil)
	step("a finished run", false)
	mustCreate(t, bb, newRun("t2", "elsewhere"))
	step("another tenant's run", false)
	r := newRun("t1", "waits")
	r.Status, r.WaitKind = store.RunInterrupted, "approval"
	mustCreate(t, bb, r)
	step("an interrupted run", true)
	bb.clock.Advance(time.Second)
	step("time, no claim", false)
	got, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "waits"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "waits",
		Run: &store.RunUpdate{ExpectedRevision: got.Revision, Status: store.RunInterrupted, Checkpoint: got.Checkpoint, WaitKind: "approval"}})
	if err != nil {
		t.Fatal(err)
	}
	step("a waiting run written", true)
	if _, err := acquire1(bb, store.RunClaimKey("waits"), "h:1:x", time.Minute); err != nil {
		t.Fatal(err)
	}
	step("a claim taken", true)
	bb.clock.Advance(30 * time.Second)
	step("a claim still live", false)
	bb.clock.Advance(31 * time.Second)
	step("a claim expired", true)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t1", RunID: "waits",
		Run: &store.RunUpdate{ExpectedRevision: res.Run.Revision, Status: store.RunCompleted, Checkpoint: got.Checkpoint}}); err != nil {
		t.Fatal(err)
	}
	step("a waiting run finished", true)

	// Claims among others: one of a long lease stays live throughout, so
	// the latest expiry never moves; a short one stays the earliest.
	for _, id := range []string{"long", "short", "mid", "late"} {
		mustCreate(t, bb, newRun("t1", id))
	}
	step("running runs", true)
	if _, err := acquire1(bb, store.RunClaimKey("long"), "h:2:x", time.Hour); err != nil {
		t.Fatal(err)
	}
	step("a long claim taken", true)
	if _, err := acquire1(bb, store.RunClaimKey("short"), "h:3:x", time.Minute); err != nil {
		t.Fatal(err)
	}
	step("a short claim taken under the long one", true)
	mid, err := acquire1(bb, store.RunClaimKey("mid"), "h:4:x", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	step("a claim taken between the two", true)
	bb.clock.Advance(time.Second)
	step("time, every claim live", false)
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: store.Fence{Key: mid.Key, Holder: mid.Holder,
		Epoch: mid.Epoch}}); err != nil {
		t.Fatal(err)
	}
	step("a claim between the earliest and the latest released", true)
	if _, err := acquire1(bb, store.RunClaimKey("late"), "h:5:x", 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	step("another claim taken between", true)
	bb.clock.Advance(2 * time.Minute)
	step("the earliest live claim expired", true)
	bb.clock.Advance(time.Second)
	step("time, the expired claim still held", false)
	if _, err := acquire1(bb, store.RunClaimKey("short"), "h:6:x", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	step("an expired claim taken over between the earliest and the latest", true)
	bb.clock.Advance(time.Second)
	step("time again", false)

	// A Decide on a waiting run writes its ledger, not its row, under the
	// run's claim, taken and released: the inbox shows the decision, and
	// the stamp must move although every count and expiry is as before
	// (longer claims stay live). The same for one claim released and
	// another taken in the same group. Both kept the stamp equal before
	// the latest release was part of it (and before fb05264).
	for _, id := range []string{"decided", "pa", "pb"} {
		r := newRun("t1", id)
		r.Status, r.WaitKind = store.RunInterrupted, "approval"
		mustCreate(t, bb, r)
	}
	pa, err := acquire1(bb, store.RunClaimKey("pa"), "h:7:x", 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	step("waiting runs, one claimed", true)
	bb.clock.Advance(time.Second)
	step("time, with them", false)
	dc, err := acquire1(bb, store.RunClaimKey("decided"), "h:8:x", 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: store.Fence{Key: dc.Key, Holder: dc.Holder,
		Epoch: dc.Epoch}}); err != nil {
		t.Fatal(err)
	}
	step("a waiting run's claim taken and released between two stamps (a Decide)", true)
	bb.clock.Advance(time.Second)
	step("time after the Decide", false)
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: store.Fence{Key: pa.Key, Holder: pa.Holder,
		Epoch: pa.Epoch}}); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire1(bb, store.RunClaimKey("pb"), "h:9:x", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	step("a waiting run's claim released and another's taken between two stamps", true)
	bb.clock.Advance(time.Second)
	step("time after the swap", false)
	if _, err := ws.WaitingStamp(bb.ctx, "", bb.clock.Now()); err == nil {
		t.Fatal("a stamp without a tenant")
	}
}
