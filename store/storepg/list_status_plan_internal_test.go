package storepg

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// explainGeneric is explain of q in the generic plan of a prepared
// statement (plan_cache_mode = force_generic_plan): the plan PostgreSQL
// may cache after five executions, which knows none of the parameters.
func explainGeneric(t *testing.T, s *Store, q string, args ...any) *planNode {
	t.Helper()
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, `RESET plan_cache_mode`) }()
	if _, err := conn.Exec(ctx, `PREPARE generic_plan AS `+s.q(q)); err != nil {
		t.Fatalf("prepare: %v\n%s", err, q)
	}
	defer func() { _, _ = conn.Exec(ctx, `DEALLOCATE generic_plan`) }()
	ph := make([]string, len(args))
	for i := range args {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE generic_plan(`+strings.Join(ph, ", ")+`)`,
		append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&raw); err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain output: %v %s", err, raw)
	}
	return &out[0].Plan
}

// TestListOneStatusPlan: a list of one status reads the page from
// runs_by_status, in a store where that status is most runs and the
// newest runs are of other statuses (a store after months of use: almost
// every run completed, the unfinished ones the newest). With "status =
// $n" the planner walked runs_by_created, filtering on the status, and
// read the 2,000 newer unfinished runs to find 51 completed ones; at
// 300,000 copies (internal/scaletest/seed) it read 16,000.
func TestListOneStatusPlan(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cols := `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, meta, deadline,
		revision, event_seq, created_at, updated_at`
	for i, q := range []string{
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'f' || lpad(n::text, 8, '0'), '', '', 'agent', 'd', 'completed', '', '{"v":1}',
				'{"padding":"` + strings.Repeat("x", 300) + `"}', NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 30000) n`,
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'w' || lpad(n::text, 8, '0'), '', '', 'agent', 'd', 'interrupted', 'approval', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + interval '1 day' + n * interval '1 second', $1::timestamptz + interval '1 day' + n * interval '1 second'
			FROM generate_series(1, 2000) n`,
		// A parent with 3,000 children, all completed, older than every
		// other run: a page of its completed children reads them from
		// runs_by_parent, not from the 30,000 completed runs of
		// runs_by_status, nor sorts all of the parent's children.
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'c' || lpad(n::text, 8, '0'), 'p', '', 'agent', 'd', 'completed', '', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz - interval '1 day' + n * interval '1 second', $1::timestamptz - interval '1 day' + n * interval '1 second'
			FROM generate_series(1, 3000) n`,
	} {
		if _, err := s.pool.Exec(ctx, s.q(q), base); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	if _, err := s.pool.Exec(ctx, s.q(`VACUUM ANALYZE {{schema}}.runs`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    store.RunListParams
	}{
		{"runs list --status completed", store.RunListParams{Tenant: "t", Status: store.RunCompleted, Summary: true, Limit: 51}},
		{"runs list --status completed, page 2", store.RunListParams{Tenant: "t", Status: store.RunCompleted, Summary: true, Limit: 51,
			After: &store.RunCursor{At: base.Add(20000 * time.Second), ID: "f00020000"}}},
		{"runs list --status completed,failed", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunCompleted, store.RunFailed},
			Summary: true, Limit: 51}},
		{"runs list --parent p --status completed", store.RunListParams{Tenant: "t", ParentID: "p", Status: store.RunCompleted,
			Summary: true, Limit: 51}},
	} {
		ix := []string{"runs_by_status"}
		if c.p.ParentID != "" {
			ix = []string{"runs_by_parent"}
		}
		q, args := s.listQuery(&c.p)
		checkPG(t, c.name, explain(t, s, q, args...), ix, 51)
		checkPG(t, c.name+", generic plan", explainGeneric(t, s, q, args...), ix, 51)
		runs, err := s.RunList(ctx, &c.p)
		if err != nil || len(runs) != 51 || runs[0].Status != store.RunCompleted {
			t.Fatalf("%s: %d runs, %v", c.name, len(runs), err)
		}
		want := "f00030000"
		if c.p.ParentID != "" {
			want = "c00003000"
		} else if c.p.After != nil {
			want = "f00019999"
		}
		if runs[0].ID != want || runs[50].ID >= runs[0].ID {
			t.Errorf("%s: %s ... %s, want from %s down", c.name, runs[0].ID, runs[50].ID, want)
		}
	}
}
