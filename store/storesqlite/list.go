package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Lists, counts and retention. Each query is written so that one of the
// indexes of migrations/0006_scale.sql serves it: a status list walks
// runs_by_status (or runs_waiting for the inbox's order) from the page's
// cursor, several statuses are one index walk each merged by a UNION ALL,
// and a partial index is named by repeating its condition literally,
// which is how SQLite recognises it (see TestQueryPlans).

// runColumnsList is runColumnsRead for a table aliased r.
var runColumnsList = strings.NewReplacer("runs.tenant", "r.tenant", "runs.id", "r.id").Replace(runColumnsRead)

// runColumnsSummary is runColumnsList without the checkpoint.
var runColumnsSummary = strings.Replace(runColumnsList, "wait_kind,\n\tcheckpoint,", "wait_kind,\n\tNULL,", 1)

// waitingCond is the condition of the partial index runs_waiting.
const waitingCond = `r.status IN ('interrupted', 'running')`

// finishedCond is the condition of the partial index runs_finished.
const finishedCond = `r.status IN ('completed', 'failed', 'cancelled')`

// filter builds the WHERE terms shared by RunList and RunCount.
type filter struct {
	where []string
	args  []any
}

func (f *filter) add(cond string, args ...any) {
	f.where = append(f.where, cond)
	f.args = append(f.args, args...)
}

func (f *filter) sql() string { return strings.Join(f.where, " AND ") }

func (f *filter) claim(cf store.ClaimFilter, now time.Time) {
	const live = `SELECT 1 FROM claims c WHERE c.tenant = r.tenant AND c.key = 'run:' || r.id AND c.expires_at > ?`
	switch cf.State {
	case store.ClaimLive:
		f.add(`EXISTS (`+live+`)`, micros(now))
	case store.ClaimIdle:
		if cf.HolderPrefix == "" {
			f.add(`NOT EXISTS (`+live+`)`, micros(now))
		} else {
			f.add(`NOT EXISTS (`+live+` AND substr(c.holder, 1, ?) <> ?)`, micros(now), len(cf.HolderPrefix), cf.HolderPrefix)
		}
	}
}

// in adds "col IN (?, ...)" for statuses.
func (f *filter) in(col string, statuses []store.RunStatus) {
	ph := make([]string, len(statuses))
	for i, st := range statuses {
		ph[i] = "?"
		f.args = append(f.args, string(st))
	}
	f.where = append(f.where, col+` IN (`+strings.Join(ph, ", ")+`)`)
}

// heldBy is the FROM clause and the first terms of a list or count of the
// runs whose live claim at now is held by a holder starting with prefix,
// read from the claims side: a host's prefix ("host:", store.HostPrefix)
// through claims_host, as many index entries as that host holds live
// claims; no prefix through claims_runs (the live claims of runs, not the
// tenant's other claims); another prefix through claims_runs too, its
// holder checked. Each claim finds its run by key.
func heldBy(tenant, prefix string, now time.Time) (string, filter) {
	var f filter
	var held filter
	ix := `claims_runs`
	held.add(`c.tenant = ?`, tenant)
	switch {
	case store.HostPrefix(prefix):
		ix = `claims_host`
		held.add(hostExpr+` = ?`, prefix)
	case prefix != "":
		held.add(`substr(c.holder, 1, ?) = ?`, len(prefix), prefix)
	}
	held.add(`c.expires_at > ?`, micros(now))
	held.add(`substr(c.key, 1, 4) = 'run:'`)
	from := `(SELECT substr(c.key, 5) AS held_id FROM claims c INDEXED BY ` + ix + ` WHERE ` + held.sql() + `) h CROSS JOIN runs r`
	f.args = held.args
	f.add(`r.tenant = ?`, tenant)
	f.add(`r.id = h.held_id`)
	return from, f
}

// hostExpr is the expression claims_host indexes (migrations/0010): the
// holder up to and including its first ':' (empty without one).
const hostExpr = `substr(c.holder, 1, instr(c.holder, ':'))`

