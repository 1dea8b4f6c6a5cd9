package storesqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/store"
)

// logRun creates run r and appends n items, one write each; it returns
// the items.
func logRun(t *testing.T, s *Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{}`), Log: []json.RawMessage{json.RawMessage(`"first"`)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"first"`}
	rev := run.Revision
	for i := range n {
		it := fmt.Sprintf(`{"i":%d}`, i)
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Run: &store.RunUpdate{ExpectedRevision: rev,
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`), Append: []json.RawMessage{json.RawMessage(it)}}})
		if err != nil {
			t.Fatal(err)
		}
		rev = res.Run.Revision
		want = append(want, it)
	}
	return want
}

func readLog(t *testing.T, s *Store) ([]string, int) {
	t.Helper()
	r, err := s.RunGet(context.Background(), &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM run_log WHERE tenant = 't' AND run_id = 'r'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(r.Log))
	for i, it := range r.Log {
		out[i] = string(it)
	}
	return out, rows
}

func TestLogCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := logRun(t, s, 100)
	if err := s.Close(); err != nil { // waits for the compactions
		t.Fatal(err)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, rows := readLog(t, s)
	if !slices.Equal(got, want) {
		t.Fatalf("log after compaction: %d items, want %d", len(got), len(want))
	}
	// Every merge runs (they wait their turn, and Close waits for them):
	// rows 1-64 are one row, 65-96 another, 97-101 five.
	if rows != 7 {
		t.Fatalf("%d log rows for 101 appends, want 7 after the merges", rows)
	}
	// A merge of everything is one row, and reads the same.
	if err := s.compact(context.Background(), "t", "r", 0, 101); err != nil {
		t.Fatal(err)
	}
	got, rows = readLog(t, s)
	if !slices.Equal(got, want) || rows != 1 {
		t.Fatalf("after a full merge: %d items in %d rows", len(got), rows)
	}
	// A damaged row is refused, never read as something else.
	if _, err := s.db.Exec(`UPDATE run_log SET items = replace(items, '"i":7', '"i":8') WHERE tenant = 't' AND run_id = 'r'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunGet(context.Background(), &store.RunGetParams{Tenant: "t", ID: "r"}); !errors.Is(err, store.ErrData) {
		t.Fatalf("a damaged log row read as %v", err)
	}
}

// TestKillInsideJournal SIGKILLs a process inside a log append (after the
// row was written, before COMMIT) and inside a compaction (after the
// merged rows were deleted, and after the merged row was written), and
// checks that the log reads back whole, with nothing of the killed
// transaction.
func TestKillInsideJournal(t *testing.T) {
	if path := os.Getenv("STORESQLITE_KILL_DB"); path != "" {
		killChild(t, path)
		return
	}
	for _, point := range []string{killpoint.JournalWrite, killpoint.Compaction, killpoint.CompactionCommit} {
		t.Run(point, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.db")
			s, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := logRun(t, s, 40)
			s.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillInsideJournal$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STORESQLITE_KILL_DB="+path, "ACTOVIQ_KILLPOINT="+point)
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
			got, rows := readLog(t, s)
			if !slices.Equal(got, want) {
				t.Fatalf("log after a kill at %s: %d items, want %d", point, len(got), len(want))
			}
			t.Logf("kill at %s: %d items in %d rows", point, len(got), rows)
		})
	}
}

// killChild reaches the armed kill point: an append, then a merge.
func killChild(t *testing.T, path string) {
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ACTOVIQ_KILLPOINT") == killpoint.JournalWrite {
		_, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Run: &store.RunUpdate{ExpectedRevision: r.Revision,
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`), Append: []json.RawMessage{json.RawMessage(`"lost"`)}}})
	} else {
		err = s.compact(ctx, "t", "r", 0, 41)
	}
	t.Fatalf("not killed (%v)", err)
}
