//go:build unix

package storesqlite_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// BenchmarkCallCommits is the commit the engine makes per side-effect
// call in a turn of several (drive_carry.go, drive_fold.go): one fenced
// RunWrite holding the call before's committed record and this call's
// started record, each with its event, on a context with a deadline as
// the engine's writes have. Runs of ten calls with random 32-hex ids as
// the engine gives them: the model's response is one write (its event,
// the calls prepared in one events row, the first call started in a row
// of its own), then a commit per call. Each run's creation, claim and
// response write are made with the timer stopped and are not in
// cpu-µs/op (getrusage, user and system: the part of a commit that is
// not waiting for the disk).
func BenchmarkCallCommits(b *testing.B) { benchCalls(b, false) }

// BenchmarkResponseCommits is the model response's write of the same
// runs, one op per run: the response's event, nine calls prepared in one
// events row and the first started in a row of its own, fenced (each
// run's creation and claim are made with the timer stopped). Its CPU is a
// tenth of each call's in a turn of ten.
func BenchmarkResponseCommits(b *testing.B) { benchCalls(b, true) }

func benchCalls(b *testing.B, response bool) {
	s := benchStore(b)
	bg := context.Background()
	const perRun = 10
	var (
		runID string
		fence *store.Fence
		epoch int64
		call  int
		cur   *store.LedgerEntry
		revs  map[string]int64
		cpu   time.Duration
		user  time.Duration
	)
	entry := func(id string, st store.LedgerState) *store.LedgerEntry {
		return &store.LedgerEntry{Tenant: "bench", RunID: runID, CallID: id, Tool: "pay", Effect: "side-effect", State: st,
			IdempotencyKey: runID + ":" + id, ArgsDigest: "sha256:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4",
			Args: json.RawMessage(`{"amount":5,"currency":"EUR"}`), Holder: "worker-1/8f434346648f6b96df89dda901c5176b10a6d839", Epoch: epoch}
	}
	event := func(id string, st store.LedgerState) *store.EventRecord {
		return &store.EventRecord{Type: "tool." + string(st), ID: "ev-" + runID[:8] + id, TraceID: runID, SpanID: runID[:16],
			Data: json.RawMessage(`{"call_id":"` + id + `","tool":"pay","effect":"side-effect","attempt":1,"args_digest":"sha256:8f434346648f6b96df89dda901c5176b"}`)}
	}
	respond := func(ctx context.Context) (*store.RunWriteResult, error) {
		p := &store.RunWriteParams{Tenant: "bench", RunID: runID, Fence: fence,
			Events: []*store.EventRecord{{Type: "model.response", ID: "ev-" + runID[:8], Data: json.RawMessage(`{"calls":10}`)},
				event("c0", store.LedgerPrepared)}}
		for i := 1; i < perRun; i++ {
			id := fmt.Sprint("c", i)
			p.Ledger = append(p.Ledger, store.LedgerWrite{Entry: entry(id, store.LedgerPrepared), Event: event(id, store.LedgerPrepared)})
		}
		p.Ledger = append(p.Ledger, store.LedgerWrite{Entry: entry("c0", store.LedgerStarted), Event: event("c0", store.LedgerStarted)})
		return s.RunWrite(ctx, p)
	}
	newRun := func() {
		var raw [16]byte
		rand.Read(raw[:])
		runID = hex.EncodeToString(raw[:])
		if _, err := s.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "bench", ID: runID, Status: store.RunRunning,
			Checkpoint: json.RawMessage(`{"turn":1}`)}}); err != nil {
			b.Fatal(err)
		}
		c, err := s.ClaimAcquire(bg, &store.ClaimAcquireParams{Tenant: "bench", Key: store.RunClaimKey(runID), Holder: "w", TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		fence, epoch, call = &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}, c.Epoch, 0
		if response {
			return
		}
		res, err := respond(bg)
		if err != nil {
			b.Fatal(err)
		}
		revs = map[string]int64{}
		for _, e := range res.Ledger {
			revs[e.CallID] = e.Revision
		}
		cur = res.Ledger[len(res.Ledger)-1]
	}
	b.ReportAllocs()
	if response {
		for b.Loop() {
			b.StopTimer()
			newRun()
			b.StartTimer()
			ctx, cancel := context.WithTimeout(bg, time.Minute)
			c0, u0 := cpuTime(), userTime()
			_, err := respond(ctx)
			cpu += cpuTime() - c0
			user += userTime() - u0
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
		b.ReportMetric(float64(user)/1e3/float64(b.N), "user-µs/op")
		return
	}
	for b.Loop() {
		if call%perRun == perRun-1 || cur == nil {
			b.StopTimer()
			newRun()
			b.StartTimer()
		}
		done := *cur
		done.State, done.Result = store.LedgerCommitted, json.RawMessage(`{"ok":true,"id":"pay_123"}`)
		next := fmt.Sprint("c", call+1)
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		c0, u0 := cpuTime(), userTime()
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: runID, Fence: fence, Ledger: []store.LedgerWrite{
			{Entry: &done, ExpectedRevision: cur.Revision, Event: event(cur.CallID, store.LedgerCommitted)},
			{Entry: entry(next, store.LedgerStarted), ExpectedRevision: revs[next], Event: event(next, store.LedgerStarted)}}})
		cpu += cpuTime() - c0
		user += userTime() - u0
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		cur = res.Ledger[1]
		call++
	}
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(user)/1e3/float64(b.N), "user-µs/op")
}

// userTime is this process's user CPU time so far: without the kernel's
// part (the WAL's writes and fsyncs), which moves with the machine's I/O.
func userTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano())
}
