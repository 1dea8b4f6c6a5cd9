package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// rowsWriteScript is a run's writes of every shape and every refusal:
// folded model responses (with plain events, a log append, a trailing
// started record), call writes, entries without an event, plain events
// alone, and writes refused as not found, fenced (holder, epoch,
// released), run conflict and ledger conflicts in each place an entry can
// be (own row, in more, ledger table, nowhere; first in input order).
func rowsWriteScript() []*store.RunWriteParams {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	fence := &store.Fence{Key: "run:r", Holder: "w", Epoch: 1}
	entry := func(call string, state store.LedgerState) *store.LedgerEntry {
		e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Turn: 1, Index: len(call), Tool: "charge", Effect: "side-effect",
			State: state, IdempotencyKey: "r:" + call, ArgsDigest: "sha256:x", Args: json.RawMessage(`{"cents":500}`)}
		if state != store.LedgerPrepared {
			e.Holder, e.Epoch, e.Attempt, e.StartedAt = "w", 1, 1, t0
		}
		if state == store.LedgerCommitted {
			e.Result, e.CommittedAt = json.RawMessage(`{"ok":"é"}`), t0.Add(time.Second)
		}
		return e
	}
	ev := func(typ, call string) *store.EventRecord {
		return &store.EventRecord{Type: typ, ID: typ + "-" + call, TraceID: "tr", SpanID: "sp", Data: json.RawMessage(`{"call_id":"` + call + `"}`)}
	}
	lw := func(call string, state store.LedgerState, exp int64, typ string) store.LedgerWrite {
		w := store.LedgerWrite{Entry: entry(call, state), ExpectedRevision: exp}
		if typ != "" {
			w.Event = ev(typ, call)
		}
		return w
	}
	w := func(ws ...store.LedgerWrite) *store.RunWriteParams {
		return &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Ledger: ws}
	}
	approved := entry("c3", store.LedgerPrepared)
	approved.Approval = &store.DecisionRecord{Kind: "approved", By: "me", At: t0}
	// A model response: run update, log append, a plain event, nine
	// prepared calls and c0 started (a trailing started record).
	resp := &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"turn":1}`),
			Append: []json.RawMessage{json.RawMessage(`{"role":"assistant"}`)}},
		Events: []*store.EventRecord{ev("model.response", "")}}
	for i := 1; i < 10; i++ {
		call := fmt.Sprintf("c%d", i)
		resp.Ledger = append(resp.Ledger, lw(call, store.LedgerPrepared, 0, "tool.prepared"))
	}
	resp.Ledger[2].Entry = approved
	resp.Ledger = append(resp.Ledger, lw("c0", store.LedgerStarted, 0, "tool.started"))
	return []*store.RunWriteParams{
		{Tenant: "t", RunID: "nope", Fence: fence, Events: []*store.EventRecord{ev("x", "")}},
		{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "v", Epoch: 1}, Events: []*store.EventRecord{ev("x", "")}},
		{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "w", Epoch: 2}, Events: []*store.EventRecord{ev("x", "")}},
		{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:q", Holder: "w", Epoch: 1}, Events: []*store.EventRecord{ev("x", "")}},
		{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:none", Holder: "w", Epoch: 1}, Events: []*store.EventRecord{ev("x", "")}},
		{Tenant: "t", RunID: "r", Fence: fence, Run: &store.RunUpdate{ExpectedRevision: 7, Status: store.RunRunning}},
		resp,
		w(lw("c0", store.LedgerCommitted, 2, "tool.committed")),
		w(lw("c2", store.LedgerStarted, 0, "tool.started")),
		w(lw("c2", store.LedgerStarted, 2, "tool.started")),
		w(lw("n", store.LedgerStarted, 1, "tool.started")),
		w(lw("c4", store.LedgerStarted, 1, "tool.started"), lw("c0", store.LedgerCommitted, 2, "tool.committed"), lw("c1", store.LedgerStarted, 0, "tool.started")),
		// The call write, then the next.
		w(lw("c0", store.LedgerCommitted, 1, "tool.committed"), lw("c1", store.LedgerStarted, 1, "tool.started")),
		w(lw("c1", store.LedgerCommitted, 2, "tool.committed"), lw("c2", store.LedgerStarted, 1, "tool.started")),
		// Three existing entries (the joined lookup): a miss in more, then
		// the write.
		w(lw("c9", store.LedgerStarted, 1, "tool.started"), lw("c3", store.LedgerStarted, 2, "tool.started"), lw("c0", store.LedgerCommitted, 1, "tool.committed")),
		w(lw("c9", store.LedgerStarted, 1, "tool.started"), lw("c3", store.LedgerStarted, 1, "tool.started"), lw("c4", store.LedgerStarted, 1, "tool.started")),
		w(lw("c9", store.LedgerCommitted, 2, "tool.committed"), lw("c3", store.LedgerCommitted, 2, ""), lw("c4", store.LedgerCommitted, 1, "tool.committed")),
		// Entries without an event (the ledger table), with and beside events.
		w(lw("x", store.LedgerPrepared, 0, ""), lw("c2", store.LedgerCommitted, 2, "tool.committed")),
		w(lw("x", store.LedgerStarted, 2, "")),
		w(lw("x", store.LedgerStarted, 1, ""), lw("c5", store.LedgerStarted, 1, "tool.started")),
		w(lw("x", store.LedgerCommitted, 2, ""), lw("c5", store.LedgerCommitted, 2, "tool.committed")),
		w(lw("c6", store.LedgerStarted, 1, "")),
		w(lw("c6", store.LedgerCommitted, 1, "tool.committed")),
		w(lw("c6", store.LedgerCommitted, 2, "tool.committed")),
		// New entries beside existing ones, unfolded (a started one first).
		{Tenant: "t", RunID: "r", Fence: fence, Events: []*store.EventRecord{ev("note", ""), ev("note2", "")},
			Ledger: []store.LedgerWrite{lw("c7", store.LedgerStarted, 1, "tool.started"), lw("m", store.LedgerPrepared, 0, "tool.prepared"),
				lw("k", store.LedgerPrepared, 0, "")}},
		w(lw("m", store.LedgerStarted, 0, "tool.started")),
		w(lw("k", store.LedgerStarted, 0, "tool.started"), lw("c8", store.LedgerStarted, 1, "tool.started")),
		// Plain events alone, unfenced; a run update alone.
		{Tenant: "t", RunID: "r", Events: []*store.EventRecord{ev("a", ""), {Type: "b", ID: "b", Time: t0}}},
		{Tenant: "t", RunID: "r", Fence: fence, Run: &store.RunUpdate{ExpectedRevision: 2, Status: store.RunInterrupted, WaitKind: "approval",
			Checkpoint: json.RawMessage(`{"turn":2}`), Meta: json.RawMessage(`{"m":1}`)}},
		// A second response folded with no plain event: its first record is
		// a ledger write's.
		{Tenant: "t", RunID: "r", Fence: fence, Run: &store.RunUpdate{ExpectedRevision: 3, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)},
			Ledger: []store.LedgerWrite{lw("d0", store.LedgerPrepared, 0, "tool.prepared"), lw("d1", store.LedgerPrepared, 0, "tool.prepared"),
				lw("d2", store.LedgerStarted, 0, "tool.started")}},
		w(lw("d1", store.LedgerStarted, 1, "tool.started"), lw("d2", store.LedgerCommitted, 1, "tool.committed")),
		w(lw("d0", store.LedgerStarted, 0, "tool.started")),
	}
}

// The run_write of rows (migration 023) answers every write of
// rowsWriteScript as the 46-parameter run_write does, refusals included,
// and leaves the same rows: one store writes through each, from the same
// clock, and their answers, errors and tables are compared.
func TestRunWriteRowsAnswersAsColumns(t *testing.T) {
	cols, rows := rawTestStore(t, "t_rwcols_"), rawTestStore(t, "t_rwrows_")
	cols.rows = rowTypes{} // the 46-parameter run_write
	if rows.rows.entryArr == 0 {
		t.Fatal("no row types")
	}
	ctx := context.Background()
	for _, s := range []*Store{cols, rows} {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sd := s.rawStatement(ctx, conn.Conn())
		conn.Release()
		if sd == nil || (len(sd.ParamOIDs) == runWriteRowsParams) != (s == rows) {
			t.Fatalf("store %s does not take the path under test", s.schema)
		}
	}
	for n, p := range rowsWriteScript() {
		r1, e1 := cols.RunWrite(ctx, p)
		r2, e2 := rows.RunWrite(ctx, p)
		if fmt.Sprint(e1) != fmt.Sprint(e2) || reflect.TypeOf(e1) != reflect.TypeOf(e2) {
			t.Fatalf("write %d: columns %v, rows %v", n, e1, e2)
		}
		if e1 == nil {
			r1.Run, r2.Run = runNoTimes(r1.Run), runNoTimes(r2.Run)
		}
		if !reflect.DeepEqual(r1, r2) {
			j1, _ := json.Marshal(r1)
			j2, _ := json.Marshal(r2)
			t.Fatalf("write %d: columns %s\nrows %s", n, j1, j2)
		}
		t.Logf("write %d: %v", n, e1)
	}
	sameTables(t, cols, rows)
}

// runNoTimes is r without its creation time (each store made its run at
// its own time).
func runNoTimes(r *store.Run) *store.Run {
	if r == nil {
		return nil
	}
	c := *r
	c.CreatedAt = time.Time{}
	return &c
}

// rawTestStore is a new store on the test server, with run r (revision 1,
// made after the migrations: no ledger rows, runs.ledger_rows false) and
// its claim run:r held by w at epoch 1, at a fixed clock.
func rawTestStore(t *testing.T, prefix string) *Store {
	t.Helper()
	url, schema, exec := schemaBefore(t, prefix, func(m migration) bool { return strings.HasSuffix(m.Name, "_run_write_rows") })
	s, err := Open(context.Background(), url, &Config{Schema: schema, Clock: func() time.Time { return rowsT0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	seedRun(exec)
	return s
}

var rowsT0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// seedRun makes run r (revision 1), its claim run:r held by w at epoch 1
// and a released claim run:q.
func seedRun(exec func(q string, args ...any)) {
	exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
		VALUES ('t', 'r', '', '', 'a', 'd', 'running', '{}', 1, 0, $1, $1)`, rowsT0)
	exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held) VALUES ('t', 'run:r', 'w', 1, $1, $1, true),
		('t', 'run:q', 'w', 1, $1, $1, false)`, rowsT0.Add(24*time.Hour*365*10))
}

// TestMigrateRunWriteRows: a store that main before migration 023 wrote a
// model response to (its run takes runs.ledger_rows true, 024; the
// reference's run, made after, false) (folded prepared calls, a trailing
// started record, a log append), opened with this package: the writes
// that follow, through the run_write of rows and, alternately, through the
// 46-parameter run_write as a binary of before 023 still sends it, answer
// and write as a store written by the 46-parameter run_write alone does.
func TestMigrateRunWriteRows(t *testing.T) {
	ctx := context.Background()
	script := rowsWriteScript()
	url, schema, exec := schemaBefore(t, "t_rw023_", func(m migration) bool { return strings.HasSuffix(m.Name, "_run_write_rows") })
	seedRun(exec)
	const respAt = 6 // script[6] is the model response
	exec(runWriteCall, sampleCallAt(t, script[respAt], rowsT0).args()...)
	clock := func() time.Time { return rowsT0 }
	s, err := Open(ctx, url, &Config{Schema: schema, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.rows.entryArr == 0 {
		t.Fatal("no row types after the migration")
	}
	old, err := Open(ctx, url, &Config{Schema: schema, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	old.rows = rowTypes{} // a binary of before 023
	ref := rawTestStore(t, "t_rw023ref_")
	ref.rows = rowTypes{}
	if _, err := ref.RunWrite(ctx, script[respAt]); err != nil {
		t.Fatal(err)
	}
	for n := respAt + 1; n < len(script); n++ {
		w := s
		if n%2 == 0 {
			w = old
		}
		r1, e1 := ref.RunWrite(ctx, script[n])
		r2, e2 := w.RunWrite(ctx, script[n])
		if fmt.Sprint(e1) != fmt.Sprint(e2) || reflect.TypeOf(e1) != reflect.TypeOf(e2) {
			t.Fatalf("write %d: want %v, got %v", n, e1, e2)
		}
		if e1 == nil {
			r1.Run, r2.Run = runNoTimes(r1.Run), runNoTimes(r2.Run)
		}
		if !reflect.DeepEqual(r1, r2) {
			j1, _ := json.Marshal(r1)
			j2, _ := json.Marshal(r2)
			t.Fatalf("write %d: want %s\ngot %s", n, j1, j2)
		}
	}
	sameTables(t, ref, s)
}

// sameTables fails unless a and b hold the same events, ledger, runs and
// run_log rows.
func sameTables(t *testing.T, a, b *Store) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`SELECT json_agg(e ORDER BY seq) FROM {{schema}}.events e`,
		`SELECT json_agg(l ORDER BY call_id) FROM {{schema}}.ledger l`,
		`SELECT json_agg(r ORDER BY id) FROM (SELECT id, status, wait_kind, checkpoint, meta, revision, event_seq, updated_at, log_len, log_seq, ledger_rows FROM {{schema}}.runs) r`,
		`SELECT json_agg(l ORDER BY seq) FROM {{schema}}.run_log l`,
	} {
		var x, y string
		if err := a.pool.QueryRow(ctx, a.q(q)).Scan(&x); err != nil {
			t.Fatal(err)
		}
		if err := b.pool.QueryRow(ctx, b.q(q)).Scan(&y); err != nil {
			t.Fatal(err)
		}
		if x != y {
			t.Fatalf("%s:\n%s: %s\n%s: %s", q, a.schema, x, b.schema, y)
		}
		if len(x) < 10 {
			t.Fatalf("%s: nothing written (%s)", q, x)
		}
	}
}

// sampleCallAt is the call newCall makes of p at now.
func sampleCallAt(t *testing.T, p *store.RunWriteParams, now time.Time) *call {
	t.Helper()
	c := sampleCall(t, p)
	return newCall(p, c.order, c.la, now)
}

// runs.ledger_rows (migration 024) turns true with a run's first ledger
// table row, whoever inserts it: run_write of either kind, or plain SQL
// (a scale test's fill); a new run starts false, a run of before 024 true.
func TestLedgerRowsFlag(t *testing.T) {
	ctx := context.Background()
	s := rawTestStore(t, "t_ledrows_")
	flag := func(run string) bool {
		t.Helper()
		var b bool
		if err := s.pool.QueryRow(ctx, s.q(`SELECT ledger_rows FROM {{schema}}.runs WHERE tenant = 't' AND id = $1`), run).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if flag("r") {
		t.Fatal("a new run has ledger_rows set")
	}
	e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: "c", Tool: "x", Effect: "read", State: store.LedgerPrepared, ArgsDigest: "d"}
	fence := &store.Fence{Key: "run:r", Holder: "w", Epoch: 1}
	// A write with an event leaves it; one without (a ledger table row) sets it.
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: e, Event: &store.EventRecord{Type: "tool.prepared", ID: "e1"}}}}); err != nil {
		t.Fatal(err)
	}
	if flag("r") {
		t.Fatal("a ledger write with its event set ledger_rows")
	}
	e2 := *e
	e2.State = store.LedgerStarted
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: &e2, ExpectedRevision: 1}}}); err != nil {
		t.Fatal(err)
	}
	if !flag("r") {
		t.Fatal("a ledger table row did not set ledger_rows")
	}
	// Plain SQL, two runs in one statement.
	for _, id := range []string{"p", "q"} {
		if _, err := s.pool.Exec(ctx, s.q(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', $1, '', '', 'a', 'd', 'running', '{}', 1, 0, now(), now())`), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, s.q(`INSERT INTO {{schema}}.ledger (tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key, attempt,
		args_digest, holder, epoch, revision, created_at, updated_at)
		SELECT 't', id, 'c', 1, 0, 'x', 'read', 'prepared', '', 0, 'd', '', 0, 1, now(), now() FROM unnest(ARRAY['p', 'q']) id`)); err != nil {
		t.Fatal(err)
	}
	if !flag("p") || !flag("q") {
		t.Fatal("an INSERT into ledger did not set ledger_rows")
	}
	// The call's lookup finds that row (a conflict reports its revision).
	_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "p",
		Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "p", CallID: "c", Tool: "x", Effect: "read",
			State: store.LedgerStarted, ArgsDigest: "d"}, ExpectedRevision: 2, Event: &store.EventRecord{Type: "tool.started", ID: "e"}}}})
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Actual != 1 {
		t.Fatalf("write over the inserted row: %v, want a conflict at revision 1", err)
	}
}
