package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// dumpEvents returns every events row of db as text, in key order.
func dumpEvents(t *testing.T, db *sql.DB) []string { return dumpTable(t, db, "events") }

// dumpTable returns every row of a table keyed by (tenant, run_id, seq)
// as text, in key order.
func dumpTable(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM ` + table + ` ORDER BY tenant, run_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, v := range vals {
			if s, ok := v.([]byte); ok {
				v = string(s)
			}
			fmt.Fprintf(&b, "%s=%#v ", cols[i], v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventsSQL returns the events table's CREATE statement.
func eventsSQL(t *testing.T, db *sql.DB) string { return tableSQL(t, db, "events") }

// tableSQL returns a table's CREATE statement.
func tableSQL(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var q string
	if err := db.QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestMigrateEventsRowid writes a run the way this package does (a model
// response of three prepared calls in one events row, transitions of one
// record each, plain events) into a file made with the migrations before
// events_rowid, opens it with this package, and checks that every row is
// kept as it was, that the reads give what they gave before, that the
// table is now a rowid table keyed by (tenant, run_id, seq) (a second row
// with the same key is refused), and that the CAS of a transition still
// holds on the migrated rows.
func TestMigrateEventsRowid(t *testing.T) {
	ctx := context.Background()
	srcPath := filepath.Join(t.TempDir(), "src.db")
	src, err := Open(srcPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := newRunR(t, src)
	cl, err := src.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r"), Holder: "h", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: cl.Key, Holder: cl.Holder, Epoch: cl.Epoch}
	resp := responseWrite(run.Revision, 3)
	resp.Fence = fence
	res, err := src.RunWrite(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	transition := func(s *Store, e *store.LedgerEntry, st store.LedgerState) (*store.LedgerEntry, error) {
		next := *e
		next.State = st
		if st == store.LedgerCommitted {
			next.Result = json.RawMessage(`{"content":"ok"}`)
		}
		r, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
			Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: e.Revision,
				Event: &store.EventRecord{Type: "tool." + string(st), Data: json.RawMessage(`{"call_id":"` + e.CallID + `"}`)}}}})
		if err != nil {
			return nil, err
		}
		return r.Ledger[0], nil
	}
	c0 := res.Ledger[0]
	for _, st := range []store.LedgerState{store.LedgerStarted, store.LedgerCommitted} {
		if c0, err = transition(src, c0, st); err != nil {
			t.Fatal(err)
		}
	}
	c1, err := transition(src, res.Ledger[1], store.LedgerStarted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Events: []*store.EventRecord{{Type: "note", Data: json.RawMessage(`{"n":1}`)}}}); err != nil {
		t.Fatal(err)
	}
	wantEvents, err := src.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantLedger, err := src.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(wantEvents) != 8 || len(wantLedger) != 3 {
		t.Fatalf("the run holds %d events and %d entries, want 8 and 3", len(wantEvents), len(wantLedger))
	}
	src.Close()

	// The same rows in a file at the schema before events_rowid.
	path, db, exec := fileBefore(t, func(m migration) bool { return strings.HasSuffix(m.Name, "_events_rowid") })
	db.SetMaxOpenConns(1) // ATTACH is the connection's
	exec(`ATTACH DATABASE ? AS src`, srcPath)
	for _, table := range []string{"runs", "claims", "run_log", "events"} {
		exec(`INSERT INTO ` + table + ` SELECT * FROM src.` + table)
	}
	exec(`DETACH DATABASE src`)
	if q := eventsSQL(t, db); !strings.Contains(q, "WITHOUT ROWID") {
		t.Fatalf("before the migration, events is not WITHOUT ROWID: %s", q)
	}
	before := dumpEvents(t, db)
	if len(before) != 5 { // the response's row, three transitions, the note
		t.Fatalf("%d events rows before the migration, want 5", len(before))
	}
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if q := eventsSQL(t, s.db); strings.Contains(q, "WITHOUT ROWID") || !strings.Contains(q, "PRIMARY KEY (tenant, run_id, seq)") {
		t.Fatalf("after the migration: %s", q)
	}
	if after := dumpEvents(t, s.db); !reflect.DeepEqual(after, before) {
		t.Fatalf("rows changed by the migration:\nbefore %q\nafter  %q", before, after)
	}
	var idx []string
	rows, err := s.db.Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'events' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, n)
	}
	rows.Close()
	if want := []string{"events_by_call", "events_multi", "sqlite_autoindex_events_1"}; !reflect.DeepEqual(idx, want) {
		t.Fatalf("indexes of events: %v, want %v", idx, want)
	}
	gotEvents, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || !reflect.DeepEqual(gotEvents, wantEvents) {
		t.Fatalf("EventList after the migration (%v):\n%+v\nwant\n%+v", err, gotEvents, wantEvents)
	}
	gotLedger, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil || !reflect.DeepEqual(gotLedger, wantLedger) {
		t.Fatalf("LedgerList after the migration (%v):\n%+v\nwant\n%+v", err, gotLedger, wantLedger)
	}
	for _, want := range wantLedger {
		got, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: want.CallID})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("LedgerGet %s after the migration (%v): %+v, want %+v", want.CallID, err, got, want)
		}
	}

	// The key is still unique.
	if _, err := s.db.Exec(`INSERT INTO events (tenant, run_id, seq, type, time) VALUES ('t', 'r', 5, 'dup', 0)`); err == nil ||
		!strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("a second row keyed (t, r, 5): %v, want a UNIQUE constraint error", err)
	}
	// Each call's CAS reads the migrated rows: c1 (started, one-record
	// row), c2 (prepared, in the response's row) and c0 (committed).
	if _, err := transition(s, res.Ledger[1], store.LedgerCommitted); !isConflict(err, 1, 2) {
		t.Fatalf("c1 committed at revision 1: %v, want a conflict (actual 2)", err)
	}
	if _, err := transition(s, c1, store.LedgerCommitted); err != nil {
		t.Fatal(err)
	}
	stale := *res.Ledger[2]
	stale.Revision = 2
	if _, err := transition(s, &stale, store.LedgerStarted); !isConflict(err, 2, 1) {
		t.Fatalf("c2 started at revision 2: %v, want a conflict (actual 1)", err)
	}
	c2, err := transition(s, res.Ledger[2], store.LedgerStarted)
	if err != nil || c2.Revision != 2 {
		t.Fatalf("c2 started: %+v, %v", c2, err)
	}
	stale0 := *c0
	stale0.Revision = 2
	if _, err := transition(s, &stale0, store.LedgerCommitted); !isConflict(err, 2, 3) {
		t.Fatalf("c0 committed at revision 2: %v, want a conflict (actual 3)", err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: wantEvents[len(wantEvents)-1].Seq})
	if err != nil || len(evs) != 2 || evs[0].Seq != 9 || evs[1].Seq != 10 {
		t.Fatalf("events after the migration's rows: %+v, %v; want seq 9 and 10", evs, err)
	}
}

