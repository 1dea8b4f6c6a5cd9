package storesqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// BenchmarkClaimLifecycle is what a run's claim costs besides its calls:
// a run created claimed (running), a write that interrupts it and
// releases the claim, the claim taken again (a resume), a heartbeat, and a
// last write that completes the run and releases the claim: five durable
// writes, each of which may move the held-claim counters. Alternate it
// with a binary of the version before to see what the counters cost.
func BenchmarkClaimLifecycle(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	n := 0
	tag := time.Now().UnixNano()
	for b.Loop() {
		n++
		id := fmt.Sprintf("cl-%d-%d", tag, n)
		r := &store.Run{Tenant: "t", ID: id, AgentID: "a", AgentDigest: "d", Status: store.RunRunning}
		if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: r, Holder: "h:1:x", TTL: time.Minute}); err != nil {
			b.Fatal(err)
		}
		f := &store.Fence{Key: store.RunClaimKey(id), Holder: "h:1:x", Epoch: store.CreatedClaimEpoch}
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: f, Release: true,
			Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, WaitKind: "approval"}})
		if err != nil {
			b.Fatal(err)
		}
		c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(id), Holder: "h:2:x", TTL: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		f = &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
		if _, err := s.ClaimRenew(ctx, &store.ClaimRenewParams{Tenant: "t", Fence: *f, TTL: time.Minute}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: f, Release: true,
			Run: &store.RunUpdate{ExpectedRevision: res.Run.Revision, Status: store.RunCompleted}}); err != nil {
			b.Fatal(err)
		}
	}
}
