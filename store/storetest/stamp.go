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
	if _, err := ws.WaitingStamp(bb.ctx, "", bb.clock.Now()); err == nil {
		t.Fatal("a stamp without a tenant")
	}
}
