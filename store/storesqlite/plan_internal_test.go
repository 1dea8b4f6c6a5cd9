package storesqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// seedLarge fills a store with finished runs (generated in SQL), plus a
// few waiting, queued and running ones, as a store looks after months.
func seedLarge(t *testing.T, s *Store, finished int) {
	t.Helper()
	ctx := context.Background()
	stmts := []string{
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint,
			meta, deadline, revision, event_seq, created_at, updated_at)
		SELECT 't', printf('f%08d', n), CASE WHEN n % 10 = 0 THEN printf('f%08d', n - 1) ELSE '' END,
			CASE WHEN n % 7 = 0 THEN printf('s%d', n % 1000) ELSE '' END, 'agent', 'd',
			CASE n % 3 WHEN 0 THEN 'completed' WHEN 1 THEN 'failed' ELSE 'cancelled' END, '', '{"v":1}',
			NULL, NULL, 3, 0, n, n + 5 FROM g`,
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 500)
		INSERT INTO runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint,
			meta, deadline, revision, event_seq, created_at, updated_at)
		SELECT 't', printf('w%05d', n), '', '', 'agent', 'd', 'interrupted',
			CASE n % 2 WHEN 0 THEN 'approval' ELSE 'reconciliation' END, '{"v":1}', NULL, NULL, 3, 0, ? + n, ? + n FROM g`,
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20)
		INSERT INTO runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint,
			meta, deadline, revision, event_seq, created_at, updated_at)
		SELECT 't', printf('q%05d', n), '', '', 'agent', 'd', CASE WHEN n <= 10 THEN 'queued' ELSE 'running' END, '',
			'{"v":1}', NULL, NULL, 1, 0, ? + n, ? + n FROM g`,
	}
	args := [][]any{{finished}, {finished * 2, finished * 2}, {finished * 3, finished * 3}}
	for i, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q, args[i]...); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
}

// plan returns SQLite's EXPLAIN QUERY PLAN of q, one detail per line.
func plan(t *testing.T, s *Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	return out
}

// checkPlan asserts that the runs table is read only through one of the
// named indexes (a search, never a scan of the table) and that nothing
// sorts what it read, except the pages of a UNION ALL (each at most the
// limit) before they are merged, and, with groupOK, a GROUP BY.
func checkPlan(t *testing.T, name string, lines []string, index []string, groupOK bool) {
	t.Helper()
	used := false
	for i, l := range lines {
		for _, ix := range index {
			if strings.Contains(l, "INDEX "+ix+" ") || strings.HasSuffix(l, "INDEX "+ix) {
				used = true
			}
		}
		switch {
		case strings.HasPrefix(l, "SCAN ") && !strings.Contains(l, "INDEX") && !strings.Contains(l, "json_each") &&
			!strings.Contains(l, "CONSTANT ROW") && !strings.HasPrefix(l, "SCAN (subquery") && !strings.HasPrefix(l, "SCAN g"):
			t.Errorf("%s: full scan %q\n%s", name, l, strings.Join(lines, "\n"))
		case strings.HasPrefix(l, "SCAN r ") || strings.HasPrefix(l, "SCAN runs "):
			// A scan of a whole index of runs: only a partial one may be.
			partial := false
			for _, ix := range []string{"runs_active", "runs_waiting", "runs_finished"} {
				partial = partial || strings.Contains(l, ix)
			}
			if !partial {
				t.Errorf("%s: reads a whole index of runs: %q\n%s", name, l, strings.Join(lines, "\n"))
			}
		case strings.Contains(l, "TEMP B-TREE FOR ORDER BY") && i > 0 && strings.HasPrefix(lines[i-1], "SCAN (subquery-"):
		case strings.Contains(l, "TEMP B-TREE FOR GROUP BY") && groupOK:
		case strings.Contains(l, "TEMP B-TREE"):
			t.Errorf("%s: sorts its result %q\n%s", name, l, strings.Join(lines, "\n"))
		}
	}
	if !used {
		t.Errorf("%s: uses none of %v:\n%s", name, index, strings.Join(lines, "\n"))
	}
}

// TestQueryPlans seeds 100,000 finished runs and checks with EXPLAIN QUERY
// PLAN that the claim, list, inbox, count and prune queries read an index
// that holds only the rows they answer with (plans do not depend on how
// loaded the machine is). It checks them without statistics (a new store)
// and after ANALYZE.
func TestQueryPlans(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const finished = 100000
	seedLarge(t, s, finished)
	now := fromMicros(finished * 10)
	seedClaims(t, s, now)
	check := func(t *testing.T) {
		q, args := claimPickQuery(&store.RunClaimNextParams{Tenant: "t", Holder: "h", TTL: time.Minute, Stale: true}, now)
		checkPlan(t, "claim", plan(t, s, q, args...), []string{"runs_active"}, false)
		q, args = claimPickQuery(&store.RunClaimNextParams{Tenant: "t", Holder: "h", TTL: time.Minute, AgentIDs: []string{"a", "b"}}, now)
		checkPlan(t, "claim by agent", plan(t, s, q, args...), []string{"runs_active"}, false)

		cur := &store.RunCursor{At: fromMicros(finished/2 + 3), ID: "f00050000"}
		for _, c := range []struct {
			name    string
			p       store.RunListParams
			index   []string
			groupOK bool
		}{
			{"runs list --status interrupted", store.RunListParams{Tenant: "t", Status: store.RunInterrupted, Summary: true, Limit: 51},
				[]string{"runs_by_status"}, false},
			{"runs list --status interrupted, page 2", store.RunListParams{Tenant: "t", Status: store.RunInterrupted, Summary: true, Limit: 51,
				After: &store.RunCursor{At: fromMicros(finished*2 + 300), ID: "w00300"}}, []string{"runs_by_status"}, false},
			{"runs list", store.RunListParams{Tenant: "t", Summary: true, Limit: 51}, []string{"runs_by_created"}, false},
			{"runs list, page 2", store.RunListParams{Tenant: "t", Summary: true, Limit: 51, After: cur}, []string{"runs_by_created"}, false},
			{"stalled", store.RunListParams{Tenant: "t", Status: store.RunRunning, Claim: store.ClaimFilter{State: store.ClaimIdle},
				Limit: 51}, []string{"runs_by_status"}, false},
			{"running", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
				Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51}, []string{"runs_by_status"}, true},
			{"inbox page", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
				Claim: store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "host:"}, Order: store.RunsWaitingLongest, Limit: 51},
				[]string{"runs_waiting"}, true},
			{"inbox page 2", store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
				Claim: store.ClaimFilter{State: store.ClaimIdle}, Order: store.RunsWaitingLongest, Limit: 51,
				After: &store.RunCursor{At: fromMicros(finished*2 + 100), ID: "w00100"}}, []string{"runs_waiting"}, true},
			{"children", store.RunListParams{Tenant: "t", ParentID: "f00000009", Limit: 51}, []string{"runs_by_parent"}, false},
		} {
			q, args := s.listQuery(&c.p)
			checkPlan(t, c.name, plan(t, s, q, args...), c.index, c.groupOK)
		}
		all, live, cargs, ok := s.counterQueries(&store.RunCountParams{Tenant: "t",
			Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning}, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: now})
		if !ok || live == "" {
			t.Fatal("the inbox's totals are not counted from the counters")
		}
		lines := plan(t, s, all, cargs[0]...)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "SEARCH run_counts USING PRIMARY KEY (tenant=? AND status=?)") ||
			strings.Contains(j, " runs ") {
			t.Errorf("inbox totals: not a search of the counters by tenant and status:\n%s", j)
		}
		// The runs a live claim takes out: the held-claim counters, less
		// the held claims expired by now, plus the released ones that
		// expire after it (two ranges of claims_held, each run by key);
		// never the live claims, whose number is the runs being driven.
		lines = plan(t, s, live, cargs[1]...)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "SEARCH held_counts USING PRIMARY KEY (tenant=? AND status=?)") ||
			!strings.Contains(j, "SEARCH c USING COVERING INDEX claims_held (tenant=? AND held=? AND expires_at<?)") ||
			!strings.Contains(j, "SEARCH c USING COVERING INDEX claims_held (tenant=? AND held=? AND expires_at>?)") ||
			!strings.Contains(j, "SEARCH r USING INDEX sqlite_autoindex_runs_1 (tenant=? AND id=?)") || strings.Contains(j, "claims_runs") {
			t.Errorf("live claims of waiting runs: not the held counters and claims_held's two ranges, runs by key:\n%s", j)
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN ") {
				t.Errorf("live claims of waiting runs: scans %q", l)
			}
		}
		// runs list --status running decides its side from the counters
		// and capped counts of claims_held's entries (no table read).
		lines = plan(t, s, heldCapped, "t", micros(now), 100)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "USING COVERING INDEX claims_held (tenant=? AND held=? AND expires_at<?)") ||
			!strings.Contains(j, "USING COVERING INDEX claims_held (tenant=? AND held=? AND expires_at>?)") {
			t.Errorf("capped counts of held claims: not two ranges of claims_held's entries:\n%s", j)
		}
		// runs list --status running with few runs driven and many
		// waiting: the live claims of runs (claims_runs: not the 5,000
		// child places held for good), each run by key; no walk of the
		// waiting runs.
		running := store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
			Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now, Summary: true}
		q, args = s.listQueryFrom(&running, true)
		lines = plan(t, s, q, args...)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "SEARCH c USING INDEX claims_runs (tenant=? AND expires_at>?)") ||
			!strings.Contains(j, "SEARCH r USING INDEX sqlite_autoindex_runs_1 (tenant=? AND id=?)") || strings.Contains(j, "runs_by_status") {
			t.Errorf("running, from the claims side: not claims_runs and each run by key:\n%s", j)
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN ") {
				t.Errorf("running, from the claims side: scans %q", l)
			}
		}
		// The runs this host holds (the inbox's totals add those whose
		// process is gone): this host's live claims through claims_host,
		// each run by key; not the other hosts' 5,000 live claims, not
		// this host's expired ones.
		held := store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "host:"}
		waiting := []store.RunStatus{store.RunInterrupted, store.RunRunning}
		q, args = s.listQuery(&store.RunListParams{Tenant: "t", Statuses: waiting, Claim: held, Now: now, Summary: true})
		checkHeld(t, "runs held here", plan(t, s, q, args...))
		q, args = s.countQuery(&store.RunCountParams{Tenant: "t", Statuses: waiting, Claim: held, Now: now})
		checkHeld(t, "runs held here, counted", plan(t, s, q, args...))
		// A prune removes the claims its runs own (child-budget places,
		// cancel requests): a range of the claims' primary key per run
		// and kind, never a scan.
		lines = plan(t, s, pruneOwnedClaims, "t", `["f00000500","f00000501"]`)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "SEARCH c USING COVERING INDEX sqlite_autoindex_claims_1 (tenant=? AND key>? AND key<?)") {
			t.Errorf("owned claims: not a key range of the claims:\n%s", j)
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN claims") || strings.HasPrefix(l, "SCAN c") {
				t.Errorf("owned claims: scans %q", l)
			}
		}
		// The approval escalation's due timers: through claims_host, an
		// equality on the holder's host part and a range of expiry (not
		// the 3,000 timers not yet due, nor the other claims).
		lines = plan(t, s, claimsDue, "t", store.EscalationHolderPrefix, int64(now.UnixMicro()), 100)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "INDEX claims_host (tenant=? AND <expr>=? AND expires_at<?)") ||
			strings.Contains(j, "SCAN ") {
			t.Errorf("due escalation timers: not a range of claims_host:\n%s", j)
		}
		// The live inbox's stamp: index probes only.
		lines = plan(t, s, waitingStamp, "t", int64(now.UnixMicro()))
		checkPlan(t, "waiting stamp", lines, []string{"runs_waiting"}, false)
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "claims_live") || !strings.Contains(j, "run_counts USING PRIMARY KEY") ||
			!strings.Contains(j, "held_counts USING PRIMARY KEY") ||
			!strings.Contains(j, "USING COVERING INDEX claims_held (tenant=? AND held=? AND expires_at<?)") ||
			!strings.Contains(j, "USING COVERING INDEX claims_held (tenant=? AND held=?)") {
			t.Errorf("waiting stamp: claims not by claims_live and claims_held, or counters not by key:\n%s", j)
		}
		lines = plan(t, s, pruneQuery, "t", finished/2, 1000, "f00000100", int64(now.UnixMicro()), false, finished/2, 501)
		checkPlan(t, "prune", lines, []string{"runs_finished"}, false)
		for _, l := range lines {
			if strings.Contains(l, "SEARCH o ") && !strings.Contains(l, "runs_open_tree") ||
				strings.Contains(l, "SEARCH u ") && !strings.Contains(l, "runs_by_session") {
				t.Errorf("prune rule without its index: %q", l)
			}
		}
		// The tree rule (nothing of the run's tree unfinished): its
		// unfinished children through runs_open_tree, its root by key.
		if j := strings.Join(lines, "\n"); !strings.Contains(j, "INDEX runs_open_tree (tenant=? AND root_id=?)") ||
			!strings.Contains(j, "SEARCH rt USING INDEX sqlite_autoindex_runs_1 (tenant=? AND id=?)") {
			t.Errorf("prune's tree rule: not one probe of runs_open_tree and the root by key:\n%s", j)
		}
	}
	t.Run("no statistics", check)
	if _, err := s.db.Exec(`ANALYZE`); err != nil {
		t.Fatal(err)
	}
	t.Run("after ANALYZE", check)

	// And the queries answer: the claim takes the oldest queued run, the
	// inbox's first page starts with the longest waiting run, the totals
	// count every waiting run.
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
	held, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
		Claim: store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "host:"}, Order: store.RunsWaitingLongest, Summary: true, Now: now})
	if err != nil || len(held) != 3 || held[0].ID != "w00401" || held[2].ID != "w00403" {
		t.Fatalf("runs held here: %d runs, %v", len(held), err)
	}
	counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: []store.RunStatus{store.RunInterrupted}})
	if err != nil || len(counts) != 2 || counts[0].N != 250 || counts[1].N != 250 {
		t.Fatalf("counts = %+v, %v", counts, err)
	}
	// The running list, with 10 runs running (9 stalled: no claim; the one
	// claimed above) and 500 interrupted, 3 of them held: from the claims
	// side (the counters say few run), and the same answer as the runs
	// side.
	running := &store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted},
		Claim: store.ClaimFilter{State: store.ClaimLive}, Limit: 51, Now: now, Summary: true}
	if from, err := s.liveFromClaims(ctx, running); err != nil || !from {
		t.Fatalf("running list: from the claims side %v, %v", from, err)
	}
	live, err := s.RunList(ctx, running)
	if err != nil || len(live) != 4 || live[0].ID != "q00001" || live[1].ID != "w00403" || live[3].ID != "w00401" {
		t.Fatalf("running list: %d runs, %v", len(live), err)
	}
	q, args := s.listQueryFrom(running, false)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	var walked []string
	for rows.Next() {
		r, err := scanRunRow(rows, true)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, r.ID)
	}
	rows.Close()
	if len(walked) != 4 || walked[0] != live[0].ID || walked[1] != live[1].ID || walked[3] != live[3].ID {
		t.Fatalf("running list from the runs side %v, from the claims side %v", walked, live)
	}
	due, err := s.ClaimList(ctx, &store.ClaimListParams{Tenant: "t", HolderPrefix: store.EscalationHolderPrefix, ExpiredBy: now, Limit: 100})
	if err != nil || len(due) != 3 || due[0].Key != "escalate:w00001" || due[2].Key != "escalate:w00003" {
		t.Fatalf("due escalation timers: %d, %v", len(due), err)
	}
}

// TestSessionLoadPlan checks with EXPLAIN QUERY PLAN that loading a
// session's last items as of a revision searches the journal by its
// primary key's index, bounded on both sides of seq (never a scan of the journal
// or of one session's rows), with and without statistics, on a session of
// 100,000 items beside others.
func TestSessionLoadPlan(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sessions (tenant, session_id, revision, created_at, updated_at)
		VALUES ('t', 's1', 100000, 0, 0), ('t', 's2', 100000, 0, 0), ('t', 's3', 100000, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000)
		INSERT INTO session_journal (tenant, session_id, seq, run_id, turn, n, crc, item)
		SELECT 't', 's' || k.k, (n - 1) * 5 + 1, 'r' || n, 1, 5, NULL, '1' || char(30) || '2' || char(30) || '3' || char(30) || '4' || char(30) || '5'
		FROM g, (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) k`); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		lines := plan(t, s, sessionLoadQuery, "t", "s2", 100000, "t", "s2", 99001)
		searches := 0
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "SCAN session_journal"):
				t.Errorf("scans the journal: %q\n%s", l, strings.Join(lines, "\n"))
			case strings.HasPrefix(l, "SEARCH session_journal USING ") && strings.HasSuffix(l, " (tenant=? AND session_id=? AND seq>? AND seq<?)"):
				searches++
			case strings.HasPrefix(l, "SEARCH session_journal USING ") && strings.HasSuffix(l, " (tenant=? AND session_id=? AND seq<?)"):
				searches++ // the row holding the first item: MAX(seq), one probe
			case strings.Contains(l, "TEMP B-TREE"):
				t.Errorf("sorts: %q\n%s", l, strings.Join(lines, "\n"))
			}
		}
		if searches != 2 {
			t.Errorf("want a bounded search of the primary key and one probe:\n%s", strings.Join(lines, "\n"))
		}
	}
	t.Run("no statistics", check)
	if _, err := s.db.Exec(`ANALYZE`); err != nil {
		t.Fatal(err)
	}
	t.Run("after ANALYZE", check)
	st, err := s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s2", AsOf: 50003, Last: 1000})
	if err != nil || len(st.Entries) != 1000 || st.Entries[0].Seq != 49004 || string(st.Entries[0].Item) != "4" ||
		st.Entries[999].Seq != 50003 || string(st.Entries[999].Item) != "3" || st.Revision != 50003 {
		t.Fatalf("load: %d entries, %v", len(st.Entries), err)
	}
}

