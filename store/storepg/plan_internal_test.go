package storepg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// planNode is one node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	NodeType       string     `json:"Node Type"`
	Relation       string     `json:"Relation Name"`
	Alias          string     `json:"Alias"`
	Index          string     `json:"Index Name"`
	ActualRows     float64    `json:"Actual Rows"`
	ActualLoops    float64    `json:"Actual Loops"`
	RemovedFilter  float64    `json:"Rows Removed by Filter"`
	RemovedRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans          []planNode `json:"Plans"`
}

func (n *planNode) walk(fn func(n *planNode)) {
	fn(n)
	for i := range n.Plans {
		n.Plans[i].walk(fn)
	}
}

func (n *planNode) String() string {
	b, _ := json.MarshalIndent(n, "", " ")
	return string(b)
}

// openPlanStore opens a store on a fresh schema of the test server and
// drops the schema at cleanup.
func openPlanStore(t *testing.T) *Store {
	t.Helper()
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "t_plan_" + hex.EncodeToString(b)
	ctx := context.Background()
	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.pool.Exec(context.Background(), `DROP SCHEMA `+s.quoted+` CASCADE`)
		s.Close()
	})
	return s
}

// seedLargePG fills the store with finished runs generated in SQL, plus
// waiting, queued and running ones and a few children and sessions.
func seedLargePG(t *testing.T, s *Store, finished int) time.Time {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cols := `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, meta, deadline,
		revision, event_seq, created_at, updated_at`
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'f' || lpad(n::text, 8, '0'), CASE WHEN n % 10 = 0 THEN 'f' || lpad((n - 1)::text, 8, '0') ELSE '' END,
				CASE WHEN n % 7 = 0 THEN 's' || (n % 1000) ELSE '' END, 'agent', 'd',
				(ARRAY['completed', 'failed', 'cancelled'])[n % 3 + 1], '', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + (n + 5) * interval '1 second'
			FROM generate_series(1, $2::int) n`, []any{base, finished}},
		{`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'w' || lpad(n::text, 5, '0'), '', '', 'agent', 'd', 'interrupted',
				CASE n % 2 WHEN 0 THEN 'approval' ELSE 'reconciliation' END, '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 500) n`, []any{base.Add(time.Duration(finished) * 2 * time.Second)}},
		{`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'q' || lpad(n::text, 5, '0'), '', '', 'agent', 'd', CASE WHEN n <= 10 THEN 'queued' ELSE 'running' END, '',
				'{"v":1}', NULL, NULL, 1, 0, $1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 20) n`, []any{base.Add(time.Duration(finished) * 3 * time.Second)}},
		{`VACUUM ANALYZE {{schema}}.runs`, nil},
	}
	for i, st := range stmts {
		if _, err := s.pool.Exec(ctx, s.q(st.q), st.args...); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	return base.Add(time.Duration(finished) * 4 * time.Second)
}