// isConflict reports whether err is a ledger ConflictError expecting
// expected and finding actual.
func isConflict(err error, expected, actual int64) bool {
	var ce *store.ConflictError
	return errors.As(err, &ce) && ce.Kind == "ledger" && ce.Expected == expected && ce.Actual == actual
}

// TestTransitionPages counts the pages a call's transitions write to the
// WAL on a store of many runs with random ids (the engine's default): a
// transition's row goes at the end of the events table, not into the run's
// place among all runs' rows, so a write of two transitions (a call's
// committed record carried with the next call's started) puts about four
// pages in the WAL: the table's last leaf and a leaf of each of its two
// indexes, and now and then a split of an index leaf, a new last leaf of
// the table and the file's first page (the file grew). Keyed by (tenant,
// run_id, seq) WITHOUT ROWID, most such writes split the run's full leaf
// (the leaf, two siblings, their parent): 5.55 pages per write here.
func TestTransitionPages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type runCalls struct {
		id      string
		fence   *store.Fence
		entries []*store.LedgerEntry
	}
	// Rows of the sizes the engine writes (about 450 bytes): a holder
	// host:pid:instance, 32-hex event and trace ids, the call's data.
	const nRuns, nCalls = 60, 8
	holder := "worker-7.example.internal:12345:" + strings.Repeat("a", 16)
	event := func(typ, callID string) *store.EventRecord {
		return &store.EventRecord{Type: typ, ID: strings.Repeat("e", 32), TraceID: strings.Repeat("f", 32), SpanID: strings.Repeat("5", 16),
			Data: json.RawMessage(`{"call_id":"` + callID + `","tool":"pay","effect":"side-effect","state":"` + typ +
				`","idempotency_key":"r:` + callID + `","attempt":1,"args":{"amount":5}}`)}
	}
	var runs []*runCalls
	for i := range nRuns {
		id := fmt.Sprintf("%08x", uint32(i)*2654435761) // scattered, as random ids
		if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning,
			Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		cl, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(id), Holder: holder, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		rc := &runCalls{id: id, fence: &store.Fence{Key: cl.Key, Holder: cl.Holder, Epoch: cl.Epoch}}
		for c := range nCalls {
			callID := fmt.Sprintf("call_%02d", c)
			e := &store.LedgerEntry{Tenant: "t", RunID: id, CallID: callID, Turn: 1, Index: c, Tool: "pay", Effect: "side-effect",
				State: store.LedgerPrepared, IdempotencyKey: id + ":" + callID, ArgsDigest: "sha256:" + strings.Repeat("ab", 32),
				Args: json.RawMessage(`{"amount":5}`), Holder: holder, Epoch: cl.Epoch}
			r, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: rc.fence,
				Ledger: []store.LedgerWrite{{Entry: e, Event: event("tool.prepared", callID)}}})
			if err != nil {
				t.Fatal(err)
			}
			rc.entries = append(rc.entries, r.Ledger[0])
		}
		runs = append(runs, rc)
	}
	// Each run in turn: call c's committed record with call c+1's started
	// record, one write.
	move := func(rc *runCalls, i int, st store.LedgerState) store.LedgerWrite {
		e := rc.entries[i]
		next := *e
		next.State = st
		if st == store.LedgerCommitted {
			next.Result = json.RawMessage(`{"content":"ok"}`)
		}
		return store.LedgerWrite{Entry: &next, ExpectedRevision: e.Revision, Event: event("tool."+string(st), e.CallID)}
	}
	write := func(rc *runCalls, ws ...store.LedgerWrite) {
		r, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: rc.id, Fence: rc.fence, Ledger: ws})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Ledger {
			for i, old := range rc.entries {
				if old.CallID == e.CallID {
					rc.entries[i] = e
				}
			}
		}
	}
	for _, rc := range runs {
		write(rc, move(rc, 0, store.LedgerStarted))
	}
	frames := func() int64 {
		var busy, log, done int64
		if err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		return log
	}
	var pages, writes int64
	for c := 0; c+1 < nCalls; c++ {
		for _, rc := range runs {
			if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			write(rc, move(rc, c, store.LedgerCommitted), move(rc, c+1, store.LedgerStarted))
			pages += frames()
			writes++

		}
	}
	perWrite := float64(pages) / float64(writes)
	t.Logf("%d writes of two transitions: %.2f WAL pages per write", writes, perWrite)
	// 4.14 here; 5.55 with the table WITHOUT ROWID.
	if perWrite > 4.6 {
		t.Fatalf("a write of two transitions put %.2f pages in the WAL on average, want at most 4.6", perWrite)
	}
}