// seedClaims gives 5,000 finished runs a live claim of other hosts, 2,000
// an expired claim of host "host", and 3 waiting runs a live claim of
// host "host"; and 3,003 escalation timers, 3 of them due.
func seedClaims(t *testing.T, s *Store, now time.Time) {
	t.Helper()
	n := micros(now)
	for i, q := range []string{
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000)
		INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', printf('run:f%08d', n), printf('other-%d:%d:x', n % 50, n), 1, ? + 60000000, ? FROM g`,
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2000)
		INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', printf('run:f%08d', 10000 + n), printf('host:%d:x', n), 1, ? - 60000000, ? FROM g`,
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 3)
		INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', printf('run:w%05d', 400 + n), printf('host:%d:x', 90000 + n), 1, ? + 60000000, ? FROM g`,
		// Approval escalation timers: 3,000 not yet due, 3 due.
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 3003)
		INSERT INTO claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
		SELECT 't', printf('escalate:w%05d', n), printf('(escalation):w%05d', n), 1,
			CASE WHEN n <= 3 THEN ? - 1000000 + n ELSE ? + 60000000 + n END, 0 FROM g`,
	} {
		if _, err := s.db.Exec(q, n, n); err != nil {
			t.Fatalf("seed claims %d: %v", i, err)
		}
	}
}

// checkHeld asserts that a read of the runs a host holds searches
// claims_host, reads each run by its key, and scans nothing.
func checkHeld(t *testing.T, name string, lines []string) {
	t.Helper()
	j := strings.Join(lines, "\n")
	if !strings.Contains(j, "USING INDEX claims_host (tenant=? AND <expr>=? AND expires_at>?)") ||
		!strings.Contains(j, "SEARCH r USING INDEX sqlite_autoindex_runs_1 (tenant=? AND id=?)") {
		t.Errorf("%s: not this host's live claims through claims_host, each run by key:\n%s", name, j)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "SCAN ") && !strings.HasPrefix(l, "SCAN h") {
			t.Errorf("%s: scans %q\n%s", name, l, j)
		}
	}
}
