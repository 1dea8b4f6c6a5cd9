package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// OnceGet implements [store.Store].
func (s *Store) OnceGet(ctx context.Context, p *store.OnceGetParams) (*store.OnceRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	var (
		value     *string
		createdAt *time.Time
	)
	err := s.pool.QueryRow(ctx, s.q(`SELECT value, created_at FROM {{schema}}.once
		WHERE tenant = $1 AND key = $2 AND value IS NOT NULL`), p.Tenant, p.Key).Scan(&value, &createdAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "once", ID: p.Key}
	}
	if err != nil {
		return nil, mapErr("get once "+p.Key, err)
	}
	d := &decoder{kind: "once", id: p.Key}
	r := &store.OnceRecord{Tenant: p.Tenant, Key: p.Key, Value: d.json("value", value), CreatedAt: d.tm("created_at", createdAt)}
	if err := d.result(); err != nil {
		return nil, err
	}
	return r, nil
}

// OncePut implements [store.Store]. The first value is kept; a placeholder
// left by [Store.OnceTx] without a value counts as no value.
func (s *Store) OncePut(ctx context.Context, p *store.OncePutParams) (*store.OnceRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var createdAt time.Time
	err := retryable(ctx, func() error {
		return s.pool.QueryRow(ctx, s.q(`
			INSERT INTO {{schema}}.once AS o (tenant, key, value, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant, key) DO UPDATE SET value = EXCLUDED.value, created_at = EXCLUDED.created_at
			WHERE o.value IS NULL
			RETURNING created_at`), p.Tenant, p.Key, string(p.Value), now).Scan(&createdAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.ExistsError{Kind: "once", ID: p.Key}
	}
	if err != nil {
		return nil, mapErr("put once "+p.Key, err)
	}
	return &store.OnceRecord{Tenant: p.Tenant, Key: p.Key, Value: append(json.RawMessage(nil), p.Value...),
		CreatedAt: store.Time(createdAt)}, nil
}

// OnceTx runs fn at most once per (tenant, key) among transactions that
// commit, inside the caller's transaction tx, and returns its value. When a
// value was recorded already, fn is not called and that value is returned
// with ran == false.
//
// It inserts the once row as a placeholder (INSERT ... ON CONFLICT DO
// NOTHING) and then locks it (SELECT ... FOR UPDATE): a concurrent caller
// with the same key blocks on the row until tx ends. fn runs with the lock
// held, and its value is written to the row in tx. The record and fn's own
// database writes in tx therefore commit together or not at all: this
// holds only for effects inside this database transaction. An external
// effect performed by fn (an HTTP call, an e-mail) is not covered; for
// those use an idempotency key the target system dedupes on.
//
// ran reports whether fn was called, also when an error follows (fn's
// own, an invalid value, the record's write), as storesqlite.OnceTx's
// does: an external effect fn made then happened, whatever tx becomes.
//
// If fn (or OnceTx) returns an error, the caller must roll tx back:
// PostgreSQL aborts a transaction at its first error. A [*store.BusyError]
// from OnceTx (a serialization failure, a deadlock, a lock not available)
// then means that nothing of tx is written: make the whole transaction
// again (a new tx, OnceTx again), never OnceTx again in tx. Use
// read committed (PostgreSQL's default): under repeatable read or
// serializable, a caller that waited for a concurrent winner fails with a
// serialization error instead of reading the winner's value.
func (s *Store) OnceTx(ctx context.Context, tx pgx.Tx, tenant, key string,
	fn func(tx pgx.Tx) (json.RawMessage, error)) (value json.RawMessage, ran bool, err error) {
	switch {
	case tenant == "":
		return nil, false, &store.InvalidError{Field: "Tenant", Reason: "empty"}
	case key == "":
		return nil, false, &store.InvalidError{Field: "Key", Reason: "empty"}
	case fn == nil:
		return nil, false, &store.InvalidError{Field: "fn", Reason: "nil"}
	}
	now := s.clock.Now()
	if _, err := tx.Exec(ctx, s.q(`INSERT INTO {{schema}}.once (tenant, key, value, created_at) VALUES ($1, $2, NULL, $3)
		ON CONFLICT (tenant, key) DO NOTHING`), tenant, key, now); err != nil {
		return nil, false, mapErr("once "+key, err)
	}
	var stored *string
	if err := tx.QueryRow(ctx, s.q(`SELECT value FROM {{schema}}.once WHERE tenant = $1 AND key = $2 FOR UPDATE`),
		tenant, key).Scan(&stored); err != nil {
		return nil, false, mapErr("once "+key, err)
	}
	if stored != nil {
		d := &decoder{kind: "once", id: key}
		v := d.json("value", stored)
		return v, false, d.result()
	}
	v, err := fn(tx)
	if err != nil {
		return nil, true, err
	}
	if !json.Valid(v) {
		return nil, true, &store.InvalidError{Field: "value", Reason: "fn returned invalid JSON"}
	}
	if _, err := tx.Exec(ctx, s.q(`UPDATE {{schema}}.once SET value = $3, created_at = $4 WHERE tenant = $1 AND key = $2`),
		tenant, key, string(v), s.clock.Now()); err != nil {
		return nil, true, mapErr("once "+key, err)
	}
	return v, true, nil
}
