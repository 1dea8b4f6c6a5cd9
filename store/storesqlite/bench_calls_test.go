//go:build unix

package storesqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// BenchmarkCallWrites is the store's side of durable side-effect calls as
// the engine makes them, one op per call: the entry (prepared), started
// and committed, each a fenced RunWrite of one transition with its event,
// on a new call id each time (BenchmarkLedgerTransition moves one entry
// only). Besides ns/op it reports this process's CPU per call
// (cpu-µs/call: user and system, from getrusage), the part of a call that
// is not waiting for the disk.
func BenchmarkCallWrites(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	runID := fmt.Sprintf("calls-%d", time.Now().UnixNano())
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "bench", ID: runID, Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{"turn":1}`)}}); err != nil {
		b.Fatal(err)
	}
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "bench", Key: store.RunClaimKey(runID), Holder: "w", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}
	states := []store.LedgerState{store.LedgerPrepared, store.LedgerStarted, store.LedgerCommitted}
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("call-", i)
		e := store.LedgerEntry{Tenant: "bench", RunID: runID, CallID: id, Tool: "pay", Effect: "side-effect",
			IdempotencyKey: runID + ":" + id, ArgsDigest: "sha256:abc", Args: json.RawMessage(`{"amount":5,"currency":"EUR"}`),
			Holder: "w", Epoch: c.Epoch}
		var rev int64
		for _, st := range states {
			next := e
			next.State = st
			res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: runID, Fence: fence,
				Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: rev,
					Event: &store.EventRecord{Type: "tool." + string(st), ID: "ev", Data: json.RawMessage(`{"call_id":"` + id + `","tool":"pay"}`)}}}})
			if err != nil {
				b.Fatal(err)
			}
			rev = res.Ledger[0].Revision
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(b.N), "cpu-µs/call")
}

// cpuTime is this process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
