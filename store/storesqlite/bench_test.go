package storesqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// The benchmarks share one database file, opened with the package's own
// DSN (WAL, synchronous=FULL, fsync on every commit), so that
// BenchmarkLedgerTransition and BenchmarkCommitFloor run against the same
// file and pragmas and their ratio is meaningful:
//
//	go test -run '^$' -bench . -count 3 ./store/storesqlite

var (
	benchDir  string
	benchS    *storesqlite.Store
	benchOnce sync.Once
	benchErr  error
	prefilled sync.Map // session id -> struct{}
)

// benchStore returns the one Store all benchmarks share, kept open for the
// whole process (TestMain closes it) so that every benchmark meets the
// file in the same steady state: a long-running process whose WAL file has
// reached its working size and is rewritten in place between checkpoints.
// Opening a fresh store per benchmark instead makes whichever runs first
// pay for growing the WAL file (each growth is a metadata fsync too).
func benchStore(b *testing.B) *storesqlite.Store {
	b.Helper()
	benchOnce.Do(func() {
		if benchDir, benchErr = os.MkdirTemp("", "storesqlite-bench"); benchErr != nil {
			return
		}
		if benchS, benchErr = storesqlite.Open(filepath.Join(benchDir, "bench.db"), nil); benchErr != nil {
			return
		}
		db := benchS.DB()
		if _, benchErr = db.Exec(`CREATE TABLE IF NOT EXISTS bench_floor (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
			INSERT OR IGNORE INTO bench_floor (id, n) VALUES (1, 0)`); benchErr != nil {
			return
		}
		// Warm up past one automatic checkpoint (1000 WAL pages).
		for range 1200 {
			if _, benchErr = db.Exec(`UPDATE bench_floor SET n = n + 1 WHERE id = 1`); benchErr != nil {
				return
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchS
}

func closeBenchStore() {
	if benchS != nil {
		benchS.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
}

// BenchmarkLedgerTransition is one fenced RunWrite that CAS-updates one
// ledger entry: the write the engine makes before and after every tool call.
func BenchmarkLedgerTransition(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	runID := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "bench", ID: runID, Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{"turn":1}`)}}); err != nil {
		b.Fatal(err)
	}
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "bench", Key: store.RunClaimKey(runID), Holder: "w", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}
	e := &store.LedgerEntry{Tenant: "bench", RunID: runID, CallID: "call-1", Tool: "pay", Effect: "side-effect",
		State: store.LedgerPrepared, IdempotencyKey: runID + ":call-1", ArgsDigest: "sha256:abc",
		Args: json.RawMessage(`{"amount":5,"currency":"EUR"}`), Holder: "w", Epoch: c.Epoch}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: runID, Fence: fence, Ledger: []store.LedgerWrite{{Entry: e}}})
	if err != nil {
		b.Fatal(err)
	}
	cur := res.Ledger[0]
	states := []store.LedgerState{store.LedgerStarted, store.LedgerCommitted}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		next := *cur
		next.State = states[i%2]
		next.Attempt++
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: runID, Fence: fence,
			Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: cur.Revision,
				Event: &store.EventRecord{Type: "tool.started", ID: "ev", Data: json.RawMessage(`{"call_id":"call-1","tool":"pay","effect":"side-effect"}`)}}}})
		if err != nil {
			b.Fatal(err)
		}
		cur = res.Ledger[0]
	}
}

// BenchmarkCommitFloor is the cheapest durable write on the same file:
// one UPDATE of a one-row table in autocommit (no *sql.Tx: database/sql
// starts a goroutine per transaction, which the store's writes do not pay,
// writer.go).
func BenchmarkCommitFloor(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	db := s.DB()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := db.ExecContext(ctx, `UPDATE bench_floor SET n = n + 1 WHERE id = 1`); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
}

var sessionSizes = []struct {
	name string
	n    int
}{{"items=10k", 10_000}, {"items=100k", 100_000}}

// prefill gives session id n one-item entries, once per benchmark process.
func prefill(b *testing.B, s *storesqlite.Store, id string, n int) int64 {
	b.Helper()
	ctx := context.Background()
	if _, ok := prefilled.Load(id); !ok {
		const batch = 1000
		var rev int64
		items := make([]json.RawMessage, batch)
		for rev < int64(n) {
			for j := range items {
				items[j] = json.RawMessage(fmt.Sprintf(`{"role":"user","content":"message %d"}`, rev+int64(j)))
			}
			var err error
			if rev, err = s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "bench", SessionID: id, ExpectedRevision: rev, Items: items}); err != nil {
				b.Fatal(err)
			}
		}
		prefilled.Store(id, struct{}{})
	}
	st, err := s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "bench", SessionID: id})
	if err != nil {
		b.Fatal(err)
	}
	return st.Revision
}

// BenchmarkSessionAppend appends one item to a session that already holds
// 10k or 100k items: the cost should not depend on the journal's length.
func BenchmarkSessionAppend(b *testing.B) {
	for _, size := range sessionSizes {
		b.Run(size.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			id := "append-" + size.name
			rev := prefill(b, s, id, size.n)
			item := []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"ok"}`)}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var err error
				if rev, err = s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "bench", SessionID: id, ExpectedRevision: rev, Items: item}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionLoad loads a session of 10k or 100k items with no
// snapshot (the worst case; snapshots bound it in practice).
func BenchmarkSessionLoad(b *testing.B) {
	for _, size := range sessionSizes {
		b.Run(size.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			id := "load-" + size.name
			prefill(b, s, id, size.n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				st, err := s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "bench", SessionID: id})
				if err != nil {
					b.Fatal(err)
				}
				if len(st.Entries) != size.n {
					b.Fatalf("%d entries", len(st.Entries))
				}
			}
		})
	}
}