func (s *Store) listNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// RunList implements [store.Store]. A row that cannot be decoded hides no
// other: the healthy runs come with a [*store.DataError] naming it.
func (s *Store) RunList(ctx context.Context, p *store.RunListParams) ([]*store.Run, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	fromClaims, err := s.liveFromClaims(ctx, p)
	if err != nil {
		return nil, err
	}
	q, args := s.listQueryFrom(p, fromClaims)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap("list runs", mapErr(ctx, err))
	}
	defer rows.Close()
	out := []*store.Run{}
	var bad error // the first row that does not decode; it hides no other
	for rows.Next() {
		r, err := scanRunRow(rows, p.Summary)
		if errors.Is(err, store.ErrData) {
			if bad == nil {
				bad = err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list runs", mapErr(ctx, err))
	}
	return out, bad
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
	var listed, held int64
	ph := strings.Repeat(", ?", len(statuses))[2:]
	args := []any{p.Tenant}
	for _, st := range statuses {
		args = append(args, string(st))
	}
	args = append(args, args...)
	if err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(SUM(n), 0) FROM run_counts WHERE tenant = ? AND status IN (`+ph+`)),
		(SELECT COALESCE(SUM(n), 0) FROM held_counts WHERE tenant = ? AND status IN (`+ph+`))`, args...).Scan(&listed, &held); err != nil {
		return false, wrap("count runs", mapErr(ctx, err))
	}
	now := micros(s.listNow(p.Now))
	return store.LiveSide(p.Limit, listed, held, func(k int64) (expired, live int64, err error) {
		if err := s.db.QueryRowContext(ctx, heldCapped, p.Tenant, now, k).Scan(&expired, &live); err != nil {
			return 0, 0, wrap("count claims", mapErr(ctx, err))
		}
		return expired, live, nil
	})
}

// heldCapped counts, each up to ?3, the held claims of runs of tenant ?1
// expired by ?2 and those live at it: two ranges of claims_held, their
// entries only.
const heldCapped = `SELECT
	(SELECT count(*) FROM (SELECT 1 FROM claims c INDEXED BY claims_held
		WHERE c.tenant = ?1 AND c.held = 1 AND c.expires_at <= ?2 AND substr(c.key, 1, 4) = 'run:' LIMIT ?3)),
	(SELECT count(*) FROM (SELECT 1 FROM claims c INDEXED BY claims_held
		WHERE c.tenant = ?1 AND c.held = 1 AND c.expires_at > ?2 AND substr(c.key, 1, 4) = 'run:' LIMIT ?3))`

// listQuery is RunList's statement, from the runs side for the runs whose
// claim is live without a holder prefix (see listQueryFrom).
func (s *Store) listQuery(p *store.RunListParams) (string, []any) {
	return s.listQueryFrom(p, false)
}

// listQueryFrom is RunList's statement; fromClaims reads the runs whose
// claim is live from the claims side (see liveFromClaims).
func (s *Store) listQueryFrom(p *store.RunListParams, fromClaims bool) (string, []any) {
	cols := runColumnsList
	if p.Summary {
		cols = runColumnsSummary
	}
	order, after := `created_at DESC, id DESC`, `(r.created_at, r.id) < (?, ?)`
	if p.Order == store.RunsWaitingLongest {
		order, after = `updated_at, id`, `(r.updated_at, r.id) > (?, ?)`
	}
	now := s.listNow(p.Now)
	statuses := p.ListStatuses()
	if p.Claim.State == store.ClaimLive && (p.Claim.HolderPrefix != "" || fromClaims) {
		// The runs a holder prefix holds, or every run a live claim
		// holds when few are: read from the claims side.
		from, f := heldBy(p.Tenant, p.Claim.HolderPrefix, now)
		if len(statuses) > 0 {
			f.in(`r.status`, statuses)
		}
		if p.ParentID != "" {
			f.add(`r.parent_id = ?`, p.ParentID)
		}
		if p.AgentID != "" {
			f.add(`r.agent_id = ?`, p.AgentID)
		}
		if p.WaitKind != "" {
			f.add(`r.wait_kind = ?`, p.WaitKind)
		}
		if p.After != nil {
			f.add(after, micros(p.After.At), p.After.ID)
		}
		q := `SELECT ` + cols + ` FROM ` + from + ` WHERE ` + f.sql() + ` ORDER BY r.` + strings.ReplaceAll(order, ", ", ", r.")
		if p.Limit > 0 {
			q += ` LIMIT ?`
			f.args = append(f.args, p.Limit)
		}
		return q, f.args
	}
	// The inbox's order over waiting runs is one walk of runs_waiting,
	// whose entries are exactly the interrupted and running runs.
	waiting := p.Order == store.RunsWaitingLongest && len(statuses) > 0
	for _, st := range statuses {
		waiting = waiting && (st == store.RunInterrupted || st == store.RunRunning)
	}
	one := func(status store.RunStatus) (string, []any) {
		var f filter
		f.add(`r.tenant = ?`, p.Tenant)
		switch {
		case waiting && len(statuses) == 2:
			f.add(waitingCond)
		case waiting:
			f.add(waitingCond)
			f.add(`r.status = ?`, string(status))
		case status != "":
			f.add(`r.status = ?`, string(status))
		}
		if p.ParentID != "" {
			f.add(`r.parent_id = ?`, p.ParentID)
			f.add(`r.parent_id <> ''`) // runs_by_parent's condition
		}
		if p.AgentID != "" {
			f.add(`r.agent_id = ?`, p.AgentID)
		}
		if p.WaitKind != "" {
			f.add(`r.wait_kind = ?`, p.WaitKind)
		}
		f.claim(p.Claim, now)
		if p.After != nil {
			f.add(after, micros(p.After.At), p.After.ID)
		}
		q := `SELECT ` + cols + ` FROM runs r WHERE ` + f.sql() + ` ORDER BY r.` + strings.ReplaceAll(order, ", ", ", r.")
		if p.Limit > 0 {
			q += ` LIMIT ?`
			f.args = append(f.args, p.Limit)
		}
		return q, f.args
	}
	if len(statuses) <= 1 || waiting {
		var st store.RunStatus
		if len(statuses) == 1 {
			st = statuses[0]
		}
		return one(st)
	}
	var parts []string
	var args []any
	for _, st := range statuses {
		q, a := one(st)
		parts = append(parts, `SELECT * FROM (`+q+`)`)
		args = append(args, a...)
	}
	q := strings.Join(parts, ` UNION ALL `) + ` ORDER BY ` + order
	if p.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, p.Limit)
	}
	return q, args
}

// RunCount implements [store.Store]. A count of active runs (queued,
// running, interrupted) of the whole tenant reads the counters that every
// write keeps (migrations/0009_run_counts.sql): a few rows, whatever the
// number of runs. With the idle-claim filter, the runs a live claim takes
// out (counterQueries: the held-claim counters, corrected by the held
// claims expired since) are subtracted, in the same snapshot.
func (s *Store) RunCount(ctx context.Context, p *store.RunCountParams) ([]store.RunCount, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	if all, live, args, ok := s.counterQueries(p); ok {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for both
		if err != nil {
			return nil, wrap("count runs", mapErr(ctx, err))
		}
		defer tx.Rollback()
		a, err := scanCounts(ctx, tx, all, args[0])
		if err != nil {
			return nil, err
		}
		var l []store.RunCount
		if live != "" {
			if l, err = scanCounts(ctx, tx, live, args[1]); err != nil {
				return nil, err
			}
		}
		return store.SubtractCounts(a, l), nil
	}
	q, args := s.countQuery(p)
	return scanCounts(ctx, s.db, q, args)
}

func scanCounts(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args []any) ([]store.RunCount, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap("count runs", mapErr(ctx, err))
	}
	defer rows.Close()
	out := []store.RunCount{}
	for rows.Next() {
		var c store.RunCount
		var st string
		if err := rows.Scan(&st, &c.WaitKind, &c.N); err != nil {
			return nil, wrap("count runs", mapErr(ctx, err))
		}
		c.Status = store.RunStatus(st)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("count runs", mapErr(ctx, err))
	}
	store.SortCounts(out)
	return out, nil
}

// counterQueries are the queries of a count that the counters answer
// (store.Counted): the counters' rows, and, for the idle-claim filter,
// the runs among them with a live claim at now, as signed rows to sum by
// group (empty otherwise): the runs whose claim is held (held_counts,
// migrations/0014), less those whose held claim expired by now, plus
// those whose released claim expires after now (none unless now is in
// the past), both from claims_held. It reads the counters and the claims
// that expired without a release, not the runs being driven.
func (s *Store) counterQueries(p *store.RunCountParams) (all, live string, args [2][]any, ok bool) {
	if !store.Counted(p) {
		return "", "", args, false
	}
	ph := make([]string, len(p.Statuses))
	var sts []any
	for i, st := range p.Statuses {
		ph[i] = "?"
		sts = append(sts, string(st))
	}
	in := `status IN (` + strings.Join(ph, ", ") + `)`
	all = `SELECT status, wait_kind, n FROM run_counts WHERE tenant = ? AND ` + in + ` AND n <> 0`
	args[0] = append([]any{p.Tenant}, sts...)
	if p.Claim.State == store.ClaimIdle {
		now := micros(s.listNow(p.Now))
		live = `SELECT status, wait_kind, n FROM held_counts WHERE tenant = ? AND ` + in + ` AND n <> 0
		UNION ALL ` + heldClass(`-`, `c.held = 1 AND c.expires_at <= ?`, in) + `
		UNION ALL ` + heldClass(``, `c.held = 0 AND c.expires_at > ?`, in)
		args[1] = append([]any{p.Tenant}, sts...)
		for range 2 {
			args[1] = append(append(args[1], p.Tenant, now), sts...)
		}
	}
	return all, live, args, true
}

// heldClass counts (sign "-": negated) the runs of statuses in whose claim
// is in a class of claims_held (cond: held or not, a range of expiry),
// each run read by key.
func heldClass(sign, cond, in string) string {
	return `SELECT r.status, r.wait_kind, ` + sign + `count(*) FROM claims c INDEXED BY claims_held CROSS JOIN runs r
		WHERE c.tenant = ? AND ` + cond + ` AND substr(c.key, 1, 4) = 'run:' AND r.tenant = c.tenant AND r.id = substr(c.key, 5)
		AND r.` + in + ` GROUP BY r.status, r.wait_kind`
}

func (s *Store) countQuery(p *store.RunCountParams) (string, []any) {
	if p.Claim.State == store.ClaimLive && p.Claim.HolderPrefix != "" {
		from, f := heldBy(p.Tenant, p.Claim.HolderPrefix, s.listNow(p.Now))
		if len(p.Statuses) > 0 {
			f.in(`r.status`, p.Statuses)
		}
		if p.ParentID != "" {
			f.add(`r.parent_id = ?`, p.ParentID)
		}
		return `SELECT r.status, r.wait_kind, count(*) FROM ` + from + ` WHERE ` + f.sql() + ` GROUP BY r.status, r.wait_kind`, f.args
	}
	var f filter
	from := `runs r`
	f.add(`r.tenant = ?`, p.Tenant)
	if len(p.Statuses) > 0 {
		waiting := true
		ph := make([]string, len(p.Statuses))
		for i, st := range p.Statuses {
			ph[i] = "?"
			f.args = append(f.args, string(st))
			waiting = waiting && (st == store.RunInterrupted || st == store.RunRunning)
		}
		f.where = append(f.where, `r.status IN (`+strings.Join(ph, ", ")+`)`)
		if waiting {
			f.add(waitingCond)
			from = `runs r INDEXED BY runs_waiting` // it holds the wait kind: no table read
		}
	}
	if p.ParentID != "" {
		f.add(`r.parent_id = ?`, p.ParentID)
		f.add(`r.parent_id <> ''`)
	}
	f.claim(p.Claim, s.listNow(p.Now))
	return `SELECT r.status, r.wait_kind, count(*) FROM ` + from + ` WHERE ` + f.sql() + ` GROUP BY r.status, r.wait_kind`, f.args
}

// pruneQuery selects a batch of finished runs that may be removed, oldest
// write first, with their ledger and event counts (see
// store.RunPruneParams for the rules).
const pruneQuery = `SELECT r.id,
		(SELECT count(*) FROM ledger l WHERE l.tenant = r.tenant AND l.run_id = r.id),
		(SELECT COALESCE(SUM(e.seq - COALESCE(e.first_seq, e.seq) + 1), 0) FROM events e WHERE e.tenant = r.tenant AND e.run_id = r.id), r.updated_at
	FROM runs r INDEXED BY runs_finished
	WHERE r.tenant = ? AND ` + finishedCond + ` AND r.updated_at < ? AND (r.updated_at, r.id) > (?, ?)
	AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant = r.tenant AND l.run_id = r.id AND l.state IN ('started', 'unknown'))
	AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = r.tenant AND e.run_id = r.id AND e.state IN ('started', 'unknown')
		AND NOT EXISTS (SELECT 1 FROM events s WHERE s.tenant = e.tenant AND s.run_id = e.run_id AND s.call_id = e.call_id AND s.state = 'committed'))
	AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.tenant = r.tenant AND c.key = 'run:' || r.id AND c.expires_at > ?)
	AND ` + treeFinished + `
	AND (? OR r.session_id = '' OR NOT EXISTS (SELECT 1 FROM runs u WHERE u.tenant = r.tenant AND u.session_id = r.session_id
		AND u.session_id <> '' AND (u.status NOT IN ('completed', 'failed', 'cancelled') OR u.updated_at >= ?)))
	ORDER BY r.updated_at, r.id LIMIT ?`

// treeFinished holds when no run of r's tree is unfinished (the tree is
// r.root_id, or r itself for a top-level run): its root, read by key, and
// its unfinished children, from runs_open_tree (one probe, whatever the
// tree's finished runs). It stands for every rule of the tree (a child
// not finished keeps its parent, a parent not finished its child, a
// grandchild its root and every finished branch of its tree, whose turns
// and tokens the tree's budget counts).
const treeFinished = `NOT EXISTS (SELECT 1 FROM runs o INDEXED BY runs_open_tree WHERE o.tenant = r.tenant
		AND o.root_id = (CASE WHEN r.root_id = '' THEN r.id ELSE r.root_id END)
		AND o.root_id <> '' AND o.status IN ('queued', 'running', 'interrupted'))
	AND (r.root_id = '' OR NOT EXISTS (SELECT 1 FROM runs rt WHERE rt.tenant = r.tenant AND rt.id = r.root_id
		AND rt.status IN ('queued', 'running', 'interrupted')))`

// pruneOwnedClaims removes the other claims the pruned runs own
// (store.RunOwnsClaim): "children:<id>:<n>" (the places of the child
// budget of the tree the run is the root of) and "cancel:<id>:<epoch>",
// each a range of the claims' primary key per run and kind.
const pruneOwnedClaims = `DELETE FROM claims WHERE tenant = ?1 AND key IN (SELECT c.key
	FROM json_each(?2) j CROSS JOIN (SELECT 'children:' AS k UNION ALL SELECT 'cancel:') p CROSS JOIN claims c
	WHERE c.tenant = ?1 AND c.key > p.k || j.value || ':' AND c.key < p.k || j.value || ';'
		AND substr(c.key, length(p.k || j.value) + 2) NOT GLOB '*[^0-9]*')`

// RunPrune implements [store.Store]: one write transaction per batch, so a
// batch holds the write lock only while it deletes at most Limit runs.
func (s *Store) RunPrune(ctx context.Context, p *store.RunPruneParams) (*store.RunPruneResult, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var res *store.RunPruneResult
	pick := func(q querier) error {
		res = &store.RunPruneResult{RunIDs: []string{}}
		cut := micros(p.FinishedBefore)
		afterAt, afterID := int64(-1<<62), ""
		if p.After != nil {
			afterAt, afterID = micros(p.After.At), p.After.ID
		}
		rows, err := q.QueryContext(ctx, pruneQuery, p.Tenant, cut, afterAt, afterID, micros(s.now()), p.Sessions, cut, p.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var nl, ne, at int64
			if err := rows.Scan(&id, &nl, &ne, &at); err != nil {
				return err
			}
			if len(res.RunIDs) == p.Limit {
				res.More = true
				break
			}
			res.Last = &store.RunCursor{At: fromMicros(at), ID: id}
			res.RunIDs = append(res.RunIDs, id)
			res.LedgerEntries += nl
			res.Events += ne
		}
		return rows.Err()
	}
	if p.DryRun {
		if err := pick(s.db); err != nil {
			return nil, wrap("prune runs", mapErr(ctx, err))
		}
		return res, nil
	}
	err := s.write(ctx, func(tx querier) error {
		if err := pick(tx); err != nil || len(res.RunIDs) == 0 {
			return err
		}
		ids, err := json.Marshal(res.RunIDs)
		if err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM ledger WHERE tenant = ? AND run_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM run_log WHERE tenant = ? AND run_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM event_calls WHERE tenant = ? AND run_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM events WHERE tenant = ? AND run_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM claims WHERE tenant = ? AND key IN (SELECT 'run:' || value FROM json_each(?))`,
			pruneOwnedClaims,
			`DELETE FROM runs WHERE tenant = ? AND id IN (SELECT value FROM json_each(?))`,
		} {
			if _, err := tx.ExecContext(ctx, q, p.Tenant, string(ids)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("prune runs", err)
	}
	return res, nil
}