// explain runs EXPLAIN (ANALYZE, FORMAT JSON) of q: the plan with the rows
// each node actually read (counts, not times: facts on a loaded machine).
func explain(t *testing.T, s *Store, q string, args ...any) *planNode {
	t.Helper()
	var raw []byte
	if err := s.pool.QueryRow(context.Background(), `EXPLAIN (ANALYZE, FORMAT JSON) `+s.q(q), args...).Scan(&raw); err != nil {
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

// checkPG asserts that the runs table r is read only through one of the
// named indexes, never scanned, and that the rows read from it (returned
// plus removed by a filter, over every loop) stay within maxRows: the
// page, not the finished runs.
func checkPG(t *testing.T, name string, p *planNode, index []string, maxRows float64) {
	t.Helper()
	used := false
	var read float64
	p.walk(func(n *planNode) {
		if n.Relation != "runs" {
			return
		}
		if n.NodeType == "Seq Scan" {
			t.Errorf("%s: sequential scan of runs (%s)\n%s", name, n.Alias, p)
		}
		for _, ix := range index {
			used = used || n.Index == ix
		}
		if n.Alias == "r" {
			read += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		}
	})
	if !used && len(index) > 0 {
		t.Errorf("%s: uses none of %v\n%s", name, index, p)
	}
	if maxRows > 0 && read > maxRows {
		t.Errorf("%s: read %.0f rows of runs, want at most %.0f\n%s", name, read, maxRows, p)
	}
}

// TestQueryPlans seeds 200,000 finished runs and checks with EXPLAIN
// ANALYZE that the claim, list, inbox, count and prune queries use an
// index and read no finished run (prune reads only finished ones, oldest
// first).
func TestQueryPlans(t *testing.T) {
	s := openPlanStore(t)
	const finished = 200000
	now := seedLargePG(t, s, finished)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// The claim: queued and running runs only (20 of them), through the
	// partial index or the status index, whichever the planner costs less.
	claimIx := []string{"runs_active", "runs_by_status"}
	checkPG(t, "claim", explain(t, s, claimNextPick, "t", now, true, now.Add(-time.Minute), []string(nil)), claimIx, 20)
	checkPG(t, "claim by agent", explain(t, s, claimNextPick, "t", now, false, now.Add(-time.Minute), []string{"a", "b"}), claimIx, 20)

	waitBase := base.Add(time.Duration(finished) * 2 * time.Second)
	for _, c := range []struct {
		name  string
		p     store.RunListParams
		index []string
		max   float64
	}{
		{"runs list --status interrupted", store.RunListParams{Tenant: "t", Status: store.RunInterrupted, Summary: true, Limit: 51},
			[]string{"runs_by_status"}, 51},
		{"runs list --status interrupted, page 2", store.RunListParams{Tenant: "t", Status: store.RunInterrupted, Summary: true, Limit: 51,
			After: &store.RunCursor{At: waitBase.Add(300 * time.Second), ID: "w00300"}}, []string{"runs_by_status"}, 51},
		{"runs list", store.RunListParams{Tenant: "t", Summary: true, Limit: 51}, []string{"runs_by_created"}, 51},
		{"runs list, page 2", store.RunListParams{Tenant: "t", Summary: true, Limit: 51,
			After: &store.RunCursor{At: base.Add(50000 * time.Second), ID: "f00050000"}}, []string{"runs_by_created"}, 51},
		{"stalled", store.RunListParams{Tenant: "t", Status: store.RunRunning, Claim: store.ClaimFilter{State: store.ClaimIdle},
			Limit: 51, Now: now}, []string{"runs_by_status", "runs_waiting", "runs_active"}, 51},
		{"stalled, this host's claims aside", store.RunListParams{Tenant: "t", Status: store.RunRunning,
			Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Limit: 51, Now: now},
			[]string{"runs_by_status", "runs_waiting", "runs_active"}, 51},
		{"runs list --status interrupted, this host's claims aside", store.RunListParams{Tenant: "t", Status: store.RunInterrupted,
			Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Summary: true, Limit: 51, Now: now},
			[]string{"runs_by_status"}, 51},
		{"running", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
			Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now},
			[]string{"runs_by_status", "runs_waiting"}, 600},
		{"inbox page", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
			Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Order: store.RunsWaitingLongest, Limit: 51, Now: now},
			[]string{"runs_waiting"}, 2 * 51},
		{"inbox page 2", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
			Claim: store.ClaimFilter{State: store.ClaimIdle}, Order: store.RunsWaitingLongest, Limit: 51, Now: now,
			After: &store.RunCursor{At: waitBase.Add(100 * time.Second), ID: "w00100"}}, []string{"runs_waiting"}, 2 * 51},
		{"children", store.RunListParams{Tenant: "t", ParentID: "f00000009", Limit: 51}, []string{"runs_by_parent"}, 51},
	} {
		q, args := s.listQuery(&c.p)
		p := explain(t, s, q, args...)
		checkPG(t, c.name, p, c.index, c.max)
		if c.p.Claim.State != store.ClaimIdle {
			continue
		}
		// An idle filter probes each run's claim by key: not the 5,003
		// live claims, read or hashed or materialized.
		var claims float64
		p.walk(func(n *planNode) {
			if n.Relation == "claims" {
				claims += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
			}
		})
		if claims > c.max {
			t.Errorf("%s: read %.0f claims, want at most %.0f\n%s", c.name, claims, c.max, p)
		}
	}
	// The inbox's totals read the counters, and of runs only those a live
	// claim takes out (none here).
	totals := explain(t, s, countersCount+liveCount, "t", []string{"interrupted", "running"}, now)
	checkPG(t, "inbox totals", totals, nil, 0)
	readCounters := false
	totals.walk(func(n *planNode) {
		readCounters = readCounters || n.Relation == "run_counts"
		if n.Relation == "runs" && n.ActualLoops > 0 && n.ActualRows+n.RemovedFilter > 0 {
			t.Errorf("inbox totals read %.0f runs\n%s", n.ActualRows+n.RemovedFilter, totals)
		}
	})
	if !readCounters {
		t.Errorf("inbox totals do not read the counters\n%s", totals)
	}
	// The runs this host holds (the inbox's totals add those whose
	// process is gone): this host's 3 live claims through claims_host, not
	// the other hosts' 5,000 live claims nor this host's 2,000 expired
	// ones; each run by key.
	seedClaimsPG(t, s, now)
	held := store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "host:"}
	waiting := []store.RunStatus{store.RunInterrupted, store.RunRunning}
	q, args := s.listQuery(&store.RunListParams{Tenant: "t", Statuses: waiting, Claim: held, Now: now, Summary: true})
	checkHeldPG(t, "runs held here", explain(t, s, q, args...))
	q, args = s.countQuery(&store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: held, Now: now})
	checkHeldPG(t, "runs held here, counted", explain(t, s, q, args...))
	// A prune removes the claims its runs own (child-budget places,
	// cancel requests) by a key range per run through claims_owned: among
	// 3,000 places of 1,000 trees, the 3 of the pruned tree are read.
	if _, err := s.pool.Exec(context.Background(), s.q(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', 'children:f' || lpad((n / 3 + 1)::text, 8, '0') || ':' || (n % 3), 'child x', 1, $1::timestamptz, $1
		FROM generate_series(0, 2999) n`), now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(context.Background(), s.q(`ANALYZE {{schema}}.claims`)); err != nil {
		t.Fatal(err)
	}
	owned := explain(t, s, `SELECT c.key FROM (SELECT 't'::text AS tenant, unnest($1::text[]) AS id) v
		CROSS JOIN (VALUES ('children:'), ('cancel:')) p(k) JOIN {{schema}}.claims c ON `+ownedClaim, []string{"f00000500"})
	var ownedRead float64
	owned.walk(func(n *planNode) {
		if n.Relation != "claims" {
			return
		}
		ix := n.Index
		if n.NodeType == "Bitmap Heap Scan" && len(n.Plans) == 1 {
			ix = n.Plans[0].Index
		}
		if ix != "claims_owned" {
			t.Errorf("owned claims read by %s %q, not claims_owned\n%s", n.NodeType, ix, owned)
		}
		ownedRead += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
	})
	// 3 rows over 2 loops (children, cancel): PostgreSQL reports the
	// average per loop, rounded (2), so at most 4 is counted.
	if ownedRead < 3 || ownedRead > 4 {
		t.Errorf("owned claims: read %.0f claims, want the tree's 3\n%s", ownedRead, owned)
	}
	// The inbox's idle count subtracts the runs a live claim holds: the
	// held-claim counters, less the held claims expired by now, plus the
	// released ones that expire after it, both through claims_held: not
	// the 5,003 live claims (the runs being driven), not the 2,000
	// released ones (the released ones only when the latest release, one
	// index entry, expires after now).
	totals = explain(t, s, countersCount+liveCount, "t", []string{"interrupted", "running"}, now)
	var totalsClaims float64
	totals.walk(func(n *planNode) {
		if n.Relation != "claims" || n.Alias == "m" && n.ActualRows <= 1 {
			return
		}
		ix := n.Index
		if n.NodeType == "Bitmap Heap Scan" && len(n.Plans) == 1 {
			ix = n.Plans[0].Index
		}
		if ix != "claims_held" {
			t.Errorf("inbox totals read claims by %s %q, not claims_held\n%s", n.NodeType, ix, totals)
		}
		totalsClaims += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
	})
	if totalsClaims > 0 {
		t.Errorf("inbox totals read %.0f claims, want none (no held claim expired)\n%s", totalsClaims, totals)
	}
	// runs list --status running decides its side from capped counts of
	// claims_held's entries.
	capped := explain(t, s, heldCapped, "t", now, int64(100))
	capped.walk(func(n *planNode) {
		if n.Relation == "claims" && n.Index != "claims_held" {
			t.Errorf("capped counts of held claims: claims read by %s %q, not claims_held\n%s", n.NodeType, n.Index, capped)
		}
	})
	running := store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
		Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now, Summary: true}
	// The approval escalation's due timers: through claims_host, the 3
	// due ones read, not the 3,000 not yet due nor the other claims.
	dueP := explain(t, s, claimsDue, "t", store.EscalationHolderPrefix, now, int64(100))
	var dueRead float64
	dueP.walk(func(n *planNode) {
		if n.Relation != "claims" {
			return
		}
		ix := n.Index
		if n.NodeType == "Bitmap Heap Scan" && len(n.Plans) == 1 {
			ix = n.Plans[0].Index
		}
		if ix != "claims_host" {
			t.Errorf("due escalation timers read by %s %q, not claims_host\n%s", n.NodeType, ix, dueP)
		}
		dueRead += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
	})
	if dueRead != 3 {
		t.Errorf("due escalation timers: read %.0f claims, want the 3 due\n%s", dueRead, dueP)
	}
	// And the running list answers from the claims side (the counters say
	// few of the 510 run), as the runs side does.
	ctx0 := context.Background()
	if from, err := s.liveFromClaims(ctx0, &running); err != nil || !from {
		t.Fatalf("running list: from the claims side %v, %v", from, err)
	}
	live, err := s.RunList(ctx0, &running)
	if err != nil {
		t.Fatal(err)
	}
	q, args = s.listQueryFrom(&running, false)
	walkedRows, err := s.pool.Query(ctx0, s.q(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := collectRuns(walkedRows, true)
	if err != nil || len(live) != 3 || len(walked) != 3 {
		t.Fatalf("running list: %d from the claims side, %d from the runs side, %v", len(live), len(walked), err)
	}
	for i := range live {
		if live[i].ID != walked[i].ID {
			t.Fatalf("running list from the claims side %s, from the runs side %s (at %d)", live[i].ID, walked[i].ID, i)
		}
	}
	due, err := s.ClaimList(context.Background(), &store.ClaimListParams{Tenant: "t", HolderPrefix: store.EscalationHolderPrefix, ExpiredBy: now, Limit: 100})
	if err != nil || len(due) != 3 || due[0].Key != "escalate:w00001" || due[2].Key != "escalate:w00003" {
		t.Fatalf("due escalation timers: %d, %v", len(due), err)
	}
	// The live inbox's stamp: no finished run read (the newest waiting
	// one, through runs_waiting backwards; the bound allows the planner
	// the waiting runs, not more).
	stampP := explain(t, s, waitingStamp, "t", now)
	checkPG(t, "waiting stamp", stampP, []string{"runs_waiting", "runs_by_status"}, 510)
	// Nor the 8,003 live claims, nor the released ones: two probes of
	// claims_live (the latest expiry, the earliest live one), claims_held's
	// held and expired range (none here) and one probe of its released
	// range (the latest release).
	var stampClaims float64
	stampP.walk(func(n *planNode) {
		if n.Relation == "claims" {
			stampClaims += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		}
	})
	if stampClaims > 3 {
		t.Errorf("waiting stamp: read %.0f claims, want at most the 3 probes\n%s", stampClaims, stampP)
	}
	// The prune walks the finished runs oldest first, one batch (the first
	// 5,000 have live claims: it starts after them). Tree f00005109 (its
	// child f00005110 is finished) has a running grandchild:
	// neither is picked, and the tree rule is one probe of runs_open_tree
	// (the unfinished children) and one of the root by key per run.
	if _, err := s.pool.Exec(context.Background(), s.q(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, wait_kind,
		status, checkpoint, revision, event_seq, created_at, updated_at)
		VALUES ('t', 'g-running', 'f00005110', '', 'agent', 'd', '', 'running', '{"v":1}', 1, 0, $1, $1)`), now); err != nil {
		t.Fatal(err)
	}
	pick := prunePick
	args = []any{"t", base.Add(100000 * time.Second), now, false, int64(500), base.Add(100 * time.Second), "f00000100"}
	pp := explain(t, s, pick, args...)
	checkPG(t, "prune", pp, []string{"runs_finished"}, 0)
	var treeRead, treeLoops float64
	pp.walk(func(n *planNode) {
		switch {
		case n.Relation == "runs" && n.Alias == "o":
			if n.Index != "runs_open_tree" {
				t.Errorf("prune's tree rule reads its unfinished runs by %s %q, not runs_open_tree\n%s", n.NodeType, n.Index, pp)
			}
			treeRead += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
			treeLoops += n.ActualLoops
		case n.Relation == "runs" && n.Alias == "rt" && n.Index != "runs_pkey":
			t.Errorf("prune's tree rule reads the root by %s %q, not by key\n%s", n.NodeType, n.Index, pp)
		}
	})
	// One probe per run looked at (about 500), and it reads only the
	// running grandchild (for the two runs of its tree).
	if treeLoops == 0 || treeRead > 2 {
		t.Errorf("prune's tree rule: %.0f probes read %.0f rows, want at most the 2 of the open tree\n%s", treeLoops, treeRead, pp)
	}
	rows, err := s.pool.Query(context.Background(), s.q(pick), args...)
	if err != nil {
		t.Fatal(err)
	}
	picked := map[string]bool{}
	for rows.Next() {
		var tenant, id string
		var at time.Time
		if err := rows.Scan(&tenant, &id, &at); err != nil {
			t.Fatal(err)
		}
		picked[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if picked["f00005109"] || picked["f00005110"] || !picked["f00005108"] || !picked["f00005120"] || len(picked) != 500 {
		t.Errorf("prune picked %d runs; the open tree's root %v, child %v; others %v %v", len(picked),
			picked["f00005109"], picked["f00005110"], picked["f00005108"], picked["f00005120"])
	}

	// And the queries answer right.
	ctx := context.Background()
	run, _, err := s.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "h", TTL: time.Minute})
	if err != nil || run.ID != "q00001" {
		t.Fatalf("claim = %v, %v", run, err)
	}
	page, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		Claim: store.ClaimFilter{State: store.ClaimIdle}, Order: store.RunsWaitingLongest, Limit: 50, Summary: true, Now: now})
	if err != nil || len(page) != 50 || page[0].ID != "w00001" || page[49].ID != "w00050" {
		t.Fatalf("inbox page: %d runs, %v", len(page), err)
	}
	heldRuns, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Statuses: waiting, Claim: held,
		Order: store.RunsWaitingLongest, Summary: true, Now: now})
	if err != nil || len(heldRuns) != 3 || heldRuns[0].ID != "w00401" || heldRuns[2].ID != "w00403" {
		t.Fatalf("runs held here: %d runs, %v", len(heldRuns), err)
	}
	counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted}})
	if err != nil || len(counts) != 2 || counts[0].N != 250 || counts[1].N != 250 {
		t.Fatalf("counts = %+v, %v", counts, err)
	}
	if !strings.Contains(claimNextPick, "IN ('queued', 'running')") {
		t.Fatal("the claim's condition is not runs_active's")
	}
}

