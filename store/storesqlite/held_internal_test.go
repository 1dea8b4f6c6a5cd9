package storesqlite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storetest"
)

// TestMigrateHeldCounts makes a file with the migrations before
// held_counts and claims the way older versions left them (live claims of
// running runs, expired unreleased ones of stalled runs, claims released
// long ago and lately, a resumed interrupted run's live claim), then opens
// it with this package: claims expired more than an hour ago are taken as
// released, the others as held, the counters count the runs whose claim is
// held, and the inbox's idle count agrees with a full count before and
// after claims are taken and released on the migrated store.
func TestMigrateHeldCounts(t *testing.T) {
	path, db, exec := fileBefore(t, func(m migration) bool { return strings.HasSuffix(m.Name, "_held_counts") })
	now := time.Now()
	us := func(d time.Duration) int64 { return micros(now.Add(d)) }
	type claim struct {
		holder            string
		heartbeat, expiry time.Duration
	}
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
		exec(`INSERT INTO runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', ?, '', '', 'a', 'd', ?, ?, '{"v":1}', 1, 0, ?, ?)`, r.id, r.status, r.kind, i+1, i+1)
		if r.c != nil {
			exec(`INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at) VALUES ('t', ?, ?, 1, ?, ?)`,
				store.RunClaimKey(r.id), r.c.holder, us(r.c.expiry), us(r.c.heartbeat))
		}
	}
	// Not a run's claim: not counted, whatever its state.
	exec(`INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at) VALUES ('t', 'children:d1:1', 'far:1:x', 1, ?, ?)`,
		us(time.Hour), us(0))
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var held []string
	rows, err := s.db.QueryContext(ctx, `SELECT key FROM claims WHERE tenant = 't' AND held = 1 ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		held = append(held, k)
	}
	rows.Close()
	if want := []string{"children:d1:1", "run:d1", "run:d2", "run:d3", "run:f1", "run:i2", "run:i3", "run:s1"}; !slices.Equal(held, want) {
		t.Fatalf("claims taken as held by the migration: %v, want %v", held, want)
	}
	checkHeldCounts(t, s, "after the migration", map[string]int64{"running/": 4, "interrupted/approval": 1, "interrupted/reconciliation": 1})

	storetest.MoveHeldClaims(t, s, "t")
	checkHeldCounts(t, s, "after claims taken and released", map[string]int64{"running/": 5, "interrupted/approval": 2, "interrupted/reconciliation": 1})
}

// checkHeldCounts compares the held-claim counters with a count of the held
// claims of runs, and the idle count of waiting runs (from the counters)
// with a full count of the runs whose claim is not live, at now, an hour
// before (claims released since were live then) and an hour after.
func checkHeldCounts(t *testing.T, s *Store, step string, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	got := map[string]int64{}
	rows, err := s.db.QueryContext(ctx, `SELECT status, wait_kind, n FROM held_counts WHERE tenant = 't' AND n <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st, k string
		var n int64
		if err := rows.Scan(&st, &k, &n); err != nil {
			t.Fatal(err)
		}
		got[st+"/"+k] = n
	}
	rows.Close()
	if !mapsEqual(got, want) {
		t.Fatalf("%s: held counters %v, want %v", step, got, want)
	}
	for _, d := range []time.Duration{0, -time.Hour, time.Hour} {
		now := s.now().Add(d)
		waiting := []store.RunStatus{store.RunInterrupted, store.RunRunning}
		counted, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		q, args := s.countQuery(&store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		full, err := scanCounts(ctx, s.db, q, args)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(counted, full) {
			t.Fatalf("%s, at %v: idle count %+v, full count %+v", step, d, counted, full)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