// claimsDue lists the claims of a host prefix that are due (expired by
// a time), through claims_host: an equality on the holder's host part and
// a range of expiry.
const claimsDue = `SELECT ` + claimColumns + ` FROM claims INDEXED BY claims_host
	WHERE tenant = ? AND substr(holder, 1, instr(holder, ':')) = ? AND expires_at <= ?
	ORDER BY expires_at, key LIMIT ?`

// ClaimList implements [store.Store].
func (s *Store) ClaimList(ctx context.Context, p *store.ClaimListParams) ([]*store.Claim, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if p.HolderPrefix != "" {
		rows, err = s.db.QueryContext(ctx, claimsDue, p.Tenant, p.HolderPrefix, micros(p.ExpiredBy), p.Limit)
	} else {
		var keys []byte
		if keys, err = json.Marshal(p.Keys); err != nil {
			return nil, err
		}
		rows, err = s.db.QueryContext(ctx, `SELECT `+claimColumns+` FROM claims
			WHERE tenant = ? AND key IN (SELECT value FROM json_each(?)) ORDER BY key`, p.Tenant, string(keys))
	}
	if err != nil {
		return nil, wrap("list claims", mapErr(ctx, err))
	}
	defer rows.Close()
	out := []*store.Claim{}
	for rows.Next() {
		c, err := scanClaim(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list claims", mapErr(ctx, err))
	}
	return out, nil
}

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
//   - the counters of held run claims (held_counts): move when a claim of
//     a queued, running or interrupted run is taken or released;
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
const waitingStamp = `SELECT
	(SELECT expires_at FROM claims INDEXED BY claims_live WHERE tenant = ?1 ORDER BY expires_at DESC LIMIT 1),
	(SELECT expires_at FROM claims INDEXED BY claims_live WHERE tenant = ?1 AND expires_at > ?2 ORDER BY expires_at LIMIT 1),
	(SELECT count(*) FROM claims c INDEXED BY claims_held
		WHERE c.tenant = ?1 AND c.held = 1 AND c.expires_at <= ?2 AND substr(c.key, 1, 4) = 'run:'),
	(SELECT group_concat(status || '/' || wait_kind || '=' || n, ',') FROM
		(SELECT status, wait_kind, n FROM held_counts WHERE tenant = ?1 ORDER BY status, wait_kind)),
	(SELECT c.expires_at FROM claims c INDEXED BY claims_held
		WHERE c.tenant = ?1 AND c.held = 0 AND substr(c.key, 1, 4) = 'run:' ORDER BY c.expires_at DESC LIMIT 1),
	(SELECT r.updated_at || '/' || r.id FROM runs r INDEXED BY runs_waiting WHERE r.tenant = ?1 AND ` + waitingCond + `
		ORDER BY r.updated_at DESC, r.id DESC LIMIT 1),
	(SELECT group_concat(status || '/' || wait_kind || '=' || n, ',') FROM
		(SELECT status, wait_kind, n FROM run_counts WHERE tenant = ?1 AND status IN ('interrupted', 'running') ORDER BY status, wait_kind))`

// WaitingStamp implements [store.WaitingStamper].
func (s *Store) WaitingStamp(ctx context.Context, tenant string, now time.Time) (string, error) {
	if tenant == "" {
		return "", &store.InvalidError{Field: "tenant", Reason: "empty"}
	}
	var latest, earliest, released sql.NullInt64
	var stalled int64
	var held, newest, counts sql.NullString
	if err := s.db.QueryRowContext(ctx, waitingStamp, tenant, micros(s.listNow(now))).Scan(&latest, &earliest, &stalled, &held,
		&released, &newest, &counts); err != nil {
		return "", wrap("waiting stamp", mapErr(ctx, err))
	}
	return fmt.Sprintf("%d|%d|%d|%s|%d|%s|%s", latest.Int64, earliest.Int64, stalled, held.String, released.Int64, newest.String,
		counts.String), nil
}
