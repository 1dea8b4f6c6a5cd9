package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
)

const ledgerColumns = `tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
	attempt, args_digest, args, result, error, approval, resolution, holder, epoch, revision,
	created_at, updated_at, started_at, committed_at`

func scanLedger(sc scanner) (*store.LedgerEntry, error) {
	var (
		e                                          store.LedgerEntry
		state                                      string
		args, result, errCol, approval, resolution sql.NullString
		created, updated                           int64
		started, committed                         sql.NullInt64
	)
	err := sc.Scan(&e.Tenant, &e.RunID, &e.CallID, &e.Turn, &e.Index, &e.Tool, &e.Effect, &state,
		&e.IdempotencyKey, &e.Attempt, &e.ArgsDigest, &args, &result, &errCol, &approval, &resolution,
		&e.Holder, &e.Epoch, &e.Revision, &created, &updated, &started, &committed)
	d := decoder{kind: "ledger", id: e.CallID}
	if err != nil {
		return nil, d.scanErr(err)
	}
	e.State = store.LedgerState(state)
	if !e.State.Valid() {
		d.fail("unknown state %q", state)
	}
	e.Args = d.json("args", args)
	e.Result = d.json("result", result)
	e.Error = d.json("error", errCol)
	e.Approval = d.decision("approval", approval)
	e.Resolution = d.decision("resolution", resolution)
	e.CreatedAt = fromMicros(created)
	e.UpdatedAt = fromMicros(updated)
	e.StartedAt = fromOptMicros(started)
	e.CommittedAt = fromOptMicros(committed)
	if err := d.result(); err != nil {
		return nil, err
	}
	return &e, nil
}

