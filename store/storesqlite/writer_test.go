package storesqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// goroutinesCreated is the process's count of goroutines started so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// A run write on the store's write connection starts no goroutine: no
// *sql.Tx watching its context, no sql.Rows watching the transaction's
// (writer.go); a write that fails (a conflict, a fence) rolls back and
// the next one writes. Each goroutine cost a write about a tenth of its
// CPU with the wake-ups it caused.
func TestRunWriteStartsNoGoroutine(t *testing.T) {
	if goroutinesCreated() == 0 {
		t.Skip("runtime/metrics has no /sched/goroutines-created")
	}
	s := open(t, filepath.Join(t.TempDir(), "w.db"), nil)
	ctx := context.Background()
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r"), Holder: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
	write := func(i int, rev int64, f *store.Fence) error {
		call := fmt.Sprint("c", i)
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: f, Ledger: []store.LedgerWrite{{
			Entry:            &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Tool: "charge", State: store.LedgerPrepared, Args: json.RawMessage(`{}`)},
			ExpectedRevision: rev, Event: &store.EventRecord{Type: "tool.prepared", Data: json.RawMessage(`{"call_id":"` + call + `"}`)}}}})
		return err
	}
	if err := write(0, 0, fence); err != nil { // the statements prepared
		t.Fatal(err)
	}
	const n = 50
	before := goroutinesCreated()
	for i := 1; i <= n; i++ {
		if err := write(i, 0, fence); err != nil {
			t.Fatal(err)
		}
	}
	if d := goroutinesCreated() - before; d > n/10 {
		t.Errorf("%d run writes started %d goroutines", n, d)
	}
	// With a context that can end (the engine's writes have a deadline),
	// none either: the wait for the write lock is writer.begin's, which
	// watches the context itself (the driver started a goroutine for
	// BEGIN IMMEDIATE on it: one per write, a quarter of a call's commit
	// CPU, BenchmarkCallCommits).
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	before = goroutinesCreated()
	for i := n + 100; i < 2*n+100; i++ {
		call := fmt.Sprint("d", i)
		if _, err := s.RunWrite(dctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Ledger: []store.LedgerWrite{
			{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Tool: "charge", State: store.LedgerPrepared, Args: json.RawMessage(`{}`)},
				Event: &store.EventRecord{Type: "tool.prepared"}},
			{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call + "b", Tool: "charge", State: store.LedgerPrepared, Args: json.RawMessage(`{}`)},
				Event: &store.EventRecord{Type: "tool.prepared"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if d := goroutinesCreated() - before; d > n/10 {
		t.Errorf("%d run writes of two statements with a deadline started %d goroutines", n, d)
	}
	// Failures roll back; the connection serves the next write.
	if err := write(1, 0, fence); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale write: %v, want a conflict", err)
	}
	if err := write(n+1, 0, &store.Fence{Key: fence.Key, Holder: "other", Epoch: fence.Epoch}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a fenced write: %v, want fenced", err)
	}
	if err := write(n+1, 0, fence); err != nil {
		t.Fatal(err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3*n+2 {
		t.Errorf("%d events stored, want %d", len(evs), 3*n+2)
	}
}

// The write lock held by another connection: a write waits for it (on
// SQLite's schedule, writer.begin) and is stored once it is given up
// within the busy timeout; a write whose context ends first gives up then,
// not at the busy timeout, and stores nothing; one with no deadline gives
// up at the busy timeout with a BusyError.
func TestBeginWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s := open(t, path, &storesqlite.Config{BusyTimeout: 3 * time.Second})
	bg := context.Background()
	create := func(ctx context.Context, id string) error {
		_, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		return err
	}
	if err := create(bg, "r0"); err != nil {
		t.Fatal(err)
	}
	conn, err := open(t, path, nil).DB().Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lock := func() {
		if _, err := conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
	}
	unlock := func() {
		if _, err := conn.ExecContext(bg, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
	lock()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	start := time.Now()
	err = create(ctx, "late")
	cancel()
	if took := time.Since(start); err == nil || !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Fatalf("a write whose deadline passed while it waited: %v after %v", err, took)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		unlock()
	}()
	ctx, cancel = context.WithTimeout(bg, 2*time.Second)
	start = time.Now()
	err = create(ctx, "waited")
	cancel()
	if took := time.Since(start); err != nil || took < 90*time.Millisecond {
		t.Fatalf("a write that waited for the lock: %v after %v", err, took)
	}
	short := open(t, path, &storesqlite.Config{BusyTimeout: 60 * time.Millisecond})
	lock()
	start = time.Now()
	_, err = short.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "busy", Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
	took := time.Since(start)
	unlock()
	if !errors.Is(err, store.ErrBusy) || took < 50*time.Millisecond || took > 2*time.Second {
		t.Fatalf("a write past the busy timeout: %v after %v", err, took)
	}
	for id, want := range map[string]bool{"late": false, "waited": true, "busy": false} {
		if _, err := s.RunGet(bg, &store.RunGetParams{Tenant: "t", ID: id}); (err == nil) != want {
			t.Errorf("%s: stored %v, want %v", id, err == nil, want)
		}
	}
}
