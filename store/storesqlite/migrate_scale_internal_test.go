package storesqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// scaleMigration is the version of migrations/NNNN_scale.sql; a store at
// the version before it is a store made by the main branch before issue 21.
const scaleMigration = 6

// TestMigrateScale makes a store with the schema before the scale
// migration (runs of every status, interrupted ones with their
// interruptions in the checkpoint, one whose checkpoint is not JSON, a
// ledger, events), opens it with this package and checks that every run
// is still there, that the wait kinds were taken from the checkpoints, and
// that the paged lists, counts, claims and writes work on it.
func TestMigrateScale(t *testing.T) {
	path, db, exec := fileBefore(t, func(m migration) bool { return m.Version >= scaleMigration })
	statuses := []string{"queued", "running", "interrupted", "completed", "failed", "cancelled"}
	kinds := []string{"approval", "reconciliation", "recovery", "provider"}
	want := map[string]string{} // id → wait kind
	for i := range 60 {
		st := statuses[i%len(statuses)]
		cp := `{"v":1,"turn":2}`
		kind := ""
		if st == "interrupted" {
			kind = kinds[(i/len(statuses))%len(kinds)]
			cp = fmt.Sprintf(`{"v":1,"interruptions":[{"kind":%q,"call_id":"c1"},{"kind":"approval","call_id":"c2"}]}`, kind)
		}
		id := fmt.Sprintf("r%02d", i)
		want[id] = kind
		exec(`INSERT INTO runs (tenant, id, status, checkpoint, revision, event_seq, created_at, updated_at) VALUES ('t', ?, ?, ?, 2, 0, ?, ?)`,
			id, st, cp, i+1, i+1)
	}
	exec(`INSERT INTO runs (tenant, id, status, checkpoint, revision, event_seq, created_at, updated_at) VALUES ('t', 'bad', 'interrupted', 'not json', 1, 0, 100, 100)`)
	exec(`INSERT INTO ledger (tenant, run_id, call_id, turn, idx, tool, state, args, revision, created_at, updated_at) VALUES ('t', 'r02', 'c1', 1, 0, 'pay', 'unknown', '{"n":1}', 2, 1, 2)`)
	exec(`INSERT INTO events (tenant, run_id, seq, type, time, data) VALUES ('t', 'r02', 1, 'run.started', 1, NULL)`)
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var version int
	if err := s.db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version < scaleMigration {
		t.Fatalf("schema version %d after open, %v", version, err)
	}
	all, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 61 {
		t.Fatalf("%d runs after the migration, want 61", len(all))
	}
	for _, r := range all {
		if r.ID == "bad" {
			if r.WaitKind != "" {
				t.Fatalf("a checkpoint that is not JSON gave wait kind %q", r.WaitKind)
			}
			continue
		}
		if r.WaitKind != want[r.ID] {
			t.Fatalf("run %s: wait kind %q, want %q", r.ID, r.WaitKind, want[r.ID])
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
	r02, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r02"})
	if err != nil || r02.EventSeq != 1 || r02.Revision != 2 {
		t.Fatalf("r02 after the migration: %+v %v", r02, err)
	}
	var cp map[string]json.RawMessage
	if err := json.Unmarshal(r02.Checkpoint, &cp); err != nil || len(cp["interruptions"]) == 0 {
		t.Fatalf("checkpoint after the migration: %s", r02.Checkpoint)
	}
	if l, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r02"}); err != nil || len(l) != 1 {
		t.Fatalf("ledger after the migration: %d %v", len(l), err)
	}
	run, _, err := s.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "h", TTL: 60e9})
	if err != nil || run.ID != "r00" {
		t.Fatalf("claim after the migration: %v %v", run, err)
	}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r02",
		Run: &store.RunUpdate{ExpectedRevision: 2, Status: store.RunInterrupted, Checkpoint: r02.Checkpoint, WaitKind: "recovery"}})
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
}
