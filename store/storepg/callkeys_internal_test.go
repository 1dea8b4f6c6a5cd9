package storepg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/actoviq/actoviq-go/store"
)

// TestMigrateCallKeys makes a schema with the migrations before
// call_keys_plpgsql (event_call_keys in SQL, as main left it), writes model
// responses whose calls are found only in more_calls (the events_more_calls
// index built by the SQL function), then opens it with this package: the
// function is PL/pgSQL, gives the same keys for every stored row, the index
// built before still finds those calls (a forced bitmap scan), their next
// transitions pass their revision checks and a wrong one still conflicts;
// a response written after the migration is found the same way.
func TestMigrateCallKeys(t *testing.T) {
	url, schema, _ := schemaBefore(t, "t_keys_", func(m migration) bool { return strings.HasSuffix(m.Name, "_call_keys_plpgsql") })
	ctx := context.Background()
	quoted := pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	lang := func() string {
		t.Helper()
		var l string
		if err := pool.QueryRow(ctx, `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
			WHERE p.proname = 'event_call_keys' AND p.pronamespace = $1::regnamespace`, quoted).Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := lang(); l != "sql" {
		t.Fatalf("event_call_keys before the migration is in %s, want sql", l)
	}

	// The writes of a store at the version before: the run_write function
	// of that version, called as this package calls it.
	old := &Store{pool: pool, schema: schema, quoted: quoted}
	old.commits = commitQueue{MaxBatch: maxBatch, MaxExtra: maxExtraBatches, MaxLeaders: 1, Run: old.sendBatch}
	runs := map[string]*store.Run{}
	rowOf := map[string]int64{} // the run's row of several records
	for _, id := range []string{"r", "s", "unicode-é∑"} {
		run := createRun(t, old, id)
		res, err := old.RunWrite(ctx, responseWrite(id, run.Revision, "c", 3))
		if err != nil {
			t.Fatal(err)
		}
		runs[id] = res.Run
		rowOf[id] = res.Events[len(res.Events)-1].Seq
	}

	s, err := New(ctx, pool, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if l := lang(); l != "plpgsql" {
		t.Fatalf("event_call_keys after the migration is in %s, want plpgsql", l)
	}
	// The same keys as the SQL function of 014 for every stored row.
	var differ, rows int
	if err := pool.QueryRow(ctx, s.q(`SELECT count(*) FILTER (WHERE {{schema}}.event_call_keys(tenant, run_id, more_calls) IS DISTINCT FROM
			(SELECT array_agg(length(tenant) || ':' || tenant || length(run_id) || ':' || run_id || c) FROM unnest(more_calls) c)),
			count(*) FROM {{schema}}.events WHERE more_calls IS NOT NULL`)).Scan(&differ, &rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || differ != 0 {
		t.Fatalf("%d of %d rows of several records get other keys than before", differ, rows)
	}

	// lookup finds the row naming the call through events_more_calls
	// alone (sequential scans off), as run_write and LedgerGet look.
	lookup := func(run, call string) int64 {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		q := s.q(`SELECT seq FROM {{schema}}.events WHERE more_calls IS NOT NULL
			AND {{schema}}.event_call_keys(tenant, run_id, more_calls) @> {{schema}}.event_call_keys($1, $2, ARRAY[$3::text])`)
		var plan strings.Builder
		prows, err := tx.Query(ctx, `EXPLAIN `+q, "t", run, call)
		if err != nil {
			t.Fatal(err)
		}
		for prows.Next() {
			var line string
			if err := prows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := prows.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), "Bitmap Index Scan on events_more_calls") {
			t.Fatalf("lookup of %s/%s is not through events_more_calls:\n%s", run, call, &plan)
		}
		var seq int64
		if err := tx.QueryRow(ctx, q, "t", run, call).Scan(&seq); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return 0
			}
			t.Fatal(err)
		}
		return seq
	}
	for id := range runs {
		for _, c := range []string{"c0", "c1", "c2"} {
			if seq := lookup(id, c); seq != rowOf[id] {
				t.Fatalf("%s/%s through the index built before the migration: row %d, want %d", id, c, seq, rowOf[id])
			}
		}
		if seq := lookup(id, "c3"); seq != 0 {
			t.Fatalf("%s/c3 (no such call) found in row %d", id, seq)
		}
	}
	if seq := lookup("r", "1:tc0"); seq != 0 {
		t.Fatalf("a call id that makes another run's key found row %d", seq)
	}

	// The calls' next transitions: revision 1 found in more_calls.
	started := func(run, call string, expected int64) error {
		e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: run, CallID: call})
		if err != nil {
			t.Fatal(err)
		}
		next := *e
		next.State = store.LedgerStarted
		next.Attempt = 1
		_, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: run,
			Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: expected,
				Event: &store.EventRecord{Type: "tool.started", Data: []byte(`{"call_id":"` + call + `"}`)}}}})
		return err
	}
	if err := started("r", "c1", 1); err != nil {
		t.Fatalf("started write of a call stored before the migration: %v", err)
	}
	var ce *store.ConflictError
	if err := started("s", "c2", 0); !errors.As(err, &ce) || ce.Actual != 1 {
		t.Fatalf("write of c2 expecting no entry: %v, want a conflict at revision 1", err)
	}
	if e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c1"}); err != nil || e.Revision != 2 || e.State != store.LedgerStarted {
		t.Fatalf("r/c1 after its started write: %+v, %v", e, err)
	}
	// A response written after the migration, its calls found the same way.
	res, err := s.RunWrite(ctx, responseWrite("s", runs["s"].Revision, "d", 2))
	if err != nil {
		t.Fatal(err)
	}
	seq := lookup("s", "d1")
	if seq != res.Events[len(res.Events)-1].Seq {
		t.Fatalf("s/d1 written after the migration: row %d, want %d", seq, res.Events[len(res.Events)-1].Seq)
	}
	if err := started("s", "d1", 1); err != nil {
		t.Fatalf("started write of a call written after the migration: %v", err)
	}
}
