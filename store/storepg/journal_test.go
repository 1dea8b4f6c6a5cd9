package storepg_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// TestLogCompaction: a run's log written one append at a time reads back
// whole after the store's compactions (Close waits for them), after a
// merge of everything, and a damaged row is refused.
func TestLogCompaction(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{}`), Log: []json.RawMessage{json.RawMessage(`"first"`)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"first"`}
	rev := run.Revision
	for i := range 100 {
		it := fmt.Sprintf(`{"i":%d}`, i)
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Run: &store.RunUpdate{ExpectedRevision: rev,
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`), Append: []json.RawMessage{json.RawMessage(it)}}})
		if err != nil {
			t.Fatal(err)
		}
		rev = res.Run.Revision
		want = append(want, it)
	}
	s.Close() // waits for the compactions
	s = openStore(t, schema, nil)
	read := func() ([]string, int) {
		t.Helper()
		r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+schema+`.run_log WHERE tenant = 't' AND run_id = 'r'`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(r.Log))
		for i, it := range r.Log {
			out[i] = string(it)
		}
		return out, rows
	}
	got, rows := read()
	if !slices.Equal(got, want) {
		t.Fatalf("log after compaction: %d items, want %d", len(got), len(want))
	}
	// Every merge runs (they wait their turn, and Close waits for them):
	// rows 1-64 are one row, 65-96 another, 97-101 five.
	if rows != 7 {
		t.Fatalf("%d log rows for 101 appends, want 7 after the merges", rows)
	}
	if err := storepg.Compact(s, "t", "r", 0, 101); err != nil {
		t.Fatal(err)
	}
	got, rows = read()
	if !slices.Equal(got, want) || rows != 1 {
		t.Fatalf("after a full merge: %d items in %d rows", len(got), rows)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE `+schema+`.run_log SET items = replace(items, '"i":7', '"i":8')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"}); !errors.Is(err, store.ErrData) {
		t.Fatalf("a damaged log row read as %v", err)
	}
}
