package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// The run journal (migrations/006_run_journal.sql): a ledger transition
// and its event are one row of events, and the run's log is appended to
// run_log, one row per write, compacted off the write path.

// entryCols are the ledger entry columns of an events row, in the order
// of ledgerCols (so that ledgerRow reads both).
const entryCols = `tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
	attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
	entry_rev, entry_created, entry_updated, started_at, committed_at`

// logCols reads a run's log rows as arrays, in the statement that reads
// the run row, so that both come from one snapshot.
const logCols = `, ARRAY(SELECT l.first FROM {{schema}}.run_log l WHERE l.tenant = runs.tenant AND l.run_id = runs.id ORDER BY l.seq),
	ARRAY(SELECT l.n FROM {{schema}}.run_log l WHERE l.tenant = runs.tenant AND l.run_id = runs.id ORDER BY l.seq),
	ARRAY(SELECT l.crc FROM {{schema}}.run_log l WHERE l.tenant = runs.tenant AND l.run_id = runs.id ORDER BY l.seq),
	ARRAY(SELECT l.items FROM {{schema}}.run_log l WHERE l.tenant = runs.tenant AND l.run_id = runs.id ORDER BY l.seq)`

// logArrays are the scan targets of logCols.
type logArrays struct {
	first, n, crc []int64
	items         []string
}

func (l *logArrays) dest() []any { return []any{&l.first, &l.n, &l.crc, &l.items} }