// TestTransitionsNumberedInInsert: a write of two transitions and nothing
// else (a call's committed record carried with the next call's started
// one) numbers its records inside their INSERTs, one after the other,
// after the run's last record (here the last of a response's row of four),
// and a failed CAS of its second record leaves nothing of the first.
func TestTransitionsNumberedInInsert(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "n.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := newRunR(t, s)
	res, err := s.RunWrite(ctx, responseWrite(run.Revision, 3)) // seq 1..4
	if err != nil {
		t.Fatal(err)
	}
	move := func(e *store.LedgerEntry, st store.LedgerState, expected int64) store.LedgerWrite {
		next := *e
		next.State = st
		return store.LedgerWrite{Entry: &next, ExpectedRevision: expected, Event: &store.EventRecord{Type: "tool." + string(st)}}
	}
	w, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{move(res.Ledger[0], store.LedgerStarted, 1)}})
	if err != nil || w.Events[0].Seq != 5 {
		t.Fatalf("c0 started: %+v, %v; want seq 5", w, err)
	}
	c0 := w.Ledger[0]
	w, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{move(c0, store.LedgerCommitted, 2), move(res.Ledger[1], store.LedgerStarted, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Events) != 2 || w.Events[0].Seq != 6 || w.Events[1].Seq != 7 || w.Ledger[0].Revision != 3 || w.Ledger[1].Revision != 2 {
		t.Fatalf("two transitions: events %+v, entries %+v; want seq 6 and 7, revisions 3 and 2", w.Events, w.Ledger)
	}
	// The second record's CAS fails: nothing of the write is kept.
	_, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{move(res.Ledger[2], store.LedgerStarted, 1), move(res.Ledger[1], store.LedgerCommitted, 1)}})
	if !isConflict(err, 1, 2) {
		t.Fatalf("a stale second record: %v, want a conflict (actual 2)", err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 7 {
		t.Fatalf("events: %d, %v; want 7", len(evs), err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d numbered %d", i, ev.Seq)
		}
	}
	if e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c2"}); err != nil || e.Revision != 1 {
		t.Fatalf("c2 after the failed write: %+v, %v; want revision 1", e, err)
	}
}

