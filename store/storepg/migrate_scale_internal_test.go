package storepg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	ctx := context.Background()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "t_mig_" + hex.EncodeToString(b)
	quoted := pgx.Identifier{schema}.Sanitize()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP SCHEMA `+quoted+` CASCADE`) })
	exec := func(q string, args ...any) {
		t.Helper()
		mode := []any{}
		if len(args) == 0 {
			mode = append(mode, pgx.QueryExecModeSimpleProtocol)
		}
		if _, err := conn.Exec(ctx, strings.ReplaceAll(q, "{{schema}}", quoted), append(mode, args...)...); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	exec(`CREATE SCHEMA ` + quoted)
	exec(`CREATE TABLE {{schema}}.schema_migrations (version bigint PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range ms {
		if m.Version >= scaleMigration {
			break
		}
		exec(m.SQL)
		exec(`INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	}
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
		WHERE n.nspname = $1 AND p.proname = 'run_write'`, schema).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d run_write functions after the migration (%v), want 1", n, err)
	}
}
