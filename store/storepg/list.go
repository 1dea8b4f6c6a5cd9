package storepg

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// Lists, counts and retention. Each query is written so that one of the
// indexes of migrations/006_scale.sql serves it: a status list walks
// runs_by_status (or runs_waiting, for the inbox's order) from the page's
// cursor; several statuses are one index walk each, merged by a UNION ALL
// of their first pages; the claim filter is one primary-key probe of the
// claims table per row read (see TestQueryPlans).

// runColsList is runColsRead for the runs table aliased r.
var runColsList = strings.NewReplacer("runs.tenant", "r.tenant", "runs.id", "r.id").Replace(runColsRead)

// runColsSummary is runColsList without the checkpoint.
var runColsSummary = strings.Replace(runColsList, "wait_kind,\n\tcheckpoint,", "wait_kind,\n\tNULL::text,", 1)

// waitingCond and finishedCond are the conditions of the partial indexes
// runs_waiting and runs_finished.
const (
	waitingCond  = `r.status IN ('interrupted', 'running')`
	finishedCond = `r.status IN ('completed', 'failed', 'cancelled')`
)

// statusRange: a list of one status (a branch of several) asks for
// "r.status >= $n AND r.status <= $n" ordered by r.status first, not for
// "r.status = $n". With an equality the planner drops the status from the
// order (it is constant) and may walk runs_by_created instead of
// runs_by_status, filtering on the status: it expects the status's runs
// spread evenly over time, but the newest runs are mostly the unfinished
// ones. runs list --status completed read the 16,000 newer unfinished runs
// of a store of 300,000 copies to find 51 completed ones (TestQueryPlans'
// "runs list --status completed" case). A range keeps the status in the
// order, which only runs_by_status gives without sorting every run of the
// status, and its start key still holds the page's cursor, in a custom
// plan and in a generic one. A list of one parent's children keeps the
// equality: runs_by_parent gives them in order, and with the range the
// planner read every run of the status from runs_by_status instead
// (TestListOneStatusPlan's "--parent p" case: 30,051 rows for a page).

// sqlArgs numbers the parameters of a statement being built.
type sqlArgs []any

// filters are the conditions every branch of a list's page shares: the
// parent, the agent, the wait kind, and the page's cursor in the list's
// order.
func (a *sqlArgs) filters(p *store.RunListParams) []string {
	var where []string
	if p.ParentID != "" {
		// "<> ''" lets a plan use runs_by_parent, a partial index.
		where = append(where, `r.parent_id = `+a.ph(p.ParentID), `r.parent_id <> ''`)
	}
	if p.AgentID != "" {
		where = append(where, `r.agent_id = `+a.ph(p.AgentID))
	}
	if p.WaitKind != "" {
		where = append(where, `r.wait_kind = `+a.ph(p.WaitKind))
	}
	if p.After != nil {
		if p.Order == store.RunsWaitingLongest {
			where = append(where, `(r.updated_at, r.id) > (`+a.ph(p.After.At)+`, `+a.ph(p.After.ID)+`)`)
		} else {
			where = append(where, `(r.created_at, r.id) < (`+a.ph(p.After.At)+`, `+a.ph(p.After.ID)+`)`)
		}
	}
	return where
}

