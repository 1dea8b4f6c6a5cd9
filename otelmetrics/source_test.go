package otelmetrics_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/otelmetrics"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestStoreSource: the gauges read from a real store (memory and a SQLite
// file): live runs by status, stalled ones apart, inbox items by wait kind
// with the oldest of each; finished runs are not counted.
func TestStoreSource(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"memory", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			var st store.Store
			switch backend {
			case "memory":
				st = storemem.New(&storemem.Config{Clock: clk.Now})
			case "sqlite":
				s, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), &storesqlite.Config{Clock: clk.Now})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				st = s
			}
			ctx := t.Context()
			mk := func(id string, status store.RunStatus, wait string) {
				t.Helper()
				r, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, AgentID: "a", Status: store.RunQueued, Checkpoint: []byte(`{}`)}})
				if err != nil {
					t.Fatal(err)
				}
				if status == store.RunQueued {
					return
				}
				if _, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Run: &store.RunUpdate{
					ExpectedRevision: r.Revision, Status: status, Checkpoint: []byte(`{}`), WaitKind: wait}}); err != nil {
					t.Fatal(err)
				}
			}
			mk("old-approval", store.RunInterrupted, "approval") // 12:00
			clk.Advance(10 * time.Minute)
			mk("stalled", store.RunRunning, "") // no claim: its creator is gone
			mk("recon", store.RunInterrupted, "reconciliation")
			clk.Advance(10 * time.Minute)
			mk("new-approval", store.RunInterrupted, "approval")
			mk("q1", store.RunQueued, "")
			mk("q2", store.RunQueued, "")
			mk("done", store.RunCompleted, "")
			clk.Advance(5 * time.Minute) // now 12:25

			s, err := otelmetrics.StoreSource(st, "t", clk.Now)(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantRuns := map[string]int64{"queued": 2, "running": 0, "stalled": 1, "interrupted": 3}
			for k, v := range wantRuns {
				if s.Runs[k] != v {
					t.Errorf("runs %s = %d, want %d (all: %v)", k, s.Runs[k], v, s.Runs)
				}
			}
			if _, ok := s.Runs["completed"]; ok {
				t.Errorf("finished runs counted: %v", s.Runs)
			}
			t12 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			want := map[string]otelmetrics.InboxKind{
				"approval":       {Items: 2, Oldest: t12},
				"reconciliation": {Items: 1, Oldest: t12.Add(10 * time.Minute)},
				"stalled":        {Items: 1, Oldest: t12.Add(10 * time.Minute)},
			}
			for k, w := range want {
				got := s.Inbox[k]
				if got.Items != w.Items || !got.Oldest.Equal(w.Oldest) {
					t.Errorf("inbox %s = %+v, want %+v", k, got, w)
				}
			}
			if len(s.Inbox) != len(want) {
				t.Errorf("inbox kinds %v", s.Inbox)
			}
		})
	}
}
