package storesqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// TestMigrateEventCalls: a store whose rows of several records were
// written before migration 0017 gets their calls indexed when it opens:
// a call held only in a row's more is still found (LedgerGet) and still
// conflicts with a new entry of the same id (ExpectedRevision 0), and one
// not held anywhere is still new.
func TestMigrateEventCalls(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := newRunR(t, s)
	if _, err := s.RunWrite(ctx, responseWrite(run.Revision, 3)); err != nil {
		t.Fatal(err)
	}
	// The store as the main before 0017 left it: no event_calls.
	for _, q := range []string{`DROP TABLE event_calls`, `DELETE FROM schema_migrations WHERE version = 17`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	s.Close()
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM event_calls WHERE tenant = 't' AND run_id = 'r'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("event_calls after the migration: %d rows, %v; want the 3 calls held in more (the response event is in the columns)", n, err)
	}
	if e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c2"}); err != nil || e.Revision != 1 {
		t.Fatalf("LedgerGet c2: %+v, %v", e, err)
	}
	again := func(call string) error {
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{
			Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Turn: 2, Tool: "pay", Effect: "side-effect",
				State: store.LedgerPrepared, IdempotencyKey: "k-" + call, ArgsDigest: "d", Args: json.RawMessage(`{}`)},
			Event: &store.EventRecord{ID: "again-" + call, Type: "tool.prepared", Data: json.RawMessage(`{}`)}}}})
		return err
	}
	var ce *store.ConflictError
	if err := again("c2"); !errors.As(err, &ce) || ce.Actual != 1 {
		t.Fatalf("a new entry c2 over the one held in more: %v, want a conflict at revision 1", err)
	}
	if err := again("c9"); err != nil {
		t.Fatalf("a new entry c9: %v", err)
	}
}

// TestPruneDeletesEventCalls: pruning a run deletes its calls' index
// entries with its events rows.
func TestPruneDeletesEventCalls(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := newRunR(t, s)
	w, err := s.RunWrite(ctx, responseWrite(run.Revision, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: w.Run.Revision, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.RunPrune(ctx, &store.RunPruneParams{Tenant: "t", FinishedBefore: w.Run.UpdatedAt.Add(1e12), Limit: 10})
	if err != nil || len(res.RunIDs) != 1 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM event_calls`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("event_calls after the prune: %d rows, %v", n, err)
	}
}