// fold checks every row's checksum and order and returns the items.
func (l *logArrays) fold(runID string, want int) ([]json.RawMessage, error) {
	if len(l.first) != len(l.items) || len(l.n) != len(l.items) || len(l.crc) != len(l.items) {
		return nil, &store.DataError{Kind: "run", ID: runID, Err: errors.New("log rows read unevenly")}
	}
	out := make([]json.RawMessage, 0, want)
	for i, text := range l.items {
		if l.first[i] != int64(len(out)) {
			return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log row %d starts at item %d, want %d", i+1, l.first[i], len(out))}
		}
		crc := l.crc[i]
		its, err := journal.Split([]byte(text), int(l.n[i]), &crc)
		if err != nil {
			return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log row %d: %w", i+1, err)}
		}
		out = append(out, its...)
	}
	if len(out) != want {
		return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log holds %d items, the run says %d", len(out), want)}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// multiNulls stand for the entry columns in a row of the union below that
// is a row of several records (kind 1): tenant and run_id, then these.
const multiNulls = `NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL`

// noMulti stands for the columns of a row of several records in a row of
// the union below that holds an entry (kind 0).
const noMulti = `NULL::bigint, NULL::bigint, NULL::text, NULL::bigint, NULL::text[], NULL::timestamptz`

// multiSelect selects a row of several records as a kind 1 row of the
// unions below.
const multiSelect = `1, tenant, run_id, ` + multiNulls + `, seq, first_seq, more, more_crc, more_calls, entry_updated`

// callInMore matches the rows of run $2 of tenant $1 naming call $3 in
// more_calls, through the inverted index events_more_calls, by the key
// alone (see migrations/014_event_rows.sql: a key names one tenant, run
// and call; with tenant = $1 AND run_id = $2 beside it, a generic plan may
// walk the run's rows instead).
const callInMore = `more_calls IS NOT NULL
	AND {{schema}}.event_call_keys(tenant, run_id, more_calls) @> {{schema}}.event_call_keys($1, $2, ARRAY[$3::text])`

// entryOrRow is a row of the unions below: an entry (kind 0) or a row of
// several records (kind 1).
type entryOrRow struct {
	kind int32
	l    ledgerRow
	seq  *int64
	m    multiCols
}

func (r *entryOrRow) dest() []any {
	return append(append([]any{&r.kind}, r.l.dest()...), append([]any{&r.seq}, r.m.dest()...)...)
}

// entries returns the entry of a kind 0 row, or those of a kind 1 row's
// records.
func (r *entryOrRow) entries() ([]*store.LedgerEntry, error) {
	if r.kind == 0 {
		e, err := r.l.entry()
		if err != nil {
			return nil, err
		}
		return []*store.LedgerEntry{e}, nil
	}
	if r.l.tenant == nil || r.l.runID == nil || r.seq == nil {
		return nil, errors.New("a row of several records read without its key")
	}
	recs, err := r.m.decode(*r.l.tenant, *r.l.runID, *r.seq)
	if err != nil {
		return nil, err
	}
	var out []*store.LedgerEntry
	for _, rec := range recs {
		if rec.Entry != nil {
			out = append(out, rec.Entry)
		}
	}
	return out, nil
}

// ledgerGetQuery reads call $3 of run $2 of tenant $1: its latest
// one-record row (through events_by_call), its ledger table row and the
// latest row naming it in more_calls (through events_more_calls).
const ledgerGetQuery = `(SELECT 0, ` + entryCols + `, ` + noMulti + ` FROM {{schema}}.events
		WHERE tenant = $1 AND run_id = $2 AND call_id = $3 ORDER BY seq DESC LIMIT 1)
	UNION ALL SELECT 0, ` + ledgerCols + `, ` + noMulti + ` FROM {{schema}}.ledger WHERE tenant = $1 AND run_id = $2 AND call_id = $3
	UNION ALL (SELECT ` + multiSelect + ` FROM {{schema}}.events WHERE ` + callInMore + ` ORDER BY seq DESC LIMIT 1)`

// LedgerGet implements [store.Store]: the newest of the call's latest
// one-record row, its ledger table row and the latest row naming it in
// more_calls (whose entries are at revision 1), read in one statement.
func (s *Store) LedgerGet(ctx context.Context, p *store.LedgerGetParams) (*store.LedgerEntry, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q(ledgerGetQuery), p.Tenant, p.RunID, p.CallID)
	if err != nil {
		return nil, mapErr("get ledger entry "+p.RunID+"/"+p.CallID, err)
	}
	defer rows.Close()
	var best *store.LedgerEntry
	for rows.Next() {
		var r entryOrRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, mapErr("get ledger entry "+p.RunID+"/"+p.CallID, err)
		}
		es, err := r.entries()
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.CallID == p.CallID && (best == nil || e.Revision > best.Revision) {
				best = e
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("get ledger entry "+p.RunID+"/"+p.CallID, err)
	}
	if best == nil {
		return nil, &store.NotFoundError{Kind: "ledger", ID: p.RunID + "/" + p.CallID}
	}
	return best, nil
}

// LedgerList implements [store.Store], in (turn, index, call id) order:
// per call, the newest of its latest one-record row, its ledger table row
// and its record in a row of several records, read in one statement.
func (s *Store) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	runs, arg := `run_id = $2`, any(p.RunID)
	if len(p.RunIDs) > 0 {
		runs, arg = `run_id = ANY($2::text[])`, p.RunIDs
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT 0, x.*, `+noMulti+` FROM (SELECT DISTINCT ON (run_id, call_id) * FROM (
			(SELECT DISTINCT ON (run_id, call_id) `+entryCols+` FROM {{schema}}.events
				WHERE tenant = $1 AND `+runs+` AND call_id IS NOT NULL ORDER BY run_id, call_id, seq DESC)
			UNION ALL SELECT `+ledgerCols+` FROM {{schema}}.ledger WHERE tenant = $1 AND `+runs+`) y
		ORDER BY run_id, call_id, entry_rev DESC) x
		UNION ALL SELECT `+multiSelect+` FROM {{schema}}.events WHERE tenant = $1 AND `+runs+` AND more_calls IS NOT NULL`), p.Tenant, arg)
	if err != nil {
		return nil, mapErr("list ledger of run "+p.RunID, err)
	}
	defer rows.Close()
	type callKey struct{ run, call string }
	latest := map[callKey]*store.LedgerEntry{}
	for rows.Next() {
		var r entryOrRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, mapErr("list ledger of run "+p.RunID, err)
		}
		es, err := r.entries()
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			k := callKey{e.RunID, e.CallID}
			if cur, ok := latest[k]; !ok || e.Revision > cur.Revision {
				latest[k] = e
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list ledger of run "+p.RunID, err)
	}
	out := make([]*store.LedgerEntry, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RunID != b.RunID {
			return a.RunID < b.RunID
		}
		if a.Turn != b.Turn {
			return a.Turn < b.Turn
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.CallID < b.CallID
	})
	return out, nil
}

// compactLater runs the merge a write of log row seq closes (see
// journal.Span) on a goroutine of the store, off the write's path. A
// merge runs under the run's advisory lock.
func (s *Store) compactLater(tenant, runID string, seq int64) {
	s.compactor.Later(seq, killpoint.CompactEvery, func(lo, hi int64) {
		// A failed merge changes nothing; the rows stay as they are.
		_ = s.compact(context.Background(), tenant, runID, lo, hi)
	})
}

// compact merges a run's log rows with seq in (lo, hi] into one row with
// seq hi.
func (s *Store) compact(ctx context.Context, tenant, runID string, lo, hi int64) error {
	return s.inTx(ctx, "compact log of run "+runID, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('actoviq-run/' || $1 || '/' || $2, 0))`, tenant, runID); err != nil {
			return err
		}
		// A run removed meanwhile (retention) gets no merged row back: the
		// share lock holds its row until this transaction ends.
		var one int
		if err := tx.QueryRow(ctx, s.q(`SELECT 1 FROM {{schema}}.runs WHERE tenant = $1 AND id = $2 FOR SHARE`), tenant, runID).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		rows, err := tx.Query(ctx, s.q(`SELECT seq, first, n, crc, items FROM {{schema}}.run_log
			WHERE tenant = $1 AND run_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`), tenant, runID, lo, hi)
		if err != nil {
			return err
		}
		var m journal.Merge
		for rows.Next() {
			var (
				seq, f, k, crc int64
				text           []byte
			)
			if err := rows.Scan(&seq, &f, &k, &crc, &text); err != nil {
				rows.Close()
				return err
			}
			if err := m.Add(seq, f, k, crc, text); err != nil {
				rows.Close()
				return &store.DataError{Kind: "run", ID: runID, Err: err}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		first, n, merged, ok := m.Row()
		if !ok {
			return nil
		}
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {{schema}}.run_log WHERE tenant = $1 AND run_id = $2 AND seq > $3 AND seq <= $4`),
			tenant, runID, lo, hi); err != nil {
			return err
		}
		killpoint.Reached(killpoint.Compaction)
		if _, err := tx.Exec(ctx, s.q(`INSERT INTO {{schema}}.run_log (tenant, run_id, seq, first, n, crc, items) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
			tenant, runID, hi, first, n, journal.Sum(merged), string(merged)); err != nil {
			return err
		}
		killpoint.Reached(killpoint.CompactionCommit)
		return nil
	})
}
