package storepg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// scaleMigration is the version of migrations/NNN_scale.sql; a schema at
// the version before it is a store made by the main branch before issue 21.
const scaleMigration = 6

// TestMigrateScale makes a schema with the migrations before the scale
// migration, writes runs of every status through the old run_write
// function (interrupted ones with their interruptions in the checkpoint,
// one whose checkpoint is not JSON), then opens it with this package:
// every run is still there, wait kinds come from the checkpoints, and
// lists, counts, claims and writes work.
func TestMigrateScale(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_mig_", func(m migration) bool { return m.Version >= scaleMigration })
	ctx := context.Background()
	statuses := []string{"queued", "running", "interrupted", "completed", "failed", "cancelled"}
	kinds := []string{"approval", "reconciliation", "recovery", "provider"}
	want := map[string]string{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 60 {
		st := statuses[i%len(statuses)]
		cp := `{"v":1}`
		kind := ""
		if st == "interrupted" {
			kind = kinds[(i/len(statuses))%len(kinds)]
			cp = fmt.Sprintf(`{"v":1,"interruptions":[{"kind":%q,"call_id":"c1"}]}`, kind)
		}
		id := fmt.Sprintf("r%02d", i)
		want[id] = kind
		exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', $1, '', '', 'a', 'd', $2, 'x', 1, 0, $3, $3)`, id, st, base.Add(time.Duration(i)*time.Second))
		// The checkpoint (and an event) through the old run_write.
		exec(`SELECT * FROM {{schema}}.run_write('t', $1, $2, NULL, NULL, NULL, 1, $3, $4, NULL,
			'{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
			'{e1}', '{""}', '{""}', '{""}', '{run.started}', ARRAY[$2::timestamptz], '{NULL}')`,
			id, base.Add(time.Duration(i)*time.Second), st, cp)
	}
	exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
		VALUES ('t', 'bad', '', '', 'a', 'd', 'interrupted', 'not json', 1, 0, $1, $1)`, base.Add(time.Hour))

	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.pool.QueryRow(ctx, s.q(`SELECT max(version) FROM {{schema}}.schema_migrations`)).Scan(&version); err != nil || version < scaleMigration {
		t.Fatalf("schema version %d after open, %v", version, err)
	}
	all, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 61 { // a summary does not read the checkpoint, so "bad" is listed too
		t.Fatalf("%d runs after the migration, want 61", len(all))
	}
	for _, r := range all {
		if r.ID == "bad" {
			if r.WaitKind != "" {
				t.Fatalf("a checkpoint that is not JSON gave wait kind %q", r.WaitKind)
			}
			continue
		}
		if r.WaitKind != want[r.ID] || r.Revision != 2 || r.EventSeq != 1 {
			t.Fatalf("run %s: wait kind %q (want %q), revision %d, event seq %d", r.ID, r.WaitKind, want[r.ID], r.Revision, r.EventSeq)
		}
	}
	counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range counts {
		got[c.WaitKind] = c.N
	}
	if got["approval"] != 3 || got["reconciliation"] != 3 || got["recovery"] != 2 || got["provider"] != 2 || got[""] != 1 {
		t.Fatalf("interrupted counts after the migration: %v", got)
	}
	run, _, err := s.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "h", TTL: time.Minute})
	if err != nil || run.ID != "r00" {
		t.Fatalf("claim after the migration: %v %v", run, err)
	}
	r02, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r02"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r02",
		Run: &store.RunUpdate{ExpectedRevision: r02.Revision, Status: store.RunInterrupted, Checkpoint: r02.Checkpoint, WaitKind: "recovery"}})
	if err != nil || res.Run.WaitKind != "recovery" {
		t.Fatalf("write after the migration: %+v %v", res, err)
	}
	// The counters, filled from the stored runs, follow the writes since.
	active, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t",
		Statuses: []store.RunStatus{store.RunQueued, store.RunRunning, store.RunInterrupted}})
	if err != nil {
		t.Fatal(err)
	}
	byStatus := map[store.RunStatus]int64{}
	for _, c := range active {
		byStatus[c.Status] += c.N
	}
	if byStatus[store.RunQueued] != 9 || byStatus[store.RunRunning] != 11 || byStatus[store.RunInterrupted] != 11 {
		t.Fatalf("active counts after the migration, a claim and a write: %v", byStatus)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.proname = 'run_write' AND p.pronargs <> 19`, schema).Scan(&n); err != nil || n != 1 {
		// (The run_write of rows, 19 parameters, is 023's second one.)
		t.Fatalf("%d run_write functions of column arrays after the migration (%v), want 1", n, err)
	}
}