// TestSessionLoadPlan fills a session of 100,000 items (20,000 appends of
// 5) beside other sessions and checks with EXPLAIN ANALYZE that loading its
// last 1,000 items as of a revision reads the journal through its primary
// key and only the rows that hold them, not the session.
func TestSessionLoadPlan(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO {{schema}}.sessions (tenant, session_id, revision)
			SELECT 't', 's' || k, 100000 FROM generate_series(1, 3) k`,
		`INSERT INTO {{schema}}.session_entries (tenant, session_id, seq, run_id, turn, n, crc, item)
			SELECT 't', 's' || k, (n - 1) * 5 + 1, 'r' || n, 1, 5, NULL, '1' || chr(30) || '2' || chr(30) || '3' || chr(30) || '4' || chr(30) || '5'
			FROM generate_series(1, 3) k, generate_series(1, 20000) n`,
		`VACUUM ANALYZE {{schema}}.session_entries`,
	} {
		if _, err := s.pool.Exec(ctx, s.q(q)); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	for _, c := range []struct {
		name       string
		from, upTo int64
		maxRows    float64
	}{
		{"last 1000 of 100000", 99001, 100000, 1000/5 + 2},
		{"last 1000 as of 50003", 49004, 50003, 1000/5 + 2},
		{"last 1 as of 7", 7, 7, 2},
	} {
		p := explain(t, s, sessionLoadEntries, "t", "s2", c.from, c.upTo)
		var read float64
		used := false
		p.walk(func(n *planNode) {
			if n.Relation != "session_entries" {
				return
			}
			if n.NodeType == "Seq Scan" || n.NodeType == "Bitmap Heap Scan" && n.Index == "" && n.RemovedRecheck > 0 {
				t.Errorf("%s: %s of session_entries\n%s", c.name, n.NodeType, p)
			}
			used = used || n.Index == "session_entries_pkey"
			read += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		})
		if !used {
			t.Errorf("%s: not through session_entries_pkey\n%s", c.name, p)
		}
		if read > c.maxRows {
			t.Errorf("%s: read %.0f journal rows, want at most %.0f\n%s", c.name, read, c.maxRows, p)
		}
	}
	// And the load answers with those items.
	st, err := s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s2", AsOf: 50003, Last: 1000})
	if err != nil || len(st.Entries) != 1000 || st.Entries[0].Seq != 49004 || string(st.Entries[0].Item) != "4" ||
		st.Entries[999].Seq != 50003 || string(st.Entries[999].Item) != "3" || st.Revision != 50003 {
		t.Fatalf("load: %d entries, %v", len(st.Entries), err)
	}
}

// seedClaimsPG gives 5,000 finished runs a live claim of other hosts,
// 2,000 an expired (released) claim of host "host", and 3 waiting runs a
// live claim of host "host".
func seedClaimsPG(t *testing.T, s *Store, now time.Time) {
	t.Helper()
	for i, q := range []string{
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', 'run:f' || lpad(n::text, 8, '0'), 'other-' || (n % 50) || ':' || n || ':x', 1, $1::timestamptz + interval '1 minute', $1
		FROM generate_series(1, 5000) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held)
		SELECT 't', 'run:f' || lpad((10000 + n)::text, 8, '0'), 'host:' || n || ':x', 1, $1::timestamptz - interval '1 minute', $1, false
		FROM generate_series(1, 2000) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', 'run:w' || lpad((400 + n)::text, 5, '0'), 'host:' || (90000 + n) || ':x', 1, $1::timestamptz + interval '1 minute', $1
		FROM generate_series(1, 3) n`,
		// Approval escalation timers: 3,000 not yet due, 3 due.
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', 'escalate:w' || lpad(n::text, 5, '0'), '(escalation):w' || lpad(n::text, 5, '0'), 1,
			CASE WHEN n <= 3 THEN $1::timestamptz - interval '1 second' + n * interval '1 ms'
			ELSE $1::timestamptz + interval '1 minute' + n * interval '1 ms' END, $1
		FROM generate_series(1, 3003) n`,
		`ANALYZE {{schema}}.claims`,
	} {
		var args []any
		if i < 4 {
			args = []any{now}
		}
		if _, err := s.pool.Exec(context.Background(), s.q(q), args...); err != nil {
			t.Fatalf("seed claims %d: %v", i, err)
		}
	}
}

// checkHeldPG asserts that a read of the runs a host holds reads claims
// only through claims_host, no more entries than the host's 3 live claims,
// and each run by primary key.
func checkHeldPG(t *testing.T, name string, p *planNode) {
	t.Helper()
	var claims, runs float64
	p.walk(func(n *planNode) {
		switch n.Relation {
		case "claims":
			ix := n.Index
			if n.NodeType == "Bitmap Heap Scan" && len(n.Plans) == 1 && n.Plans[0].NodeType == "Bitmap Index Scan" {
				ix = n.Plans[0].Index
			}
			if ix != "claims_host" {
				t.Errorf("%s: claims read by %s %q, not claims_host\n%s", name, n.NodeType, ix, p)
			}
			claims += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		case "runs":
			if n.Alias == "r" && n.Index != "runs_pkey" {
				t.Errorf("%s: runs read by %s %q, not by key\n%s", name, n.NodeType, n.Index, p)
			}
			if n.Alias == "r" {
				runs += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
			}
		}
	})
	if claims != 3 || runs != 3 {
		t.Errorf("%s: read %.0f claims and %.0f runs, want 3 and 3\n%s", name, claims, runs, p)
	}
}

// TestRunningListPlan: runs list --status running with 10,000 runs
// interrupted, 20 running (driven: a live claim each) and the released
// claims of 100,000 finished runs: the list reads the live claims of runs
// through claims_runs and each run by key, never the interrupted runs,
// and answers as the runs side does.
func TestRunningListPlan(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(200000 * time.Second)
	cols := `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, meta, deadline,
		revision, event_seq, created_at, updated_at`
	for i, q := range []string{
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'w' || lpad(n::text, 6, '0'), '', '', 'agent', 'd', 'interrupted', 'approval', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 10000) n`,
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 'q' || lpad(n::text, 6, '0'), '', '', 'agent', 'd', 'running', '', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 20) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
			SELECT 't', 'run:q' || lpad(n::text, 6, '0'), 'host-' || n || ':1:x', 1, $1::timestamptz + interval '1 minute', $1
			FROM generate_series(1, 20) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held)
			SELECT 't', 'run:f' || lpad(n::text, 8, '0'), 'old-' || (n % 50) || ':' || n || ':x', 1,
				$1::timestamptz - interval '1 hour', $1::timestamptz - interval '2 hours', false
			FROM generate_series(1, 100000) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
			SELECT 't', 'children:f' || lpad(n::text, 8, '0') || ':0', 'child x', 1, $1::timestamptz + interval '100 years', $1
			FROM generate_series(1, 5000) n`,
	} {
		at := base
		if i >= 2 {
			at = now
		}
		if _, err := s.pool.Exec(ctx, s.q(q), at); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	if _, err := s.pool.Exec(ctx, s.q(`VACUUM ANALYZE {{schema}}.runs`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`VACUUM ANALYZE {{schema}}.claims`)); err != nil {
		t.Fatal(err)
	}
	running := &store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
		Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now, Summary: true}
	from, err := s.liveFromClaims(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	q, args := s.listQueryFrom(running, from) // as RunList does
	if !from {
		t.Errorf("from the runs side, though the counters say 20 run and 10,000 wait")
	}
	p := explain(t, s, q, args...)
	var claims, runs float64
	p.walk(func(n *planNode) {
		ix := n.Index
		if n.NodeType == "Bitmap Heap Scan" && len(n.Plans) == 1 {
			ix = n.Plans[0].Index
		}
		read := (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		switch {
		case n.Relation == "claims" && ix != "claims_runs":
			t.Errorf("claims read by %s %q, not claims_runs\n%s", n.NodeType, ix, p)
		case n.Relation == "claims":
			claims += read
		case n.Relation == "runs" && ix != "runs_pkey":
			t.Errorf("runs read by %s %q, not by key\n%s", n.NodeType, ix, p)
		case n.Relation == "runs":
			runs += read
		}
	})
	if claims > 20 || runs > 20 {
		t.Errorf("read %.0f claims and %.0f runs, want the 20 driven\n%s", claims, runs, p)
	}
	live, err := s.RunList(ctx, running)
	if err != nil || len(live) != 20 || live[0].ID != "q000020" || live[19].ID != "q000001" {
		t.Fatalf("running: %d runs, %v", len(live), err)
	}
	// The runs side (a busy fleet: many run, few wait) gives the same.
	q, args = s.listQueryFrom(running, false)
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := collectRuns(rows, true)
	if err != nil || len(walked) != 20 || walked[0].ID != live[0].ID || walked[19].ID != live[19].ID {
		t.Fatalf("from the runs side: %d runs, %v", len(walked), err)
	}

	// 3,000 stalled runs (running, their claims expired without a
	// release): the running counter (3,020) is above the square root of
	// page × listed (51 × 13,020: about 815), so choosing by it walked
	// the runs side, 13,020 runs for 20 live ones. The held counters
	// (3,020 held) do not tell; the capped counts of claims_held find 20
	// live claims (and read 128 of the expired ones): the claims side,
	// 20 claims and 20 runs.
	for i, q := range []string{
		`INSERT INTO {{schema}}.runs (` + cols + `)
			SELECT 't', 's' || lpad(n::text, 6, '0'), '', '', 'agent', 'd', 'running', '', '{"v":1}', NULL, NULL, 3, 0,
				$1::timestamptz + n * interval '1 second', $1::timestamptz + n * interval '1 second'
			FROM generate_series(1, 3000) n`,
		`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
			SELECT 't', 'run:s' || lpad(n::text, 6, '0'), 'gone-' || n || ':1:x', 1, $1::timestamptz - interval '1 minute', $1::timestamptz - interval '2 minutes'
			FROM generate_series(1, 3000) n`,
		`VACUUM ANALYZE {{schema}}.runs`,
		`VACUUM ANALYZE {{schema}}.claims`,
	} {
		var args []any
		if i < 2 {
			args = []any{now.Add(-time.Hour)}
			if i == 1 {
				args = []any{now}
			}
		}
		if _, err := s.pool.Exec(ctx, s.q(q), args...); err != nil {
			t.Fatalf("seed stalled %d: %v", i, err)
		}
	}
	if from, err = s.liveFromClaims(ctx, running); err != nil || !from {
		t.Fatalf("with 3,000 stalled runs: from the claims side %v, %v", from, err)
	}
	q, args = s.listQueryFrom(running, from)
	p = explain(t, s, q, args...)
	claims, runs = 0, 0
	p.walk(func(n *planNode) {
		read := (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		switch n.Relation {
		case "claims":
			claims += read
		case "runs":
			runs += read
		}
	})
	if claims > 20 || runs > 20 {
		t.Errorf("with 3,000 stalled runs: read %.0f claims and %.0f runs, want the 20 driven\n%s", claims, runs, p)
	}
	if live, err = s.RunList(ctx, running); err != nil || len(live) != 20 {
		t.Fatalf("running, with 3,000 stalled runs: %d runs, %v", len(live), err)
	}
	// The idle count of waiting runs reads the 3,000 claims that expired
	// without a release (each a stalled drive), not the 100,000 released
	// ones, and no run: as many as are stalled, and exact. (The planner
	// may read the range of the released claims live after now, which is
	// empty, through claims_runs, and filter out the 20 live claims on
	// the way when it estimates them that few: 3,020 at most.)
	totals := explain(t, s, countersCount+liveCount, "t", []string{"interrupted", "running"}, now)
	claims, runs = 0, 0
	totals.walk(func(n *planNode) {
		read := (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		switch n.Relation {
		case "claims":
			claims += read
		case "runs":
			runs += read
		}
	})
	if claims > 3020 || runs > 0 {
		t.Errorf("idle count: read %.0f claims and %.0f runs, want the 3,000 stalled claims and no run\n%s", claims, runs, totals)
	}
	counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.RunCount{{Status: store.RunInterrupted, WaitKind: "approval", N: 10000}, {Status: store.RunRunning, N: 3000}}; !slices.Equal(counts, want) {
		t.Fatalf("idle counts %+v, want %+v", counts, want)
	}
}