// TestMigrateRunLogRowid writes a run's log the way this package does
// (five writes appending items) into a file made with the
// migrations before run_log_rowid, opens it with this package, and checks
// that every row is kept as it was, that the run reads back with the same
// log, that the table is now a rowid table whose key (tenant, run_id, seq)
// is still unique, and that a write after the migration appends to the
// log.
func TestMigrateRunLogRowid(t *testing.T) {
	ctx := context.Background()
	srcPath := filepath.Join(t.TempDir(), "src.db")
	src, err := Open(srcPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendItems := func(s *Store, rev int64, turn int) int64 {
		t.Helper()
		r, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Run: &store.RunUpdate{ExpectedRevision: rev,
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`), Append: []json.RawMessage{
				json.RawMessage(fmt.Sprintf(`{"type":"message","turn":%d,"text":%q}`, turn, strings.Repeat("x", 300*turn))),
				json.RawMessage(fmt.Sprintf(`{"type":"tool_result","turn":%d}`, turn))}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Run.Revision
	}
	rev := newRunR(t, src).Revision
	for turn := 1; turn <= 5; turn++ {
		rev = appendItems(src, rev, turn)
	}
	want, err := src.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || len(want.Log) != 10 {
		t.Fatalf("the run's log: %d items, %v; want 10", len(want.Log), err)
	}
	src.Close()

	path, db, exec := fileBefore(t, func(m migration) bool { return strings.HasSuffix(m.Name, "_run_log_rowid") })
	db.SetMaxOpenConns(1) // ATTACH is the connection's
	exec(`ATTACH DATABASE ? AS src`, srcPath)
	for _, table := range []string{"runs", "claims", "run_log", "events"} {
		exec(`INSERT INTO ` + table + ` SELECT * FROM src.` + table)
	}
	exec(`DETACH DATABASE src`)
	if q := tableSQL(t, db, "run_log"); !strings.Contains(q, "WITHOUT ROWID") {
		t.Fatalf("before the migration, run_log is not WITHOUT ROWID: %s", q)
	}
	before := dumpTable(t, db, "run_log")
	if len(before) == 0 {
		t.Fatal("no run_log rows before the migration")
	}
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if q := tableSQL(t, s.db, "run_log"); strings.Contains(q, "WITHOUT ROWID") || !strings.Contains(q, "PRIMARY KEY (tenant, run_id, seq)") {
		t.Fatalf("after the migration: %s", q)
	}
	if after := dumpTable(t, s.db, "run_log"); !reflect.DeepEqual(after, before) {
		t.Fatalf("rows changed by the migration:\nbefore %q\nafter  %q", before, after)
	}
	got, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("RunGet after the migration (%v):\n%+v\nwant\n%+v", err, got, want)
	}
	if _, err := s.db.Exec(`INSERT INTO run_log (tenant, run_id, seq, first, n, crc, items) VALUES ('t', 'r', 3, 0, 0, 0, '')`); err == nil ||
		!strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("a second row keyed (t, r, 3): %v, want a UNIQUE constraint error", err)
	}
	appendItems(s, got.Revision, 6)
	got, err = s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || len(got.Log) != 12 || !reflect.DeepEqual(got.Log[:10], want.Log) || !strings.Contains(string(got.Log[10]), `"turn":6`) {
		t.Fatalf("the log after a write on the migrated store: %d items, %v", len(got.Log), err)
	}
}
