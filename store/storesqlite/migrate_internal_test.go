package storesqlite

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// TestMigrateKeepsRows writes runs, ledger entries, events and a session
// with the schema of version 4 (one row per session item, rowid tables),
// then opens the file with this package: every record reads back.
func TestMigrateKeepsRows(t *testing.T) {
	path, db, exec := fileBefore(t, func(m migration) bool { return m.Version > 4 })
	exec(`INSERT INTO runs (tenant, id, status, checkpoint, revision, event_seq, created_at, updated_at) VALUES ('t', 'r', 'running', '{"v":1}', 3, 2, 1, 2)`)
	exec(`INSERT INTO ledger (tenant, run_id, call_id, turn, idx, tool, state, args, revision, created_at, updated_at) VALUES ('t', 'r', 'c1', 1, 0, 'pay', 'started', '{"n":1}', 2, 1, 2)`)
	exec(`INSERT INTO events (tenant, run_id, seq, type, time, data) VALUES ('t', 'r', 1, 'run.started', 1, NULL), ('t', 'r', 2, 'tool.started', 2, '{"call_id":"c1"}')`)
	exec(`INSERT INTO sessions (tenant, session_id, revision, created_at, updated_at) VALUES ('t', 's', 2, 1, 1)`)
	exec(`INSERT INTO session_journal (tenant, session_id, seq, run_id, item) VALUES ('t', 's', 1, 'r', '"a"'), ('t', 's', 2, 'r', '"b"')`)
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || run.Revision != 3 || run.EventSeq != 2 || string(run.Checkpoint) != `{"v":1}` {
		t.Fatalf("run after migration: %+v, %v", run, err)
	}
	en, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c1"})
	if err != nil || en.State != store.LedgerStarted || en.Revision != 2 || string(en.Args) != `{"n":1}` {
		t.Fatalf("ledger entry after migration: %+v, %v", en, err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 2 || evs[1].Type != "tool.started" || string(evs[1].Data) != `{"call_id":"c1"}` {
		t.Fatalf("events after migration: %v, %v", evs, err)
	}
	st, err := s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if err != nil || st.Revision != 2 || len(st.Entries) != 2 || string(st.Entries[1].Item) != `"b"` {
		t.Fatalf("session after migration: %+v, %v", st, err)
	}
	// And the store goes on writing on the migrated file.
	next := *en
	next.State = store.LedgerCommitted
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: 2}},
		Events: []*store.EventRecord{{Type: "tool.committed", Data: json.RawMessage(`{}`)}}})
	if err != nil || res.Events[0].Seq != 3 || res.Ledger[0].Revision != 3 {
		t.Fatalf("write after migration: %+v, %v", res, err)
	}
}
