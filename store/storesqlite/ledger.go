package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/actoviq/actoviq-go/store"
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
	found, err := queryOne(one(s.db.QueryContext(ctx, `SELECT `+ledgerColumns+` FROM ledger
		WHERE tenant = ? AND run_id = ? AND call_id = ?`, p.Tenant, p.RunID, p.CallID)),
		func(sc scanner) (err error) { e, err = scanLedger(sc); return err })
	if err != nil {
		return nil, wrap("get ledger entry "+p.CallID, mapErr(ctx, err))
	}
	if !found {
		return nil, &store.NotFoundError{Kind: "ledger", ID: p.CallID}
	}
	return e, nil
}

// LedgerList implements [store.Store]: entries in (Turn, Index, CallID)
// order. A row that cannot be decoded fails the call with a
// [*store.DataError] naming it.
func (s *Store) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	q, arg := `SELECT `+ledgerColumns+` FROM ledger
		WHERE tenant = ? AND run_id = ? ORDER BY turn, idx, call_id`, any(p.RunID)
	if len(p.RunIDs) > 0 {
		ids, err := json.Marshal(p.RunIDs)
		if err != nil {
			return nil, err
		}
		q, arg = `SELECT `+ledgerColumns+` FROM ledger
		WHERE tenant = ? AND run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, turn, idx, call_id`, string(ids)
	}
	rows, err := s.db.QueryContext(ctx, q, p.Tenant, arg)
	if err != nil {
		return nil, wrap("list ledger of run "+p.RunID, mapErr(ctx, err))
	}
	defer rows.Close()
	out := []*store.LedgerEntry{}
	for rows.Next() {
		e, err := scanLedger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list ledger of run "+p.RunID, mapErr(ctx, err))
	}
	return out, nil
}

// ledgerWrite inserts (ExpectedRevision 0) or CAS-updates one entry inside
// tx and returns the stored copy. CreatedAt is kept on update; UpdatedAt
// is now. When fence is not nil the statement also requires the claim to
// hold (see fenceCond), so that a transition is a single statement; a
// failure is then diagnosed inside the same transaction.
func ledgerWrite(ctx context.Context, tx querier, now int64, w *store.LedgerWrite, fence *store.Fence) (*store.LedgerEntry, error) {
	e := w.Entry
	approval, approvalBack, err := encodeDecision(e.Approval)
	if err != nil {
		return nil, &store.InvalidError{Field: "Approval", Reason: err.Error()}
	}
	resolution, resolutionBack, err := encodeDecision(e.Resolution)
	if err != nil {
		return nil, &store.InvalidError{Field: "Resolution", Reason: err.Error()}
	}
	out := *e
	out.Args, out.Result, out.Error = cloneJSON(e.Args), cloneJSON(e.Result), cloneJSON(e.Error)
	out.Approval, out.Resolution = approvalBack, resolutionBack
	out.StartedAt, out.CommittedAt = store.Time(e.StartedAt), store.Time(e.CommittedAt)
	out.UpdatedAt = fromMicros(now)
	cond, fargs := fenceCond(e.Tenant, fence)

	if w.ExpectedRevision == 0 {
		out.Revision, out.CreatedAt = 1, out.UpdatedAt
		args := append([]any{e.Tenant, e.RunID, e.CallID, e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey,
			e.Attempt, e.ArgsDigest, optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), approval, resolution,
			e.Holder, e.Epoch, now, now, optMicros(e.StartedAt), optMicros(e.CommittedAt)}, fargs...)
		// INSERT ... SELECT ... WHERE: the WHERE also keeps the parser from
		// reading ON CONFLICT as part of the SELECT.
		res, err := tx.ExecContext(ctx, `INSERT INTO ledger (`+ledgerColumns+`)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ? WHERE 1`+cond+`
			ON CONFLICT DO NOTHING`, args...)
		if isForeignKey(err) {
			return nil, &store.NotFoundError{Kind: "run", ID: e.RunID}
		}
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 1 {
			return &out, nil
		}
	} else {
		var created int64
		args := append([]any{e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey, e.Attempt, e.ArgsDigest,
			optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), approval, resolution, e.Holder, e.Epoch,
			now, optMicros(e.StartedAt), optMicros(e.CommittedAt),
			e.Tenant, e.RunID, e.CallID, w.ExpectedRevision}, fargs...)
		found, err := queryOne(one(tx.QueryContext(ctx, `UPDATE ledger SET turn = ?, idx = ?, tool = ?, effect = ?,
			state = ?, idempotency_key = ?, attempt = ?, args_digest = ?, args = ?, result = ?, error = ?,
			approval = ?, resolution = ?, holder = ?, epoch = ?, revision = revision + 1, updated_at = ?,
			started_at = ?, committed_at = ?
			WHERE tenant = ? AND run_id = ? AND call_id = ? AND revision = ?`+cond+`
			RETURNING created_at`, args...)),
			func(sc scanner) error { return sc.Scan(&created) })
		if err != nil {
			return nil, err
		}
		if found {
			out.Revision, out.CreatedAt = w.ExpectedRevision+1, fromMicros(created)
			return &out, nil
		}
	}
	// Nothing was written: find out why, in the same transaction.
	if fence != nil {
		if _, err := checkFence(ctx, tx, e.Tenant, fence); err != nil {
			return nil, err
		}
	}
	var actual int64
	err = tx.QueryRowContext(ctx, `SELECT revision FROM ledger WHERE tenant = ? AND run_id = ? AND call_id = ?`,
		e.Tenant, e.RunID, e.CallID).Scan(&actual)
	if err == sql.ErrNoRows {
		if err := runExists(ctx, tx, e.Tenant, e.RunID); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return nil, &store.ConflictError{Kind: "ledger", ID: e.CallID, Expected: w.ExpectedRevision, Actual: actual}
}