// LedgerGet implements [store.Store].
func (s *Store) LedgerGet(ctx context.Context, p *store.LedgerGetParams) (*store.LedgerEntry, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var e *store.LedgerEntry
	err := s.read(ctx, func(tx querier) error {
		// The latest transition record of the call, or its ledger table
		// row when that is newer (see journal.go).
		_, err := queryOne(one(tx.QueryContext(ctx, `SELECT * FROM (
				SELECT * FROM (SELECT `+entryColumns+` FROM events INDEXED BY events_by_call
					WHERE tenant = ?1 AND run_id = ?2 AND call_id = ?3 ORDER BY seq DESC LIMIT 1)
				UNION ALL SELECT `+ledgerColumns+` FROM ledger WHERE tenant = ?1 AND run_id = ?2 AND call_id = ?3)
			ORDER BY entry_rev DESC LIMIT 1`, p.Tenant, p.RunID, p.CallID)),
			func(sc scanner) (err error) { e, err = scanLedger(sc); return err })
		if err != nil || e != nil {
			return err
		}
		// An entry in a row of several records is at revision 1: the
		// latest such row naming the call. Looked for only when the call
		// has no row of its own: an entry read at revision 1 from its own
		// row (a new entry written started: the model's answer with its
		// first call's start, whose prepared event is a plain one) is in
		// no row's more, and the walk would pass every row of several
		// records of the run.
		m, err := multiRows(ctx, tx, multiRowOfCall, p.Tenant, p.RunID, p.CallID)
		if err != nil {
			return err
		}
		for _, r := range m {
			if found := eventrow.Find(r, p.CallID); found != nil && e == nil {
				e = found
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("get ledger entry "+p.CallID, mapErr(ctx, err))
	}
	if e == nil {
		return nil, &store.NotFoundError{Kind: "ledger", ID: p.CallID}
	}
	return e, nil
}

// multiRowOfCall selects the latest row of several records holding call
// ?3 of run ?2 of tenant ?1 in more, for multiRows: through event_calls
// (migrations/0017), not a walk of the run's rows of several records.
const multiRowOfCall = `SELECT e.tenant, e.run_id, e.seq, e.first_seq, e.more, e.more_crc, e.more_calls, e.entry_updated
	FROM event_calls c JOIN events e ON e.tenant = c.tenant AND e.run_id = c.run_id AND e.seq = c.seq
	WHERE c.tenant = ?1 AND c.run_id = ?2 AND c.call_id = ?3 AND e.more_calls IS NOT NULL
	ORDER BY c.seq DESC LIMIT 1`

// multiRows runs q, which selects tenant, run_id, seq, first_seq, more,
// more_crc, more_calls and entry_updated of rows holding several records,
// and returns each row's records.
func multiRows(ctx context.Context, tx querier, q string, args ...any) ([][]eventrow.Record, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]eventrow.Record
	for rows.Next() {
		var (
			tenant, runID string
			seq           int64
			m             multiCols
		)
		if err := m.after(rows).Scan(&tenant, &runID, &seq); err != nil {
			return nil, err
		}
		recs, err := m.decode(tenant, runID, seq)
		if err != nil {
			return nil, err
		}
		out = append(out, recs)
	}
	return out, rows.Err()
}

// LedgerList implements [store.Store]: entries in (Turn, Index, CallID)
// order. A row that cannot be decoded fails the call with a
// [*store.DataError] naming it.
func (s *Store) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	// Each call's latest transition record (SQLite takes the bare columns
	// of a MAX() aggregate from the row holding the maximum), and the
	// ledger table's rows; per call, the higher revision wins. RunIDs
	// reads several runs at once.
	runs, arg := `run_id = ?`, any(p.RunID)
	if len(p.RunIDs) > 0 {
		ids, err := json.Marshal(p.RunIDs)
		if err != nil {
			return nil, err
		}
		runs, arg = `run_id IN (SELECT value FROM json_each(?))`, string(ids)
	}
	type callKey struct{ run, call string }
	var out []*store.LedgerEntry
	err := s.read(ctx, func(tx querier) error {
		latest := map[callKey]*store.LedgerEntry{}
		for _, q := range []string{
			`SELECT ` + entryColumns + `, MAX(seq) FROM events WHERE tenant = ? AND ` + runs + ` AND call_id IS NOT NULL GROUP BY run_id, call_id`,
			`SELECT ` + ledgerColumns + `, 0 FROM ledger WHERE tenant = ? AND ` + runs,
		} {
			rows, err := tx.QueryContext(ctx, q, p.Tenant, arg)
			if err != nil {
				return err
			}
			for rows.Next() {
				e, err := scanLedger(dropLast{rows})
				if err != nil {
					rows.Close()
					return err
				}
				k := callKey{e.RunID, e.CallID}
				if cur, ok := latest[k]; !ok || e.Revision > cur.Revision {
					latest[k] = e
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		// The entries in rows of several records (each at revision 1).
		multi, err := multiRows(ctx, tx, `SELECT tenant, run_id, seq, first_seq, more, more_crc, more_calls, entry_updated
			FROM events INDEXED BY events_multi WHERE tenant = ? AND `+runs+` AND more_calls IS NOT NULL`, p.Tenant, arg)
		if err != nil {
			return err
		}
		for _, recs := range multi {
			for _, r := range recs {
				if e := r.Entry; e != nil {
					k := callKey{e.RunID, e.CallID}
					if cur, ok := latest[k]; !ok || e.Revision > cur.Revision {
						latest[k] = e
					}
				}
			}
		}
		out = make([]*store.LedgerEntry, 0, len(latest))
		for _, e := range latest {
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("list ledger of run "+p.RunID, err)
	}
	sortEntries(out)
	return out, nil
}

// sortEntries orders entries by run, then (Turn, Index, CallID).
func sortEntries(out []*store.LedgerEntry) {
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
}

// dropLast scans a row whose last column is not wanted.
type dropLast struct{ sc scanner }

func (d dropLast) Scan(dest ...any) error {
	var skip any
	return d.sc.Scan(append(dest, &skip)...)
}
