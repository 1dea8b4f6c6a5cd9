package storesqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
)

// responseWrite is a model response of run r (revision rev) with k
// prepared calls c0..c(k-1) of turn 1.
func responseWrite(rev int64, k int) *store.RunWriteParams {
	p := &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`),
			Append: []json.RawMessage{json.RawMessage(`{"type":"message"}`)}},
		Events: []*store.EventRecord{{ID: "m", Type: "model.response", Data: json.RawMessage(`{"turn":1}`)}}}
	for i := range k {
		id := fmt.Sprintf("c%d", i)
		p.Ledger = append(p.Ledger, store.LedgerWrite{
			Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: id, Turn: 1, Index: i, Tool: "pay", Effect: "side-effect",
				State: store.LedgerPrepared, IdempotencyKey: "k-" + id, ArgsDigest: "d", Args: json.RawMessage(`{"n":1}`)},
			Event: &store.EventRecord{ID: "p" + id, Type: "tool.prepared", Data: json.RawMessage(`{"call":"` + id + `"}`)}})
	}
	return p
}

func newRunR(t *testing.T, s *Store) *store.Run {
	t.Helper()
	run, err := s.RunCreate(context.Background(), &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestEventRowOneRow: a model response with ten prepared calls is one
// events row (with the run row and the log row: three rows written), and
// reads back as eleven events and ten entries.
func TestEventRowOneRow(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "e.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := newRunR(t, s)
	before := s.Stats().RowsWritten
	if _, err := s.RunWrite(ctx, responseWrite(run.Revision, 10)); err != nil {
		t.Fatal(err)
	}
	if rows := s.Stats().RowsWritten - before; rows != 3 {
		t.Fatalf("rows written by the response: %d, want 3", rows)
	}
	var n, first, last int64
	var calls string
	if err := s.db.QueryRow(`SELECT COUNT(*), MIN(first_seq), MAX(seq), MAX(more_calls) FROM events WHERE tenant = 't' AND run_id = 'r'`).
		Scan(&n, &first, &last, &calls); err != nil {
		t.Fatal(err)
	}
	if n != 1 || first != 1 || last != 11 || calls != `["c0","c1","c2","c3","c4","c5","c6","c7","c8","c9"]` {
		t.Fatalf("events rows: %d, first_seq %d, seq %d, more_calls %s", n, first, last, calls)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 11 || evs[10].ID != "pc9" || evs[10].Seq != 11 {
		t.Fatalf("EventList: %d events, %v", len(evs), err)
	}
	list, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(list) != 10 || list[9].CallID != "c9" || list[9].Revision != 1 {
		t.Fatalf("LedgerList: %d entries, %v", len(list), err)
	}
}

// TestEventRowStartedTail: a model response written with its first call's
// start (c0 new and started, its record last; its prepared event a plain
// one) is the rows of the two writes it replaces: run, log, one events
// row for the response and the other calls, one for c0's start. c0's
// state is in the columns.
func TestEventRowStartedTail(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "e.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := newRunR(t, s)
	p := responseWrite(run.Revision, 10)
	c0 := p.Ledger[0]
	started := *c0.Entry
	started.State, started.Attempt = store.LedgerStarted, 1
	p.Events = append(p.Events, c0.Event)
	p.Ledger = append(p.Ledger[1:], store.LedgerWrite{Entry: &started, Event: &store.EventRecord{ID: "sc0", Type: "tool.started"}})
	before := s.Stats().RowsWritten
	res, err := s.RunWrite(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rows := s.Stats().RowsWritten - before; rows != 4 {
		t.Fatalf("rows written: %d, want 4", rows)
	}
	if n := len(res.Events); n != 12 || res.Events[11].ID != "sc0" || res.Events[11].Seq != 12 || res.Events[1].ID != "pc0" {
		t.Fatalf("the write's events: %d", n)
	}
	var n int64
	var state string
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM events WHERE tenant = 't' AND run_id = 'r'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("events rows: %d, %v", n, err)
	}
	if err := s.db.QueryRow(`SELECT state FROM events WHERE tenant = 't' AND run_id = 'r' AND seq = 12 AND call_id = 'c0' AND first_seq IS NULL`).
		Scan(&state); err != nil || state != "started" {
		t.Fatalf("c0's row: %q, %v", state, err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 12 || evs[11].ID != "sc0" || evs[10].ID != "pc9" {
		t.Fatalf("EventList: %d events, %v", len(evs), err)
	}
}

// TestEventRowCorrupt: a row of several records that does not match its
// checksum, or whose more column is not what it should be, fails the reads
// that meet it with a DataError naming it; other runs read on.
func TestEventRowCorrupt(t *testing.T) {
	for _, c := range []struct {
		name, set string
		args      []any
	}{
		{"checksum", `UPDATE events SET more_crc = more_crc + 1`, nil},
		{"not JSON", `UPDATE events SET more = ?, more_crc = ?`, []any{"[{", eventrow.Sum([]byte("[{"))}},
		{"one record short", `UPDATE events SET first_seq = first_seq + 1`, nil},
		{"more_calls", `UPDATE events SET more_calls = '["c1","c0"]'`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "e.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			run := newRunR(t, s)
			if _, err := s.RunWrite(ctx, responseWrite(run.Revision, 2)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec(c.set+` WHERE tenant = 't' AND run_id = 'r'`, c.args...); err != nil {
				t.Fatal(err)
			}
			wantData := func(what string, err error) {
				t.Helper()
				var de *store.DataError
				if !errors.As(err, &de) || de.Kind != "event" || de.ID != "r#3" {
					t.Fatalf("%s: %v, want a DataError naming event r#3", what, err)
				}
			}
			_, err = s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
			wantData("EventList", err)
			_, err = s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c0"})
			wantData("LedgerGet", err)
			_, err = s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
			wantData("LedgerList", err)
		})
	}
}

// TestKillInsideEventRow SIGKILLs a process inside a model response's
// write, after its one events row was written and before COMMIT: the store
// reopens with nothing of that write, and the write made again succeeds.
func TestKillInsideEventRow(t *testing.T) {
	if path := os.Getenv("STORESQLITE_KILL_EVENTROW_DB"); path != "" {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		run, err := s.RunGet(context.Background(), &store.RunGetParams{Tenant: "t", ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.RunWrite(context.Background(), responseWrite(run.Revision, 3))
		t.Fatalf("not killed (%v)", err)
	}
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := newRunR(t, s)
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillInsideEventRow$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STORESQLITE_KILL_EVENTROW_DB="+path, "ACTOVIQ_KILLPOINT="+killpoint.EventRowWrite)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("the child was not killed (%v):\n%s", err, out)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	got, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || got.Revision != run.Revision || len(got.Log) != 0 {
		t.Fatalf("after the kill the run is %+v, %v; want it as before the write", got, err)
	}
	if evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"}); err != nil || len(evs) != 0 {
		t.Fatalf("after the kill: %d events, %v", len(evs), err)
	}
	if _, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c0"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the kill, entry c0: %v", err)
	}
	if _, err := s.RunWrite(ctx, responseWrite(run.Revision, 3)); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"}); err != nil || len(evs) != 4 {
		t.Fatalf("the write made again: %d events, %v", len(evs), err)
	}
}

// TestCallLookupPlan: a call's current entry (the revision check of every
// ledger write, LedgerGet) is found by index, its one-record rows through
// events_by_call and the rows holding it in more through event_calls
// (0017) by call, never by a walk of the run's events or of its rows of
// several records (events_multi walked them all: O(turns) per new entry).
func TestCallLookupPlan(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := newRunR(t, s)
	if _, err := s.RunWrite(context.Background(), responseWrite(run.Revision, 3)); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"revision check": currentEntry,
		"LedgerGet":      multiRowOfCall,
	} {
		lines := plan(t, s, q, "t", "r", "c1")
		text := strings.Join(lines, "\n")
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN events") || strings.Contains(l, "USING PRIMARY KEY") && strings.Contains(l, "events") {
				t.Errorf("%s walks the run's events: %q\n%s", name, l, text)
			}
		}
		if name == "revision check" && !strings.Contains(text, "INDEX events_by_call (tenant=? AND run_id=? AND call_id=?)") {
			t.Errorf("%s: one-record rows not through events_by_call\n%s", name, text)
		}
		if !strings.Contains(text, "SEARCH c USING PRIMARY KEY (tenant=? AND run_id=? AND call_id=?)") {
			t.Errorf("%s: rows of several records not found through event_calls by call\n%s", name, text)
		}
		t.Logf("%s:\n%s", name, text)
	}
}
