package storepg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Migration 020 takes a store written at 019 forward: claims_interrupted
// indexes the claims of interrupted runs that the runs' writes marked
// before the upgrade. runs list --status running (running and
// interrupted runs whose claim is live) then finds the one interrupted
// run of 3,000 that a process holds through it (among the 53,020 claims
// of a store with 50,000 finished runs), reading that claim and
// that run, not the 3,000 interrupted runs, in a custom plan and in a
// generic one; and lists the same runs as before.
func TestMigrateClaimsInterrupted(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_cint_", func(m migration) bool { return strings.HasSuffix(m.Name, "_claims_interrupted") })
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	cols := `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, revision, event_seq, created_at, updated_at`
	exec(`INSERT INTO {{schema}}.runs (`+cols+`)
		SELECT 't', 'w' || lpad(n::text, 5, '0'), '', '', 'a', 'd', 'interrupted', 'approval', '{"v":1}', 1, 0,
			$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
		FROM generate_series(1, 3000) n`, now.Add(-24*time.Hour))
	exec(`INSERT INTO {{schema}}.runs (`+cols+`)
		SELECT 't', 'r' || lpad(n::text, 5, '0'), '', '', 'a', 'd', 'running', '', '{"v":1}', 1, 0,
			$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
		FROM generate_series(1, 20) n`, now.Add(-time.Hour))
	exec(`INSERT INTO {{schema}}.runs (`+cols+`)
		SELECT 't', 'f' || lpad(n::text, 6, '0'), '', '', 'a', 'd', 'completed', '', '{"v":1}', 1, 0,
			$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
		FROM generate_series(1, 50000) n`, now.Add(-72*time.Hour))
	// Every run was driven (the finished and interrupted ones' claims
	// released): w00010 is being resumed (held, live), w00020's drive
	// died (held, expired); the running runs are driven.
	exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held)
		SELECT 't', 'run:' || id, 'h:1:x', 1, updated_at, updated_at, true FROM {{schema}}.runs WHERE tenant = 't'`)
	exec(`UPDATE {{schema}}.claims SET held = false WHERE key LIKE 'run:w%' OR key LIKE 'run:f%'`)
	exec(`UPDATE {{schema}}.claims SET held = true, expires_at = $1 WHERE key = 'run:w00010'`, now.Add(time.Hour))
	exec(`UPDATE {{schema}}.claims SET held = true, expires_at = $1 WHERE key = 'run:w00020'`, now.Add(-time.Hour))
	exec(`UPDATE {{schema}}.claims SET expires_at = $1 WHERE key LIKE 'run:r%'`, now.Add(time.Hour))
	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tb := range []string{"runs", "claims"} {
		if _, err := s.pool.Exec(ctx, s.q(`VACUUM ANALYZE {{schema}}.`+tb)); err != nil {
			t.Fatal(err)
		}
	}
	p := store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
		Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now, Summary: true}
	q, args := s.listQuery(&p)
	for name, plan := range map[string]*planNode{"custom": explain(t, s, q, args...), "generic": explainGeneric(t, s, q, args...)} {
		var runs, claims float64
		used := false
		plan.walk(func(n *planNode) {
			read := (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
			switch {
			case n.Relation == "runs":
				runs += read
			case n.Index == "claims_interrupted":
				used = true
				claims += read
			}
		})
		if !used || runs > 21 || claims > 1 {
			t.Errorf("%s plan: read %.0f runs, want the 21 listed, and %.0f claims through claims_interrupted (used: %v), want the one live\n%s",
				name, runs, claims, used, plan)
		}
	}
	runs, err := s.RunList(ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(ids) != 21 || ids[0] != "r00020" || ids[19] != "r00001" || ids[20] != "w00010" {
		t.Errorf("running: %v, want r00020 .. r00001 and w00010", ids)
	}
	// A resumed run leaves the index's rows (its claim's run_status
	// follows the run), and a run that becomes interrupted under its
	// live claim enters them.
	if _, err := s.pool.Exec(ctx, s.q(`UPDATE {{schema}}.runs SET status = 'running', wait_kind = '' WHERE tenant = 't' AND id = 'w00010'`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`UPDATE {{schema}}.runs SET status = 'interrupted', wait_kind = 'approval' WHERE tenant = 't' AND id = 'r00005'`)); err != nil {
		t.Fatal(err)
	}
	runs, err = s.RunList(ctx, &store.RunListParams{Tenant: "t", Status: store.RunInterrupted, Claim: store.ClaimFilter{State: store.ClaimLive},
		Limit: 51, Now: now, Summary: true})
	if err != nil || len(runs) != 1 || runs[0].ID != "r00005" {
		t.Errorf("interrupted with a live claim after the writes: %d runs, %v", len(runs), err)
	}
}
