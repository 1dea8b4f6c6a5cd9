package storepg

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// TestMigrateRunTree makes a schema with the migrations before run_tree,
// writes trees the way older versions left them (a running grandchild
// under a finished child, a tree whose root an older prune removed while a
// grandchild ran, a finished tree), then opens it with this package: each
// child's root is its topmost stored ancestor (or the first one already
// removed), a prune removes the finished tree only, and a child written
// since gets its root too.
func TestMigrateRunTree(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_tree_", func(m migration) bool { return strings.HasSuffix(m.Name, "_run_tree") })
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range [][3]string{
		{"a", "", "completed"}, {"a.1", "a", "completed"}, {"a.1.1", "a.1", "running"}, {"a.2", "a", "completed"},
		{"x.1", "x", "completed"}, {"x.1.1", "x.1", "running"}, // x was removed by an older prune
		{"b", "", "completed"}, {"b.1", "b", "completed"}, {"b.1.1", "b.1", "failed"},
	} {
		exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', $1, $2, '', 'a', 'd', $3, '{"v":1}', 1, 0, $4, $4)`, r[0], r[1], r[2], base.Add(time.Duration(i)*time.Second))
	}

	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roots := func() map[string]string {
		t.Helper()
		rows, err := s.pool.Query(ctx, s.q(`SELECT id, root_id FROM {{schema}}.runs WHERE tenant = 't'`))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for rows.Next() {
			var id, root string
			if err := rows.Scan(&id, &root); err != nil {
				t.Fatal(err)
			}
			out[id] = root
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := map[string]string{"a": "", "a.1": "a", "a.1.1": "a", "a.2": "a", "x.1": "x", "x.1.1": "x", "b": "", "b.1": "b", "b.1.1": "b"}
	if got := roots(); !maps.Equal(got, want) {
		t.Fatalf("roots after the migration = %v, want %v", got, want)
	}
	res, err := s.RunPrune(ctx, &store.RunPruneParams{Tenant: "t", FinishedBefore: time.Now().Add(time.Hour), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(res.RunIDs)); !slices.Equal(got, []string{"b", "b.1", "b.1.1"}) {
		t.Fatalf("pruned %v, want the finished tree b", got)
	}
	// A child written now: its root from its parent's.
	for _, c := range [][2]string{{"a.1.1.1", "a.1.1"}, {"a.3", "a"}} {
		if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: c[0], ParentID: c[1],
			AgentID: "a", AgentDigest: "d", Status: store.RunQueued}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := roots(); got["a.1.1.1"] != "a" || got["a.3"] != "a" {
		t.Fatalf("roots of new children: %v", got)
	}
}
