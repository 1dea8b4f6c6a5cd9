package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/actoviq/actoviq-go/store"
)

func scanOnce(sc scanner) (*store.OnceRecord, error) {
	var (
		r       store.OnceRecord
		value   sql.NullString
		created int64
	)
	err := sc.Scan(&r.Tenant, &r.Key, &value, &created)
	d := decoder{kind: "once", id: r.Key}
	if err != nil {
		return nil, d.scanErr(err)
	}
	r.Value = d.reqJSON("value", value)
	r.CreatedAt = fromMicros(created)
	if err := d.result(); err != nil {
		return nil, err
	}
	return &r, nil
}

// OnceGet implements [store.Store].
func (s *Store) OnceGet(ctx context.Context, p *store.OnceGetParams) (*store.OnceRecord, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var r *store.OnceRecord
	found, err := queryOne(one(s.db.QueryContext(ctx, `SELECT tenant, key, value, created_at FROM once_records
		WHERE tenant = ? AND key = ?`, p.Tenant, p.Key)),
		func(sc scanner) (err error) { r, err = scanOnce(sc); return err })
	if err != nil {
		return nil, wrap("get once record "+p.Key, mapErr(ctx, err))
	}
	if !found {
		return nil, &store.NotFoundError{Kind: "once", ID: p.Key}
	}
	return r, nil
}

// OncePut implements [store.Store]. The first value for a key stays; a
// second put returns a [*store.ExistsError].
func (s *Store) OncePut(ctx context.Context, p *store.OncePutParams) (*store.OnceRecord, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	r := &store.OnceRecord{Tenant: p.Tenant, Key: p.Key, Value: cloneJSON(p.Value)}
	err := s.write(ctx, func(tx querier) error {
		r.CreatedAt = s.now()
		return insertOnce(ctx, tx, r)
	})
	if err != nil {
		return nil, wrap("put once record "+p.Key, err)
	}
	return r, nil
}

func insertOnce(ctx context.Context, tx querier, r *store.OnceRecord) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO once_records (tenant, key, value, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, r.Tenant, r.Key, string(r.Value), micros(r.CreatedAt))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return &store.ExistsError{Kind: "once", ID: r.Key}
	}
	return nil
}

// OnceTx is the once-record variant for an effect on tables in the same
// SQLite database as the store. Inside the caller's transaction tx (begun
// on [Store.DB]) it returns the recorded value if the record exists
// (ran=false); otherwise it runs fn in tx and inserts the record with fn's
// value in the same tx (ran=true). The caller commits: the effect and its
// record then become durable together or not at all, so there is no window
// in which one exists without the other. An error from fn, or a record
// inserted meanwhile by a transaction that did not hold the write lock
// (an [*store.ExistsError]), means the caller must roll back.
//
// tx must belong to the database of a Store opened by this package (the
// once_records table must exist). The record's time is the wall clock.
func OnceTx(ctx context.Context, tx *sql.Tx, tenant, key string, fn func(tx *sql.Tx) (json.RawMessage, error)) (json.RawMessage, bool, error) {
	if tenant == "" {
		return nil, false, &store.InvalidError{Field: "Tenant", Reason: "empty"}
	}
	if key == "" {
		return nil, false, &store.InvalidError{Field: "Key", Reason: "empty"}
	}
	if tx == nil || fn == nil {
		return nil, false, &store.InvalidError{Field: "tx/fn", Reason: "nil"}
	}
	var existing *store.OnceRecord
	found, err := queryOne(one(tx.QueryContext(ctx, `SELECT tenant, key, value, created_at FROM once_records
		WHERE tenant = ? AND key = ?`, tenant, key)),
		func(sc scanner) (err error) { existing, err = scanOnce(sc); return err })
	if err != nil {
		return nil, false, wrap("once "+key, mapErr(ctx, err))
	}
	if found {
		return existing.Value, false, nil
	}
	v, err := fn(tx)
	if err != nil {
		return nil, true, err
	}
	if !json.Valid(v) {
		return nil, true, &store.InvalidError{Field: "value", Reason: "fn returned invalid JSON"}
	}
	r := &store.OnceRecord{Tenant: tenant, Key: key, Value: cloneJSON(v), CreatedAt: store.Clock(nil).Now()}
	if err := insertOnce(ctx, tx, r); err != nil {
		return nil, true, wrap("once "+key, mapErr(ctx, err))
	}
	return r.Value, true, nil
}