func (a *sqlArgs) ph(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// claimCond is the claim filter's condition.
func claimCond(a *sqlArgs, cf store.ClaimFilter, now time.Time) string {
	if cf.State == store.ClaimAny {
		return ""
	}
	live := `SELECT 1 FROM {{schema}}.claims c WHERE c.tenant = r.tenant AND c.key = 'run:' || r.id AND c.expires_at > ` + a.ph(now)
	if cf.State == store.ClaimLive {
		return `EXISTS (` + live + `)`
	}
	if cf.HolderPrefix != "" {
		live += ` AND NOT starts_with(c.holder, ` + a.ph(cf.HolderPrefix) + `)`
	}
	// OFFSET 0 keeps the anti-join a probe of claims_pkey per run read.
	// Flattened, the planner estimates the live claims from the holder
	// condition's default selectivity (93 of 10,000 in a store with
	// 10,000 runs driven) and joins each run to all of them, materialized:
	// runs list --status stalled read 50 million claim rows there (17 s).
	return `NOT EXISTS (` + live + ` OFFSET 0)`
}

// heldBy is the claims side of a list or count of the runs whose live
// claim at now is held by a holder starting with prefix: a host's prefix
// ("host:", store.HostPrefix) through claims_host (migrations/011), as
// many index entries as that host holds live claims; no prefix through
// claims_runs (migrations/015: the live claims of runs, not the tenant's
// other claims); another prefix through claims_runs too, its holder
// checked.
func heldBy(a *sqlArgs, tenant, prefix string, now time.Time) heldClaims {
	held := []string{`c.tenant = ` + a.ph(tenant)}
	switch {
	case store.HostPrefix(prefix):
		held = append(held, hostExpr+` = `+a.ph(prefix))
	case prefix != "":
		held = append(held, `starts_with(c.holder, `+a.ph(prefix)+`)`)
	}
	held = append(held, `c.expires_at > `+a.ph(now), `starts_with(c.key, 'run:')`)
	return heldClaims(`(SELECT c.tenant AS held_tenant, substr(c.key, 5) AS held_id FROM {{schema}}.claims c WHERE ` +
		strings.Join(held, " AND ") + `) h`)
}

// heldClaims is the derived table h of the claims heldBy keeps.
type heldClaims string

// from is the FROM clause x of the runs the claims hold, with columns
// cols of runs r and conditions where on them. Each run is read by key in
// a LATERAL subquery that OFFSET 0 keeps from being flattened: the
// planner cannot cost the host's claims from statistics (the correlation
// of the holder with the expiry is not in them) and would otherwise hash
// every waiting run to join a few claims.
func (h heldClaims) from(cols string, where []string) string {
	cond := append([]string{`r.tenant = h.held_tenant`, `r.id = h.held_id`}, where...)
	return string(h) + ` CROSS JOIN LATERAL (SELECT ` + cols + ` FROM {{schema}}.runs r WHERE ` +
		strings.Join(cond, " AND ") + ` OFFSET 0) x`
}

// hostExpr is the expression claims_host indexes: the holder up to and
// including its first ':' (empty without one).
const hostExpr = `substr(c.holder, 1, strpos(c.holder, ':'))`

func (s *Store) listNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.clock.Now()
	}
	return t
}

// RunList implements [store.Store]. A row that does not decode hides no
// other: the healthy runs come with a [*store.DataError] naming it.
func (s *Store) RunList(ctx context.Context, p *store.RunListParams) ([]*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	fromClaims, err := s.liveFromClaims(ctx, p)
	if err != nil {
		return nil, err
	}
	q, args := s.listQueryFrom(p, fromClaims)
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		return nil, mapErr("list runs", err)
	}
	runs, err := collectRuns(rows, p.Summary)
	if err != nil && !errors.Is(err, store.ErrData) {
		return nil, mapErr("list runs", err)
	}
	return runs, err // a DataError comes with the healthy runs
}

// liveFromClaims says whether a list of the runs whose claim is live,
// without a holder prefix, starts from the claims side (store.LiveSide:
// from the counters of runs and of held claims, then claims_held's
// expired held claims and live ones, each counted up to a growing cap,
// about the fewer of the two; always for statuses that are
// not counted, such as finished runs, which the runs side would walk).
func (s *Store) liveFromClaims(ctx context.Context, p *store.RunListParams) (bool, error) {
	if p.Claim.State != store.ClaimLive || p.Claim.HolderPrefix != "" {
		return false, nil
	}
	statuses := p.ListStatuses()
	if len(statuses) == 0 {
		return true, nil
	}
	for _, st := range statuses {
		if st.Terminal() {
			return true, nil
		}
	}
	sts := make([]string, len(statuses))
	for i, st := range statuses {
		sts[i] = string(st)
	}
	var listed, held int64
	if err := s.pool.QueryRow(ctx, s.q(listedHeld), p.Tenant, sts).Scan(&listed, &held); err != nil {
		return false, mapErr("count runs", err)
	}
	now := s.listNow(p.Now)
	return store.LiveSide(p.Limit, listed, held, func(k int64) (expired, live int64, err error) {
		if err := s.pool.QueryRow(ctx, s.q(heldCapped), p.Tenant, now, k).Scan(&expired, &live); err != nil {
			return 0, 0, mapErr("count claims", err)
		}
		return expired, live, nil
	})
}

// listQuery is RunList's statement, from the runs side for the runs whose
// claim is live without a holder prefix (see listQueryFrom).
func (s *Store) listQuery(p *store.RunListParams) (string, []any) {
	return s.listQueryFrom(p, false)
}

