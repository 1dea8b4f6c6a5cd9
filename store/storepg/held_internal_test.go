package storepg

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storetest"
)

// TestMigrateHeldCounts makes a schema with the migrations before
// held_counts and claims the way older versions left them (live claims of
// running runs, expired unreleased ones of stalled runs, claims released
// long ago and lately, a resumed interrupted run's live claim), then opens
// it with this package: claims expired more than an hour ago are taken as
// released, the others as held (with their run's group), the counters
// count the runs whose claim is held, and the inbox's idle count agrees
// with a full count before and after claims are taken and released on the
// migrated store.
func TestMigrateHeldCounts(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_held_", func(m migration) bool { return strings.HasSuffix(m.Name, "_held_counts") })
	ctx := context.Background()
	now := time.Now()
	type claim struct {
		holder            string
		heartbeat, expiry time.Duration
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range []struct {
		id, status, kind string
		c                *claim
	}{
		{"d1", "running", "", &claim{"far:1:x", -time.Second, time.Minute}},
		{"d2", "running", "", &claim{"far:2:x", -time.Second, time.Minute}},
		{"d3", "running", "", &claim{"far:3:x", -time.Second, time.Minute}},
		{"s1", "running", "", &claim{"gone:1:x", -10 * time.Minute, -9 * time.Minute}},            // stalled, lately
		{"s2", "running", "", &claim{"gone:2:x", -3 * time.Hour, -179 * time.Minute}},             // stalled long ago
		{"i1", "interrupted", "approval", &claim{"far:4:x", -3 * time.Hour, -2 * time.Hour}},      // released long ago
		{"i2", "interrupted", "approval", &claim{"far:5:x", -20 * time.Minute, -5 * time.Minute}}, // released lately
		{"i3", "interrupted", "reconciliation", &claim{"far:6:x", -time.Second, time.Minute}},     // being resumed
		{"i4", "interrupted", "reconciliation", nil},
		{"i5", "interrupted", "approval", &claim{"far:7:x", -2 * time.Hour, -2 * time.Hour}}, // released at its heartbeat
		{"q1", "queued", "", nil},
		{"f1", "completed", "", &claim{"far:8:x", -time.Second, time.Minute}}, // a finished run's live claim is not counted
	} {
		exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', $1, '', '', 'a', 'd', $2, $3, '{"v":1}', 1, 0, $4, $4)`, r.id, r.status, r.kind, base.Add(time.Duration(i)*time.Second))
		if r.c != nil {
			exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at) VALUES ('t', $1, $2, 1, $3, $4)`,
				store.RunClaimKey(r.id), r.c.holder, now.Add(r.c.expiry), now.Add(r.c.heartbeat))
		}
	}
	// Not a run's claim: not counted, whatever its state.
	exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at) VALUES ('t', 'children:d1:1', 'far:1:x', 1, $1, $2)`,
		now.Add(time.Hour), now)

	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.pool.Query(ctx, s.q(`SELECT key FROM {{schema}}.claims WHERE tenant = 't' AND held ORDER BY key`))
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"children:d1:1", "run:d1", "run:d2", "run:d3", "run:f1", "run:i2", "run:i3", "run:s1"}; !slices.Equal(held, want) {
		t.Fatalf("claims taken as held by the migration: %v, want %v", held, want)
	}
	checkHeldCounts(t, s, "after the migration", map[string]int64{"running/": 4, "interrupted/approval": 1, "interrupted/reconciliation": 1})

	storetest.MoveHeldClaims(t, s, "t")
	checkHeldCounts(t, s, "after claims taken and released", map[string]int64{"running/": 5, "interrupted/approval": 2, "interrupted/reconciliation": 1})
}

// checkHeldCounts compares the held-claim counters with want, and the idle
// count of waiting runs (from the counters) with a full count of the runs
// whose claim is not live, at now, an hour before (claims released since
// were live then) and an hour after.
func checkHeldCounts(t *testing.T, s *Store, step string, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	got := map[string]int64{}
	rows, err := s.pool.Query(ctx, s.q(`SELECT status || '/' || wait_kind, sum(n)::bigint FROM {{schema}}.held_counts
		WHERE tenant = 't' GROUP BY status, wait_kind HAVING sum(n) <> 0`))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g string
		var n int64
		if err := rows.Scan(&g, &n); err != nil {
			t.Fatal(err)
		}
		got[g] = n
	}
	rows.Close()
	if !maps.Equal(got, want) {
		t.Fatalf("%s: held counters %v, want %v", step, got, want)
	}
	for _, d := range []time.Duration{0, -time.Hour, time.Hour} {
		now := s.clock.Now().Add(d)
		waiting := []store.RunStatus{store.RunInterrupted, store.RunRunning}
		counted, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		q, args := s.countQuery(&store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		full, err := s.queryCounts(ctx, q, args)
		if err != nil {
			t.Fatal(err)
		}
		if full == nil {
			full = []store.RunCount{}
		}
		store.SortCounts(full)
		if !slices.Equal(counted, full) {
			t.Fatalf("%s, at %v: idle count %+v, full count %+v", step, d, counted, full)
		}
	}
}

// TestHeldCountsRaceUnfencedWrite: a write that changes a run's status
// without its claim (raw SQL here, as an operator's unfenced write would,
// held open) races a process taking the run's claim, which was released.
// Whichever commits second sees the first: the counters count the run
// under the status it ends with. With the group kept on held claims only
// (migration 017), the taking read the status from before the write and
// the run stayed counted as interrupted.
func TestHeldCountsRaceUnfencedWrite(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	r := &store.Run{Tenant: "t", ID: "r1", AgentID: "a", AgentDigest: "d", Status: store.RunRunning}
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: r, Holder: "h:1:x", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f := &store.Fence{Key: store.RunClaimKey("r1"), Holder: "h:1:x", Epoch: store.CreatedClaimEpoch}
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r1", Fence: f, Release: true,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, WaitKind: "approval"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, s.q(`UPDATE {{schema}}.runs SET status = 'running', wait_kind = '', revision = revision + 1
		WHERE tenant = 't' AND id = 'r1'`)); err != nil {
		t.Fatal(err)
	}
	taken := make(chan error, 1)
	go func() {
		_, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r1"), Holder: "h:2:x", TTL: time.Minute})
		taken <- err
	}()
	time.Sleep(300 * time.Millisecond) // the taking runs (or waits) while the write is open
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	checkHeldCounts(t, s, "after the race", map[string]int64{"running/": 1})
}

// TestHeldCountsRaceFirstClaim: as TestHeldCountsRaceUnfencedWrite, for a
// run that has no claim row yet, whose first claim is taken while the
// write is open: the taking waits for the write and counts the run under
// the status it ends with.
func TestHeldCountsRaceFirstClaim(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	r := &store.Run{Tenant: "t", ID: "r1", AgentID: "a", AgentDigest: "d", Status: store.RunInterrupted, WaitKind: "approval"}
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: r}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, s.q(`UPDATE {{schema}}.runs SET status = 'running', wait_kind = '', revision = revision + 1
		WHERE tenant = 't' AND id = 'r1'`)); err != nil {
		t.Fatal(err)
	}
	taken := make(chan error, 1)
	go func() {
		_, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r1"), Holder: "h:2:x", TTL: time.Minute})
		taken <- err
	}()
	time.Sleep(300 * time.Millisecond) // the taking runs (or waits) while the write is open
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	checkHeldCounts(t, s, "after the race", map[string]int64{"running/": 1})
}
