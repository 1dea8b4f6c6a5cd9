package storepg_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// Run these against a server with fsync on (scripts/pg start without
// PG_FAST): they measure durable commits. BenchmarkLedgerTransition and
// BenchmarkCommitFloor use the same pool, so their ratio in one run is the
// store's overhead over the cheapest durable write transaction.

// benchStore is the one store (one pool, one schema) that
// BenchmarkCommitFloor and BenchmarkLedgerTransition share; TestMain
// closes it and drops its schema.
var benchStore sharedStore

type sharedStore struct {
	once   sync.Once
	s      *storepg.Store
	schema string
	err    error
}

func (ss *sharedStore) get(b *testing.B) *storepg.Store {
	url := testURL(b)
	ss.once.Do(func() {
		r := make([]byte, 8)
		_, _ = rand.Read(r)
		ss.schema = "bench_" + hex.EncodeToString(r)
		ss.s, ss.err = storepg.Open(ctx, url, &storepg.Config{Schema: ss.schema, MaxConns: 4})
	})
	if ss.err != nil {
		b.Fatal(ss.err)
	}
	return ss.s
}

func (ss *sharedStore) close() {
	if ss.s == nil {
		return
	}
	_, _ = ss.s.Pool().Exec(ctx, "DROP SCHEMA "+pgx.Identifier{ss.schema}.Sanitize()+" CASCADE")
	ss.s.Close()
}

// BenchmarkCommitFloor is the cheapest durable write: one UPDATE of a
// one-row table in its own implicit transaction, one round trip and one
// synchronous commit.
func BenchmarkCommitFloor(b *testing.B) {
	s := benchStore.get(b)
	q := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := s.Pool().Exec(ctx, "CREATE TABLE IF NOT EXISTS "+q+".floor (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO "+q+".floor VALUES (1, 0) ON CONFLICT DO NOTHING",
		pgx.QueryExecModeSimpleProtocol); err != nil {
		b.Fatal(err)
	}
	upd := "UPDATE " + q + ".floor SET n = n + 1 WHERE id = 1"
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Pool().Exec(ctx, upd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedgerTransition is one fenced RunWrite that moves one ledger
// entry by CAS (the started → committed step of a tool call).
func BenchmarkLedgerTransition(b *testing.B) {
	s := benchStore.get(b)
	// A new run per benchmark invocation: b.Loop calls this function more
	// than once with -count.
	runID := fmt.Sprintf("r%d", time.Now().UnixNano())
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: runID, Status: store.RunRunning}}); err != nil {
		b.Fatal(err)
	}
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(runID), Holder: "w", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
	e := &store.LedgerEntry{Tenant: "t", RunID: runID, CallID: "c", Tool: "charge", Effect: "side-effect",
		State: store.LedgerStarted, Args: json.RawMessage(`{"cents":500}`), Result: json.RawMessage(`{"ok":true}`)}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: runID, Fence: fence, Ledger: []store.LedgerWrite{{Entry: e}}})
	if err != nil {
		b.Fatal(err)
	}
	rev := res.Ledger[0].Revision
	b.ResetTimer()
	for b.Loop() {
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: runID, Fence: fence,
			Ledger: []store.LedgerWrite{{Entry: e, ExpectedRevision: rev,
				Event: &store.EventRecord{Type: "tool.started", ID: "ev", Data: json.RawMessage(`{"call_id":"c","tool":"charge"}`)}}}})
		if err != nil {
			b.Fatal(err)
		}
		rev = res.Ledger[0].Revision
	}
}

func sessionWithItems(b *testing.B, n int) (*bundle, int64) {
	b.Helper()
	schema := newSchema(b)
	bb := &bundle{schema: schema, s: openStore(b, schema, nil)}
	items := make([]json.RawMessage, 0, 1000)
	var rev int64
	for rev < int64(n) {
		items = items[:0]
		for i := 0; i < 1000 && rev+int64(len(items)) < int64(n); i++ {
			items = append(items, json.RawMessage(fmt.Sprintf(`{"role":"user","content":"message %d of the session"}`, rev+int64(i))))
		}
		var err error
		rev, err = bb.s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: rev, Items: items})
		if err != nil {
			b.Fatal(err)
		}
	}
	return bb, rev
}

