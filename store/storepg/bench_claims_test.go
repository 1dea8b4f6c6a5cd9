package storepg_test

import (
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
// with a binary of the version before to see what the counters cost
// (time, and on PostgreSQL the WAL bytes written per lifecycle).
func BenchmarkClaimLifecycle(b *testing.B) {
	s := benchStore.get(b)
	n := 0
	tag := time.Now().UnixNano()
	// WAL bytes per lifecycle, from the server's WAL position (on a
	// cluster of one's own, with nothing else writing).
	var lsn0 string
	if err := s.Pool().QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn0); err != nil {
		b.Fatal(err)
	}
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
	var wal float64
	if err := s.Pool().QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8`, lsn0).Scan(&wal); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(wal/float64(n), "wal-B/op")
}