// listQueryFrom is RunList's statement: one index walk per status, each
// cut at the limit, merged in order; or, for the runs a live claim holds
// (with a holder prefix, or with fromClaims: see liveFromClaims), the
// claims side.
func (s *Store) listQueryFrom(p *store.RunListParams, fromClaims bool) (string, []any) {
	cols := runColsList
	if p.Summary {
		cols = runColsSummary
	}
	order := `created_at DESC, id DESC`
	if p.Order == store.RunsWaitingLongest {
		order = `updated_at, id`
	}
	now := s.listNow(p.Now)
	var a sqlArgs
	statuses := p.ListStatuses()
	if p.Claim.State == store.ClaimLive && (p.Claim.HolderPrefix != "" || fromClaims) {
		// The runs a holder prefix holds, or every run a live claim
		// holds when few are: read from the claims side.
		held := heldBy(&a, p.Tenant, p.Claim.HolderPrefix, now)
		var where []string
		if len(statuses) > 0 {
			sts := make([]string, len(statuses))
			for i, st := range statuses {
				sts[i] = string(st)
			}
			where = append(where, `r.status = ANY(`+a.ph(sts)+`::text[])`)
		}
		where = append(where, a.filters(p)...)
		q := `SELECT x.* FROM ` + held.from(cols, where) + ` ORDER BY x.` + strings.ReplaceAll(order, ", ", ", x.")
		if p.Limit > 0 {
			q += ` LIMIT ` + a.ph(int64(p.Limit))
		}
		return q, a
	}
	// The inbox's order over waiting runs is one walk of runs_waiting,
	// whose entries are exactly the interrupted and running runs.
	waiting := p.Order == store.RunsWaitingLongest && len(statuses) > 0
	for _, st := range statuses {
		waiting = waiting && (st == store.RunInterrupted || st == store.RunRunning)
	}
	one := func(status store.RunStatus) string {
		if status == store.RunInterrupted && !waiting && p.Claim.State == store.ClaimLive && p.Claim.HolderPrefix == "" {
			return interruptedLive(&a, p, cols, order, now)
		}
		where := []string{`r.tenant = ` + a.ph(p.Tenant)}
		ranged := !waiting && status != "" && p.ParentID == ""
		switch {
		case waiting && len(statuses) == 2:
			where = append(where, waitingCond)
		case waiting:
			where = append(where, waitingCond, `r.status = `+a.ph(string(status)))
		case ranged:
			// A range of one status, and the status first in the order
			// (see statusRange).
			st := a.ph(string(status))
			where = append(where, `r.status >= `+st, `r.status <= `+st)
		case status != "":
			// A parent's children: runs_by_parent gives them in order, and
			// the range would have the planner read every run of the
			// status from runs_by_status instead.
			where = append(where, `r.status = `+a.ph(string(status)))
		}
		if c := claimCond(&a, p.Claim, now); c != "" {
			where = append(where, c)
		}
		where = append(where, a.filters(p)...)
		by := `r.` + strings.ReplaceAll(order, ", ", ", r.")
		if ranged {
			by = `r.status, ` + by
		}
		q := `SELECT ` + cols + ` FROM {{schema}}.runs r WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + by
		if p.Limit > 0 {
			q += ` LIMIT ` + a.ph(int64(p.Limit))
		}
		return q
	}
	if len(statuses) <= 1 || waiting {
		var st store.RunStatus
		if len(statuses) == 1 {
			st = statuses[0]
		}
		return one(st), a
	}
	parts := make([]string, len(statuses))
	for i, st := range statuses {
		parts[i] = `(` + one(st) + `)`
	}
	// The merge sorts the column names of the union's first branch.
	q := `SELECT * FROM (` + strings.Join(parts, ` UNION ALL `) + `) u ORDER BY ` + order
	if p.Limit > 0 {
		q += ` LIMIT ` + a.ph(int64(p.Limit))
	}
	return q, a
}

// interruptedLive is the list of the interrupted runs whose claim is live
// (the interrupted half of runs list --status running: a process resumes
// them, or decides on them), from the claims side: the live claims of
// interrupted runs, through claims_interrupted (migrations/020), each run
// by key. From the runs side it walked every interrupted run, probing its
// claim, to find the few a process holds: 5,000 runs and 15,000 buffers
// for none, with 5,000 runs waiting. The condition on run_status (the
// run's status on its claim row, which the run's writes keep: 017, 018)
// is a literal, so that the partial index serves a generic plan too.
func interruptedLive(a *sqlArgs, p *store.RunListParams, cols, order string, now time.Time) string {
	held := heldClaims(`(SELECT c.tenant AS held_tenant, substr(c.key, 5) AS held_id FROM {{schema}}.claims c
		WHERE c.tenant = ` + a.ph(p.Tenant) + ` AND starts_with(c.key, 'run:') AND c.run_status = 'interrupted'
		AND c.expires_at > ` + a.ph(now) + `) h`)
	where := append([]string{`r.status = 'interrupted'`}, a.filters(p)...)
	q := `SELECT x.* FROM ` + held.from(cols, where) + ` ORDER BY x.` + strings.ReplaceAll(order, ", ", ", x.")
	if p.Limit > 0 {
		q += ` LIMIT ` + a.ph(int64(p.Limit))
	}
	return q
}

// RunCount implements [store.Store].
func (s *Store) RunCount(ctx context.Context, p *store.RunCountParams) ([]store.RunCount, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if store.Counted(p) {
		// The counters every write keeps (a few rows per status and
		// kind), minus, for the idle-claim filter, the runs a live claim
		// takes out (liveCount: the held-claim counters, corrected by
		// the held claims expired since): one statement, one snapshot;
		// no live claim and no run is read.
		sts := make([]string, len(p.Statuses))
		for i, st := range p.Statuses {
			sts[i] = string(st)
		}
		q := countersCount
		args := []any{p.Tenant, sts}
		if p.Claim.State == store.ClaimIdle {
			q += liveCount
			args = append(args, s.listNow(p.Now))
		}
		parts, err := s.queryCounts(ctx, q, args)
		if err != nil {
			return nil, err
		}
		return store.SubtractCounts(parts, nil), nil
	}
	q, args := s.countQuery(p)
	out, err := s.queryCounts(ctx, q, args)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []store.RunCount{}
	}
	store.SortCounts(out)
	return out, nil
}

// queryCounts runs a count query whose rows are (status, wait kind, n).
func (s *Store) queryCounts(ctx context.Context, q string, args []any) ([]store.RunCount, error) {
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		return nil, mapErr("count runs", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunCount, error) {
		var c store.RunCount
		var st string
		err := row.Scan(&st, &c.WaitKind, &c.N)
		c.Status = store.RunStatus(st)
		return c, err
	})
	if err != nil {
		return nil, mapErr("count runs", err)
	}
	return out, nil
}

func (s *Store) countQuery(p *store.RunCountParams) (string, []any) {
	var a sqlArgs
	if p.Claim.State == store.ClaimLive && p.Claim.HolderPrefix != "" {
		held := heldBy(&a, p.Tenant, p.Claim.HolderPrefix, s.listNow(p.Now))
		var where []string
		if len(p.Statuses) > 0 {
			sts := make([]string, len(p.Statuses))
			for i, st := range p.Statuses {
				sts[i] = string(st)
			}
			where = append(where, `r.status = ANY(`+a.ph(sts)+`::text[])`)
		}
		if p.ParentID != "" {
			where = append(where, `r.parent_id = `+a.ph(p.ParentID))
		}
		return `SELECT x.status, x.wait_kind, count(*) FROM ` + held.from(`r.status, r.wait_kind`, where) +
			` GROUP BY x.status, x.wait_kind`, a
	}
	where := []string{`r.tenant = ` + a.ph(p.Tenant)}
	if len(p.Statuses) > 0 {
		waiting := true
		sts := make([]string, len(p.Statuses))
		for i, st := range p.Statuses {
			sts[i] = string(st)
			waiting = waiting && (st == store.RunInterrupted || st == store.RunRunning)
		}
		where = append(where, `r.status = ANY(`+a.ph(sts)+`::text[])`)
		if waiting {
			where = append(where, waitingCond)
		}
	}
	if p.ParentID != "" {
		where = append(where, `r.parent_id = `+a.ph(p.ParentID), `r.parent_id <> ''`)
	}
	if c := claimCond(&a, p.Claim, s.listNow(p.Now)); c != "" {
		where = append(where, c)
	}
	return `SELECT r.status, r.wait_kind, count(*) FROM {{schema}}.runs r WHERE ` + strings.Join(where, " AND ") +
		` GROUP BY r.status, r.wait_kind`, a
}

// prunePick selects a batch of finished runs that may be removed, oldest
// write first (see store.RunPruneParams for the rules). $1 tenant, $2
// cut-off, $3 now, $4 sessions too, $5 limit. Each rule is a subquery in
// an expression ("(SELECT 1 ... LIMIT 1) IS NULL"), not a bare NOT
// EXISTS, so that the planner keeps it a per-run index probe instead of
// an anti-join that could hash the whole runs or ledger table.
const prunePick = `SELECT r.tenant, r.id, r.updated_at FROM {{schema}}.runs r
	WHERE r.tenant = $1 AND ` + finishedCond + ` AND r.updated_at < $2 AND (r.updated_at, r.id) > ($6, $7)
	AND (SELECT 1 FROM {{schema}}.ledger l WHERE l.tenant = r.tenant AND l.run_id = r.id
		AND l.state IN ('started', 'unknown') LIMIT 1) IS NULL
	AND (SELECT 1 FROM {{schema}}.events e WHERE e.tenant = r.tenant AND e.run_id = r.id
		AND e.state IN ('started', 'unknown') AND (SELECT 1 FROM {{schema}}.events s WHERE s.tenant = e.tenant
			AND s.run_id = e.run_id AND s.call_id = e.call_id AND s.state = 'committed' LIMIT 1) IS NULL LIMIT 1) IS NULL
	AND (SELECT 1 FROM {{schema}}.claims c WHERE c.tenant = r.tenant AND c.key = 'run:' || r.id
		AND c.expires_at > $3 LIMIT 1) IS NULL
	AND ` + treeFinished + `
	AND ($4 OR r.session_id = '' OR (SELECT 1 FROM {{schema}}.runs u WHERE u.tenant = r.tenant
		AND u.session_id = r.session_id AND u.session_id <> ''
		AND (u.status NOT IN ('completed', 'failed', 'cancelled') OR u.updated_at >= $2) LIMIT 1) IS NULL)
	ORDER BY r.updated_at, r.id LIMIT $5`

// treeFinished holds when no run of r's tree is unfinished (the tree is
// r.root_id, or r itself for a top-level run): its root, read by key, and
// its unfinished children, from runs_open_tree (one probe, whatever the
// tree's finished runs). It stands for every rule of the tree (a child
// not finished keeps its parent, a parent not finished its child, a
// grandchild its root and every finished branch of its tree, whose turns
// and tokens the tree's budget counts).
const treeFinished = `(SELECT 1 FROM {{schema}}.runs o WHERE o.tenant = r.tenant
		AND o.root_id = (CASE WHEN r.root_id = '' THEN r.id ELSE r.root_id END)
		AND o.root_id <> '' AND o.status IN ('queued', 'running', 'interrupted') LIMIT 1) IS NULL
	AND (r.root_id = '' OR (SELECT 1 FROM {{schema}}.runs rt WHERE rt.tenant = r.tenant AND rt.id = r.root_id
		AND rt.status IN ('queued', 'running', 'interrupted') LIMIT 1) IS NULL)`

// pruneLock picks a batch (prunePick) and locks its runs FOR UPDATE SKIP
// LOCKED; pruneDelete then removes them in a second statement.
const pruneLock = `WITH v AS (` + prunePick + ` FOR UPDATE OF r SKIP LOCKED)
	SELECT coalesce(array_agg(id ORDER BY updated_at, id), '{}') FROM v`

// pruneDelete removes the runs $2 of tenant $1 that pruneLock locked, with
// their ledger, events (counted by the records their rows hold) and the claims they own (store.RunOwnsClaim: their
// own, the child-budget places "children:<id>:<n>" of the tree they are
// the root of, their cancel requests "cancel:<id>:<epoch>", through
// claims_owned), in one statement; it returns the ids removed and the rows
// counted. It runs in a snapshot taken after the lock, and looks again
// at each run's tree: a child created while the batch was picked (its
// creation holds its parent's and its root's rows FOR KEY SHARE until it
// commits, which the lock waits for or skips) keeps its tree.
const pruneDelete = `WITH v AS (SELECT r.tenant, r.id FROM {{schema}}.runs r
		WHERE r.tenant = $1 AND r.id = ANY($2::text[])
		AND ` + treeFinished + `),
	dl AS (DELETE FROM {{schema}}.ledger l USING v WHERE l.tenant = v.tenant AND l.run_id = v.id RETURNING 1),
	dg AS (DELETE FROM {{schema}}.run_log g USING v WHERE g.tenant = v.tenant AND g.run_id = v.id RETURNING 1),
	de AS (DELETE FROM {{schema}}.events e USING v WHERE e.tenant = v.tenant AND e.run_id = v.id
		RETURNING e.seq - coalesce(e.first_seq, e.seq) + 1 AS n),
	dc AS (DELETE FROM {{schema}}.claims c USING v WHERE c.tenant = v.tenant AND c.key = 'run:' || v.id RETURNING 1),
	dk AS (DELETE FROM {{schema}}.claims c USING v, (VALUES ('children:'), ('cancel:')) p(k)
		WHERE ` + ownedClaim + ` RETURNING 1),
	dr AS (DELETE FROM {{schema}}.runs r USING v WHERE r.tenant = v.tenant AND r.id = v.id RETURNING r.id, r.updated_at)
	SELECT coalesce((SELECT array_agg(id ORDER BY updated_at, id) FROM dr), '{}'),
		(SELECT max(updated_at) FROM dr),
		(SELECT count(*) FROM dl), (SELECT coalesce(sum(n), 0)::bigint FROM de)`

// ownedClaim matches a claim c of kind p.k ("children:" or "cancel:")
// that run v owns: its key is the kind, the run's id, ':' and digits. The
// key range is in the "C" collation (bytes), which claims_owned indexes,
// whatever the database's collation.
const ownedClaim = `c.tenant = v.tenant AND (c.key LIKE 'children:%' OR c.key LIKE 'cancel:%')
		AND c.key COLLATE "C" > p.k || v.id || ':' AND c.key COLLATE "C" < p.k || v.id || ';'
		AND substr(c.key, length(p.k || v.id) + 2) ~ '^[0-9]+$'`

// pruneDry counts what pruneDelete would remove.
const pruneDry = `WITH v AS (` + prunePick + `)
	SELECT coalesce((SELECT array_agg(id ORDER BY updated_at, id) FROM v), '{}'),
		(SELECT max(updated_at) FROM v),
		(SELECT count(*) FROM {{schema}}.ledger l JOIN v ON l.tenant = v.tenant AND l.run_id = v.id),
		(SELECT coalesce(sum(e.seq - coalesce(e.first_seq, e.seq) + 1), 0)::bigint FROM {{schema}}.events e
			JOIN v ON e.tenant = v.tenant AND e.run_id = v.id)`

// RunPrune implements [store.Store]: one short transaction per batch, one
// statement that picks and removes the batch, then, when the batch was
// full, one probe for more.
func (s *Store) RunPrune(ctx context.Context, p *store.RunPruneParams) (*store.RunPruneResult, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	q := pruneDelete
	if p.DryRun {
		q = pruneDry
	}
	res := &store.RunPruneResult{}
	now := s.clock.Now()
	afterAt, afterID := time.Unix(0, 0).UTC().AddDate(-100, 0, 0), ""
	if p.After != nil {
		afterAt, afterID = p.After.At, p.After.ID
	}
	var last *time.Time
	// One transaction per batch, with JIT compilation off: the planner
	// costs the per-run rule probes of a batch high enough to JIT-compile
	// the statement, which took seconds per batch (scripts/bench-scale),
	// for a statement that reads a few hundred index entries.
	err := retryable(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
				return err
			}
			res.RunIDs, last, res.More = nil, nil, false
			picked := 0
			if p.DryRun {
				if err := tx.QueryRow(ctx, s.q(q), p.Tenant, p.FinishedBefore, now, p.Sessions, int64(p.Limit), afterAt, afterID).
					Scan(&res.RunIDs, &last, &res.LedgerEntries, &res.Events); err != nil {
					return err
				}
				picked = len(res.RunIDs)
			} else {
				// Two statements: the lock, then the removal in a new
				// snapshot (see pruneDelete).
				var locked []string
				if err := tx.QueryRow(ctx, s.q(pruneLock), p.Tenant, p.FinishedBefore, now, p.Sessions, int64(p.Limit), afterAt, afterID).
					Scan(&locked); err != nil {
					return err
				}
				if picked = len(locked); picked == 0 {
					res.RunIDs = []string{}
					return nil
				}
				if err := tx.QueryRow(ctx, s.q(pruneDelete), p.Tenant, locked).
					Scan(&res.RunIDs, &last, &res.LedgerEntries, &res.Events); err != nil {
					return err
				}
			}
			if picked < p.Limit {
				return nil
			}
			// A full batch: is there more? (In this transaction a prune's
			// removed runs are gone, so the probe starts after them.)
			return tx.QueryRow(ctx, s.q(`SELECT EXISTS (`+strings.Replace(prunePick, "LIMIT $5", "OFFSET $5 LIMIT 1", 1)+`)`),
				p.Tenant, p.FinishedBefore, now, p.Sessions, int64(offsetAfter(p)), afterAt, afterID).Scan(&res.More)
		})
	})
	if err != nil {
		return nil, mapErr("prune runs", err)
	}
	if n := len(res.RunIDs); n > 0 && last != nil {
		res.Last = &store.RunCursor{At: store.Time(*last), ID: res.RunIDs[n-1]}
	}
	return res, nil
}

// offsetAfter is where the probe for more looks: after the batch in a dry
// run (nothing was removed), at the start otherwise.
func offsetAfter(p *store.RunPruneParams) int {
	if p.DryRun {
		return p.Limit
	}
	return 0
}

// claimsDue lists the claims of a host prefix that are due (expired by
// $3), through claims_host: an equality on the holder's host part and a
// range of expiry.
const claimsDue = `SELECT ` + claimCols + ` FROM {{schema}}.claims
	WHERE tenant = $1 AND substr(holder, 1, strpos(holder, ':')) = $2 AND expires_at <= $3
	ORDER BY expires_at, key LIMIT $4`

// ClaimList implements [store.Store].
func (s *Store) ClaimList(ctx context.Context, p *store.ClaimListParams) ([]*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	q, args := `SELECT `+claimCols+` FROM {{schema}}.claims WHERE tenant = $1 AND key = ANY($2::text[]) ORDER BY key`, []any{p.Tenant, p.Keys}
	if p.HolderPrefix != "" {
		q, args = claimsDue, []any{p.Tenant, p.HolderPrefix, p.ExpiredBy, int64(p.Limit)}
	}
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		return nil, mapErr("list claims", err)
	}
	defer rows.Close()
	out := []*store.Claim{}
	for rows.Next() {
		c, err := scanClaim(rows)
		if err != nil {
			return nil, mapErr("list claims", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list claims", err)
	}
	return out, nil
}

// countersCount sums the counters (migrations/009_run_counts.sql) of the
// statuses $2 of tenant $1 over their slots.
const countersCount = `SELECT status, wait_kind, sum(n)::bigint FROM {{schema}}.run_counts
	WHERE tenant = $1 AND status = ANY($2::text[]) GROUP BY status, wait_kind`

// liveCount, appended to countersCount, subtracts the runs of those
// statuses whose claim is live at $3: the runs whose claim is held (the
// counters held_counts, migrations/017), less those whose held claim
// expired by $3, plus those whose released claim expires after $3 (none
// unless $3 is in the past), both through claims_held. It reads the
// counters and the claims that expired without a release, not the runs
// being driven.
//
// The last part is read only when the latest release expires after $3 (a
// one-time filter on a backward probe of claims_held, ordered by held and
// expiry, which only claims_held gives: ordered by the expiry alone, or
// as max(), it could walk claims_runs backwards through every live held
// claim, whose expiries are the latest, before the first released one,
// as a test run saw, reading 10,001 entries): the planner cannot
// see that released claims are never live at now (their expiry is their
// release), and read them through claims_runs, which holds the live held
// claims too: 10,000 index entries with 10,000 runs driven, for none kept.
// Each of its runs is read by key (LATERAL, OFFSET 0): in a generic plan,
// which does not know $3, the join hashed every run of the statuses (6.8
// s at 1,000,000 runs with plan_cache_mode = force_generic_plan).
const liveCount = `
	UNION ALL
	SELECT status, wait_kind, -sum(n)::bigint FROM {{schema}}.held_counts
	WHERE tenant = $1 AND status = ANY($2::text[]) GROUP BY status, wait_kind
	UNION ALL
	SELECT c.run_status, c.run_wait_kind, count(*) FROM {{schema}}.claims c
	WHERE c.tenant = $1 AND c.held AND c.expires_at <= $3 AND starts_with(c.key, 'run:') AND c.run_status = ANY($2::text[])
	GROUP BY c.run_status, c.run_wait_kind
	UNION ALL
	SELECT x.status, x.wait_kind, -count(*) FROM {{schema}}.claims c
	CROSS JOIN LATERAL (SELECT r.status, r.wait_kind FROM {{schema}}.runs r
		WHERE r.tenant = c.tenant AND r.id = substr(c.key, 5) AND r.status = ANY($2::text[]) OFFSET 0) x
	WHERE c.tenant = $1 AND NOT c.held AND c.expires_at > $3 AND starts_with(c.key, 'run:')
		AND (SELECT m.expires_at FROM {{schema}}.claims m WHERE m.tenant = $1 AND NOT m.held AND starts_with(m.key, 'run:')
			ORDER BY m.held DESC, m.expires_at DESC LIMIT 1) > $3
	GROUP BY x.status, x.wait_kind`

// heldCapped counts, each up to $3, the held claims of runs of tenant $1
// expired by $2 and those live at it: two ranges of claims_held, in its
// order (so that no plan reads the table until it has found $3).
const heldCapped = `SELECT
	(SELECT count(*) FROM (SELECT 1 FROM {{schema}}.claims c
		WHERE c.tenant = $1 AND c.held AND c.expires_at <= $2 AND starts_with(c.key, 'run:') ORDER BY c.expires_at LIMIT $3) x),
	(SELECT count(*) FROM (SELECT 1 FROM {{schema}}.claims c
		WHERE c.tenant = $1 AND c.held AND c.expires_at > $2 AND starts_with(c.key, 'run:') ORDER BY c.expires_at LIMIT $3) y)`

// listedHeld is how many runs of the statuses $2 of tenant $1 there are,
// and how many of them have a held claim (the counters).
const listedHeld = `SELECT
	(SELECT coalesce(sum(n), 0)::bigint FROM {{schema}}.run_counts WHERE tenant = $1 AND status = ANY($2::text[])),
	(SELECT coalesce(sum(n), 0)::bigint FROM {{schema}}.held_counts WHERE tenant = $1 AND status = ANY($2::text[]))`

var _ store.WaitingStamper = (*Store)(nil)

// waitingStamp is the statement of WaitingStamp. Each part is a few index
// probes or counter rows, except the third, which reads the claims that
// expired without a release (as the inbox's idle count does), not the live
// ones:
//   - the tenant's latest claim expiry (claims_live, read backwards): moves
//     when a claim is taken or extended past every other;
//   - its earliest expiry after now (claims_live): moves when a live claim
//     expires (it was at or after the earliest) or is released;
//   - the count of run claims held and expired by now (claims_held):
//     moves when a held claim expires, or a stalled one is taken over or
//     released;
//   - the counters of held run claims (held_counts, summed over slots):
//     move when a claim of a queued, running or interrupted run is taken
//     or released;
//   - the latest release of a run claim (claims_held, read backwards: a
//     release sets the claim's expiry to its time): moves on every
//     release of a live run claim, so a claim taken and released between
//     two stamps (a Decide, which writes the ledger of a waiting run and
//     not its row), or one released and another taken in the same group,
//     changes the stamp while longer claims stay live;
//   - the newest waiting run (runs_waiting, read backwards) and the
//     counters of waiting runs.
//
// It used to count the live claims, which read every claim of the fleet on
// each tick of every live inbox.
const waitingStamp = `SELECT concat_ws('|',
	coalesce((SELECT max(expires_at) FROM {{schema}}.claims WHERE tenant = $1)::text, ''),
	coalesce((SELECT min(expires_at) FROM {{schema}}.claims WHERE tenant = $1 AND expires_at > $2)::text, ''),
	(SELECT count(*) FROM {{schema}}.claims c WHERE c.tenant = $1 AND c.held AND c.expires_at <= $2 AND starts_with(c.key, 'run:')),
	coalesce((SELECT string_agg(status || '/' || wait_kind || '=' || n, ',' ORDER BY status, wait_kind) FROM
		(SELECT status, wait_kind, sum(n) AS n FROM {{schema}}.held_counts WHERE tenant = $1 GROUP BY status, wait_kind) h), ''),
	coalesce((SELECT max(c.expires_at) FROM {{schema}}.claims c WHERE c.tenant = $1 AND NOT c.held AND starts_with(c.key, 'run:'))::text, ''),
	coalesce((SELECT r.updated_at || '/' || r.id FROM {{schema}}.runs r WHERE r.tenant = $1 AND ` + waitingCond + `
		ORDER BY r.updated_at DESC, r.id DESC LIMIT 1), ''),
	coalesce((SELECT string_agg(status || '/' || wait_kind || '=' || n, ',' ORDER BY status, wait_kind) FROM
		(SELECT status, wait_kind, sum(n) AS n FROM {{schema}}.run_counts WHERE tenant = $1 AND status IN ('interrupted', 'running')
		GROUP BY status, wait_kind) c), ''))`

// WaitingStamp implements [store.WaitingStamper].
func (s *Store) WaitingStamp(ctx context.Context, tenant string, now time.Time) (string, error) {
	if tenant == "" {
		return "", &store.InvalidError{Field: "tenant", Reason: "empty"}
	}
	var stamp string
	if err := s.pool.QueryRow(ctx, s.q(waitingStamp), tenant, s.listNow(now)).Scan(&stamp); err != nil {
		return "", mapErr("waiting stamp", err)
	}
	return stamp, nil
}