// BenchmarkSessionAppend appends one item to a session of 10k or 100k
// items; the cost should not depend on the length.
func BenchmarkSessionAppend(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			bb, rev := sessionWithItems(b, n)
			item := []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"ok"}`)}
			b.ResetTimer()
			for b.Loop() {
				var err error
				rev, err = bb.s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: rev, Items: item})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionLoad loads a session of 10k or 100k items without a
// snapshot (the worst case).
func BenchmarkSessionLoad(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			bb, _ := sessionWithItems(b, n)
			b.ResetTimer()
			for b.Loop() {
				st, err := bb.s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
				if err != nil {
					b.Fatal(err)
				}
				if len(st.Entries) != n {
					b.Fatalf("%d entries", len(st.Entries))
				}
			}
		})
	}
}

// BenchmarkCallWrites is the store's share of a durable side-effect call
// as the engine writes it (bench/setup.go): runs of ten calls, each run a
// model response whose ten prepared calls go in one events row, then per
// call one fenced write holding the committed record of the previous
// call and the started record of the next
// (docs/design.md#children-and-workers, "One write per call in a batch"). An op is one call: its
// write and a tenth of the response's (a run's creation and claim are not
// timed). Compare with BenchmarkCommitFloor in the same run; -benchmem
// counts the client's allocations per call.
func BenchmarkCallWrites(b *testing.B) {
	s := benchStore.get(b)
	var (
		runID string
		fence *store.Fence
		prev  string
	)
	entry := func(call string, state store.LedgerState) *store.LedgerEntry {
		e := &store.LedgerEntry{Tenant: "t", RunID: runID, CallID: call, Turn: 1, Index: len(call), Tool: "charge", Effect: "side-effect", State: state,
			IdempotencyKey: runID + ":" + call, ArgsDigest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
			Args: json.RawMessage(`{"cents":500}`)}
		if state != store.LedgerPrepared {
			e.Holder, e.Epoch, e.Attempt, e.StartedAt = fence.Holder, fence.Epoch, 1, time.Now()
		}
		if state == store.LedgerCommitted {
			e.Result, e.CommittedAt = json.RawMessage(`{"ok":true}`), time.Now()
		}
		return e
	}
	event := func(typ, call string) *store.EventRecord {
		return &store.EventRecord{Type: typ, ID: typ + call, Data: json.RawMessage(`{"call_id":"` + call + `","tool":"charge"}`)}
	}
	i := 0
	for b.Loop() {
		k := i % 10
		if k == 0 {
			b.StopTimer()
			runID = fmt.Sprintf("calls%d-%d", time.Now().UnixNano(), i)
			run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: runID, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
			if err != nil {
				b.Fatal(err)
			}
			c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(runID), Holder: "w", TTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			fence, prev = &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}, ""
			b.StartTimer()
			p := &store.RunWriteParams{Tenant: "t", RunID: runID, Fence: fence,
				Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}
			for j := range 10 {
				call := fmt.Sprintf("c%d", j)
				p.Ledger = append(p.Ledger, store.LedgerWrite{Entry: entry(call, store.LedgerPrepared), Event: event("tool.prepared", call)})
			}
			if _, err := s.RunWrite(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		call := fmt.Sprintf("c%d", k)
		var ws []store.LedgerWrite
		if prev != "" {
			ws = append(ws, store.LedgerWrite{Entry: entry(prev, store.LedgerCommitted), ExpectedRevision: 2, Event: event("tool.committed", prev)})
		}
		ws = append(ws, store.LedgerWrite{Entry: entry(call, store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", call)})
		if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: runID, Fence: fence, Ledger: ws}); err != nil {
			b.Fatal(err)
		}
		prev = call
		i++
	}
	b.StopTimer()
	reportServerTime(b, s)
}

// reportServerTime reports the server's time in run_write per op and per
// call of it (pg_stat_user_functions, total_time) when the server tracks
// functions (a URL with track_functions=all or pl); the schema is the
// benchmark's own, so its counters are this run's.
func reportServerTime(b *testing.B, s *storepg.Store) {
	var track string
	if err := s.Pool().QueryRow(ctx, "SHOW track_functions").Scan(&track); err != nil || track == "none" {
		return
	}
	// Each connection flushes its counters when it next goes idle.
	for _, c := range s.Pool().AcquireAllIdle(ctx) {
		_, _ = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		c.Release()
	}
	var calls int64
	var total, self float64
	err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(calls), 0), coalesce(sum(total_time), 0), coalesce(sum(self_time), 0)
		FROM pg_stat_user_functions WHERE schemaname = $1 AND funcname = 'run_write'`, s.Schema()).Scan(&calls, &total, &self)
	if err != nil || calls == 0 {
		return
	}
	b.ReportMetric(total*1000/float64(b.N), "server-us/op")
	b.ReportMetric(total*1000/float64(calls), "server-us/write")
	b.ReportMetric(self*1000/float64(calls), "self-us/write")
}
