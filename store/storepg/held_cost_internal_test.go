package storepg

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
)

// TestIdleCountCostsNoDrivenRun: the inbox's idle count (the counters of
// runs and of held claims, less the held claims expired by now) of a
// tenant whose runs other hosts drive reads no claim and no run, with 100
// runs driven and with 10,000 (each tenant of one
// schema also holds 1,000 waiting runs and 2,000 stalled ones, no claim,
// and 100,000 finished runs, each with the claim its last drive released),
// in the generic plan of the prepared statement: the latest release, one
// index entry, and no live claim.
// Once it read one live claim and one run per run driven; then, with
// released claims many times the live ones, the released claims live at
// now (none) through claims_runs, which read the 10,000 live ones.
func TestIdleCountCostsNoDrivenRun(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	base := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Second) // the finished runs (a day and more) end before now
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := s.pool.Exec(ctx, q, args...)
		return err
	}
	for tenant, driven := range map[string]int{"few": 100, "many": 10000} {
		if err := scaletest.PostgreSQL(ctx, exec, s.quoted, scaletest.Spec{Tenant: tenant, Finished: 100000, Waiting: 1000, Stalled: 2000,
			Driven: driven, Base: base, DrivenUntil: time.Now().Add(24 * time.Hour), Prefix: tenant}); err != nil {
			t.Fatal(err)
		}
		// The claims the finished runs' drives released (a release sets
		// the expiry to its time).
		if err := exec(ctx, s.q(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held, run_status, run_wait_kind)
			SELECT tenant, 'run:' || id, 'gone:1:x', 1, updated_at, updated_at, false, status, wait_kind FROM {{schema}}.runs
			WHERE tenant = $1 AND status IN ('completed', 'failed', 'cancelled')`), tenant); err != nil {
			t.Fatal(err)
		}
	}
	if err := exec(ctx, s.q(`VACUUM ANALYZE {{schema}}.claims`)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	buffers := map[string]float64{}
	for _, tenant := range []string{"few", "many"} {
		// The plan a prepared statement may get after a few executions:
		// a generic one, which knows neither the tenant nor the time (the
		// more demanding: it cannot see that no held claim has expired).
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		var raw []byte
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `PREPARE idle_`+tenant+` AS `+s.q(countersCount+liveCount)); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE idle_`+tenant+`($1, $2, $3)`,
			pgx.QueryExecModeSimpleProtocol, tenant, []string{"interrupted", "running"}, now).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `RESET plan_cache_mode`); err != nil {
			t.Fatal(err)
		}
		var out []struct {
			Plan struct {
				planNode
				SharedHit  float64 `json:"Shared Hit Blocks"`
				SharedRead float64 `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
			t.Fatalf("explain: %v %s", err, raw)
		}
		p := &out[0].Plan
		var claims, latest, runs float64
		p.walk(func(n *planNode) {
			read := (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
			switch {
			case n.Relation == "claims" && n.Alias == "m":
				latest += read
			case n.Relation == "claims":
				claims += read
			case n.Relation == "runs":
				runs += read
				if n.NodeType == "Seq Scan" {
					// Not run here (no claim to join), but it would read
					// every run of the statuses when one is.
					t.Errorf("%s: the idle count's plan scans runs\n%s", tenant, &p.planNode)
				}
			}
		})
		if claims > 0 || runs > 0 || latest > 1 {
			t.Errorf("%s: the idle count read %.0f claims (and %.0f for the latest release, want 1) and %.0f runs, want none\n%s",
				tenant, claims, latest, runs, &p.planNode)
		}
		buffers[tenant] = p.SharedHit + p.SharedRead
		counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: tenant, Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
			Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.RunCount{{Status: store.RunInterrupted, WaitKind: "approval", N: 500},
			{Status: store.RunInterrupted, WaitKind: "reconciliation", N: 500}, {Status: store.RunRunning, N: 2000}}
		if len(counts) != len(want) || counts[0] != want[0] || counts[1] != want[1] || counts[2] != want[2] {
			t.Errorf("%s: idle counts %+v, want %+v", tenant, counts, want)
		}
	}
	// Buffers are logged, not asserted: the counters' rows took one
	// update per row seeded, and VACUUM cannot remove those versions
	// while another session of a shared server holds an older snapshot.
	// Vacuumed (a server of one's own), both read 9.
	t.Logf("idle count buffers: %.0f with 100 runs driven, %.0f with 10,000", buffers["few"], buffers["many"])
}
