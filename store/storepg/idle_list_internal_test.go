package storepg

import (
	"context"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
)

// TestIdleListProbesClaimsByKey: a list of the runs without a live claim
// of another host (runs list --status stalled and --status interrupted,
// as the CLI asks them, its own host's claims aside) probes each run's
// claim by key, in a store where this host's processes held most claims
// (300,000 released ones) and 3,000 runs are driven by others. The
// planner estimates the live claims of other hosts from the holder
// statistics and, with the anti-join flattened, read all the live claims
// (here, and failing this test: a bitmap scan of the 3,000); in a store of
// 1,000,000 finished runs and 10,000 driven it joined every running run to
// all of them materialized: 50 million claim rows, 11-17 s for the
// stalled list.
func TestIdleListProbesClaimsByKey(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	base := time.Now().Add(-24 * time.Hour).UTC().Truncate(time.Second)
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := s.pool.Exec(ctx, q, args...)
		return err
	}
	const finished, released, driven, stalled = 1000, 300000, 3000, 100
	if err := scaletest.PostgreSQL(ctx, exec, s.quoted, scaletest.Spec{Tenant: "t", Finished: finished, Waiting: 500, Stalled: stalled,
		Driven: driven, Base: base, DrivenUntil: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held)
		SELECT 't', 'run:p' || lpad(n::text, 8, '0'), 'host:7:x', 1, $1::timestamptz, $1::timestamptz, false
		FROM generate_series(1, $2::int) n`,
		`ANALYZE {{schema}}.claims`,
	} {
		var args []any
		if len(q) > 40 {
			args = []any{base, released}
		}
		if _, err := s.pool.Exec(ctx, s.q(q), args...); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for _, c := range []struct {
		name string
		p    store.RunListParams
		max  float64
	}{
		// The stalled runs are older than the driven ones: the walk
		// passes every driven run, one claim probe each.
		{"stalled", store.RunListParams{Tenant: "t", Status: store.RunRunning,
			Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Limit: 51, Now: now}, driven + 2*51},
		{"interrupted", store.RunListParams{Tenant: "t", Status: store.RunInterrupted,
			Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Summary: true, Limit: 51, Now: now}, 51},
	} {
		q, args := s.listQuery(&c.p)
		p := explain(t, s, q, args...)
		var claims float64
		p.walk(func(n *planNode) {
			if n.Relation == "claims" {
				claims += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
				if n.Index != "claims_pkey" {
					t.Errorf("%s: claims read by %s %q, not by key\n%s", c.name, n.NodeType, n.Index, p)
				}
			}
		})
		t.Logf("%s: %.0f claim rows read", c.name, claims)
		if claims > c.max {
			t.Errorf("%s: read %.0f claims, want at most %.0f\n%s", c.name, claims, c.max, p)
		}
	}
	runs, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Status: store.RunRunning,
		Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Limit: 51, Now: now})
	if err != nil || len(runs) != 51 || runs[0].ID != scaletest.StalledID(stalled) {
		t.Fatalf("stalled list: %d runs, %v", len(runs), err)
	}
}
