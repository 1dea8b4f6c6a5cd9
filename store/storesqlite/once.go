package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

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
// Errors and what to do:
//   - before fn ran (ran=false): a [*store.BusyError] (the record could not
//     be read for lock contention) means that nothing of OnceTx's was done
//     and fn did not run: OnceTx may be called again, in tx, or tx rolled
//     back and made again.
//   - after fn ran (ran=true), the record could not be inserted: a
//     [*NotRecordedError], never a [*store.BusyError], since calling again
//     in tx would run fn a second time there. Roll tx back; when its Busy
//     is set (another connection held the write lock past the busy
//     timeout, or committed since tx's snapshot was taken), making the
//     whole transaction again (a new tx, OnceTx again, fn again in it) may
//     succeed. A record that exists already is one of these too, wrapping
//     the [*store.ExistsError].
//
// A transaction begun on [Store.DB] with default options takes the write
// lock at its BEGIN (BEGIN IMMEDIATE), and then none of this happens: only
// a deferred transaction (a read-only BeginTx, a handle of the caller's
// own) can lose the lock to another writer after fn ran.
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
		err = mapErr(ctx, err)
		nr := &NotRecordedError{Key: key, Err: err}
		var be *store.BusyError
		if errors.As(err, &be) {
			nr.Busy, nr.Err = true, be.Err
		}
		return nil, true, nr
	}
	return r.Value, true, nil
}

// NotRecordedError is [OnceTx]'s error when fn ran in the caller's
// transaction but its record could not be inserted there: the transaction
// holds fn's effect without its record and must be rolled back, never
// committed. It never matches [store.ErrBusy] (calling OnceTx again in the
// same transaction would run fn a second time).
type NotRecordedError struct {
	// Key is the once key.
	Key string
	// Busy reports lock contention: another connection held the file's
	// write lock past the busy timeout, or committed after the
	// transaction's snapshot was taken (SQLITE_BUSY_SNAPSHOT). The whole
	// transaction, made again, may succeed.
	Busy bool
	// Err is the cause: SQLite's error when Busy, else the insert's error
	// (an [*store.ExistsError] when a record was inserted meanwhile).
	Err error
}

func (e *NotRecordedError) Error() string {
	why := "roll the transaction back"
	if e.Busy {
		why = "roll the transaction back and make it again"
	}
	return fmt.Sprintf("storesqlite: once %s: fn ran but its record was not inserted (%v): %s", e.Key, e.Err, why)
}

// Unwrap returns the cause.
func (e *NotRecordedError) Unwrap() error { return e.Err }
