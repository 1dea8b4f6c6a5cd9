package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestRunsListPagesAndPrune: runs list is cut at --limit, says so and
// gives the cursor of the next page; following the cursors lists every
// waiting run once; runs prune removes the finished runs (a dry run
// first) and keeps the waiting ones.
func TestRunsListPagesAndPrune(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.dir, "a.db")
	st, err := storesqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := scaletest.SQLite(context.Background(), st.DB(), scaletest.Spec{Tenant: "default", Finished: 30, Waiting: 120,
		Base: time.Now().Add(-48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h.want(ExitCompleted, "runs", "list", "--store", h.store, "--status", "interrupted", "--limit", "50")
	out := h.stdout.String()
	if !strings.Contains(out, "cut at 50 runs; the next page: actoviq runs list --status interrupted --limit 50 --after ") {
		t.Fatalf("a cut list does not say so:\n%s", out)
	}
	seen := map[string]bool{}
	after := ""
	for pages := 1; ; pages++ {
		args := []string{"runs", "list", "--store", h.store, "--status", "interrupted", "--limit", "50", "--json"}
		if after != "" {
			args = append(args, "--after", after)
		}
		h.want(ExitCompleted, args...)
		var v runListJSON
		if err := json.Unmarshal(h.stdout.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		for _, r := range v.Runs {
			if seen[r.ID] || r.Status != "interrupted" {
				t.Fatalf("page %d: run %s (%s) again or not interrupted", pages, r.ID, r.Status)
			}
			seen[r.ID] = true
		}
		if v.Next == "" {
			if pages != 3 || len(seen) != 120 {
				t.Fatalf("%d runs in %d pages, want 120 in 3", len(seen), pages)
			}
			break
		}
		after = v.Next
	}
	h.want(ExitUsage, "runs", "list", "--store", h.store, "--after", "%%%")

	h.want(ExitCompleted, "runs", "prune", "--store", h.store, "--finished-before", "1h", "--dry-run", "--json")
	var dry struct {
		Runs   int64    `json:"runs"`
		DryRun bool     `json:"dry_run"`
		RunIDs []string `json:"run_ids"`
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &dry); err != nil || dry.Runs != 30 || !dry.DryRun || len(dry.RunIDs) != 30 {
		t.Fatalf("dry run: %v %s", err, h.stdout)
	}
	h.want(ExitCompleted, "runs", "prune", "--store", h.store, "--finished-before", "1h", "--batch", "7", "--unpaced")
	if !strings.Contains(h.stdout.String(), "removed 30 runs") || !strings.Contains(h.stdout.String(), "in 5 batches") {
		t.Fatalf("prune: %s", h.stdout)
	}
	h.want(ExitCompleted, "runs", "list", "--store", h.store, "--limit", "0", "--json")
	var all runListJSON
	if err := json.Unmarshal(h.stdout.Bytes(), &all); err != nil || len(all.Runs) != 120 {
		t.Fatalf("after prune: %d runs, %v", len(all.Runs), err)
	}
	h.want(ExitUsage, "runs", "prune", "--store", h.store)
	h.want(ExitUsage, "runs", "prune", "--store", h.store, "--finished-before", "soon")
}
