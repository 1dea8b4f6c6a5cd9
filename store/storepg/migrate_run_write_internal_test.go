package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// TestMigrateRunWriteSets: a store an earlier version (run_write of
// migration 019) wrote to, with a model response's prepared calls in one
// events row, a call started after it and an entry written without an
// event (a ledger table row), then opened with this package (migration 021
// replaces run_write): each entry's revision is found where the older
// function left it, the writes that follow commit at the next revisions
// with the entries' first creation times, and a miss is reported as
// before (the first in input order, with the revision found, 0 for no
// entry).
func TestMigrateRunWriteSets(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_rw021_", func(m migration) bool { return strings.HasSuffix(m.Name, "_run_write_sets") })
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
		VALUES ('t', 'r', '', '', 'a', 'd', 'running', '{}', 1, 0, $1, $1)`, t0)
	exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at) VALUES ('t', 'run:r', 'w', 1, $1, $1)`, t0.Add(24*time.Hour*365*10))
	fence := &store.Fence{Key: "run:r", Holder: "w", Epoch: 1}
	entry := func(call string, state store.LedgerState) *store.LedgerEntry {
		e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Turn: 1, Tool: "charge", Effect: "side-effect", State: state,
			IdempotencyKey: "r:" + call, ArgsDigest: "sha256:x", Args: json.RawMessage(`{"cents":500}`)}
		if state != store.LedgerPrepared {
			e.Holder, e.Epoch, e.Attempt, e.StartedAt = "w", 1, 1, t0
		}
		if state == store.LedgerCommitted {
			e.Result, e.CommittedAt = json.RawMessage(`{"ok":true}`), t0
		}
		return e
	}
	event := func(typ, call string) *store.EventRecord {
		return &store.EventRecord{Type: typ, ID: typ + "-" + call, Data: json.RawMessage(`{"call_id":"` + call + `"}`)}
	}
	// oldWrite is a run write through the older run_write, encoded as this
	// package encodes it.
	oldWrite := func(at time.Time, p *store.RunWriteParams) {
		t.Helper()
		if err := store.Check(p); err != nil {
			t.Fatal(err)
		}
		order := make([]int, len(p.Ledger))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(p.Ledger[a].Entry.CallID, p.Ledger[b].Entry.CallID) })
		la, err := ledgerArrays(p.Ledger, order, len(p.Events))
		if err != nil {
			t.Fatal(err)
		}
		c := newCall(p, order, la, at)
		exec(runWriteCall, c.args()...)
	}
	// The model response: ten prepared calls in one row (the first, c0, in
	// its columns, the others in more).
	resp := &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}
	for i := range 10 {
		call := fmt.Sprintf("c%d", i)
		resp.Ledger = append(resp.Ledger, store.LedgerWrite{Entry: entry(call, store.LedgerPrepared), Event: event("tool.prepared", call)})
	}
	oldWrite(t0, resp)
	// c0 started; x written without an event (its ledger table row).
	oldWrite(t0.Add(time.Second), &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Ledger: []store.LedgerWrite{
		{Entry: entry("c0", store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", "c0")},
		{Entry: entry("x", store.LedgerPrepared)},
	}})
	var folded int
	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.pool.QueryRow(ctx, s.q(`SELECT count(*) FROM {{schema}}.events WHERE more_calls IS NOT NULL`)).Scan(&folded); err != nil || folded != 1 {
		t.Fatalf("rows of several records before the writes: %d, %v; want 1", folded, err)
	}

	write := func(ws ...store.LedgerWrite) (*store.RunWriteResult, error) {
		return s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Ledger: ws})
	}
	conflict := func(err error, id string, expected, actual int64) {
		t.Helper()
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Kind != "ledger" || ce.ID != "r/"+id || ce.Expected != expected || ce.Actual != actual {
			t.Fatalf("got %v, want a ledger conflict on %s, expected %d, actual %d", err, id, expected, actual)
		}
	}
	// Misses, in each place an entry can be: in more (c2, at 1), in its
	// own row (c0, at 2), in the ledger table (x, at 1), nowhere (n, 0);
	// the first in input order is reported, not the first in call order.
	_, err = write(store.LedgerWrite{Entry: entry("c2", store.LedgerStarted), ExpectedRevision: 0, Event: event("tool.started", "c2")})
	conflict(err, "c2", 0, 1)
	_, err = write(store.LedgerWrite{Entry: entry("c2", store.LedgerStarted), ExpectedRevision: 2, Event: event("tool.started", "c2")})
	conflict(err, "c2", 2, 1)
	_, err = write(store.LedgerWrite{Entry: entry("x", store.LedgerStarted), ExpectedRevision: 2})
	conflict(err, "x", 2, 1)
	_, err = write(store.LedgerWrite{Entry: entry("n", store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", "n")})
	conflict(err, "n", 1, 0)
	_, err = write(
		store.LedgerWrite{Entry: entry("c3", store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", "c3")},
		store.LedgerWrite{Entry: entry("c0", store.LedgerCommitted), ExpectedRevision: 1, Event: event("tool.committed", "c0")},
		store.LedgerWrite{Entry: entry("c1", store.LedgerStarted), ExpectedRevision: 0, Event: event("tool.started", "c1")},
	)
	conflict(err, "c0", 1, 2)

	// The call write: c0 committed, c1 started; x moves in its table.
	res, err := write(
		store.LedgerWrite{Entry: entry("c0", store.LedgerCommitted), ExpectedRevision: 2, Event: event("tool.committed", "c0")},
		store.LedgerWrite{Entry: entry("c1", store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", "c1")},
		store.LedgerWrite{Entry: entry("x", store.LedgerStarted), ExpectedRevision: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		rev     int64
		created time.Time
	}{{3, t0}, {2, t0}, {2, t0.Add(time.Second)}} {
		if got := res.Ledger[i]; got.Revision != want.rev || !got.CreatedAt.Equal(want.created) {
			t.Errorf("write %d: revision %d, created %v; want %d, %v", i, got.Revision, got.CreatedAt, want.rev, want.created)
		}
	}
	if len(res.Events) != 2 || res.Events[0].Seq != 12 || res.Events[1].Seq != 13 {
		t.Fatalf("events %+v, want seq 12 and 13", res.Events)
	}
	// x, at 2 in its table, moves on; a miss reports its table's revision.
	if res, err = write(store.LedgerWrite{Entry: entry("x", store.LedgerCommitted), ExpectedRevision: 2}); err != nil || res.Ledger[0].Revision != 3 {
		t.Fatalf("x at 2 -> 3: %v", err)
	}
	_, err = write(store.LedgerWrite{Entry: entry("x", store.LedgerCommitted), ExpectedRevision: 2})
	conflict(err, "x", 2, 3)
	// New entries next to existing ones: n and m are new, c2 in more.
	res, err = write(
		store.LedgerWrite{Entry: entry("n", store.LedgerPrepared), ExpectedRevision: 0, Event: event("tool.prepared", "n")},
		store.LedgerWrite{Entry: entry("c2", store.LedgerStarted), ExpectedRevision: 1, Event: event("tool.started", "c2")},
		store.LedgerWrite{Entry: entry("m", store.LedgerPrepared), ExpectedRevision: 0},
	)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ledger[0].Revision != 1 || res.Ledger[1].Revision != 2 || res.Ledger[2].Revision != 1 || !res.Ledger[1].CreatedAt.Equal(t0) {
		t.Fatalf("revisions %d %d %d, c2 created %v", res.Ledger[0].Revision, res.Ledger[1].Revision, res.Ledger[2].Revision, res.Ledger[1].CreatedAt)
	}
	got := map[string]int64{}
	list, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		got[e.CallID] = e.Revision
	}
	want := map[string]int64{"c0": 3, "c1": 2, "c2": 2, "c3": 1, "c4": 1, "c5": 1, "c6": 1, "c7": 1, "c8": 1, "c9": 1, "x": 3, "n": 1, "m": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ledger %v, want %v", got, want)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: numbering not gapless", i, ev.Seq)
		}
	}
	if len(evs) != 15 {
		t.Fatalf("%d events, want 15", len(evs))
	}
}
