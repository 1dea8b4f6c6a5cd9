package storepg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

const claimCols = `tenant, key, holder, epoch, expires_at, heartbeat_at`

// claimUpsert takes a claim in one statement: insert at epoch 1, or take an
// expired (or released: expires_at = release time) claim with epoch + 1, or,
// unless $6 (fresh only) is true, renew a live claim of the same holder at
// the same epoch. A live claim of another holder matches no row and the
// statement returns nothing. ON CONFLICT DO UPDATE locks the existing row
// and evaluates the WHERE on its latest committed version, so two racing
// acquirers cannot both win. $5 is the clock's now.
const claimUpsert = `
	INSERT INTO {{schema}}.claims AS c (` + claimCols + `)
	VALUES ($1, $2, $3, 1, $4, $5)
	ON CONFLICT (tenant, key) DO UPDATE SET
		holder = EXCLUDED.holder,
		epoch = CASE WHEN c.expires_at > EXCLUDED.heartbeat_at THEN c.epoch ELSE c.epoch + 1 END,
		expires_at = EXCLUDED.expires_at,
		heartbeat_at = EXCLUDED.heartbeat_at,
		held = true
	WHERE c.expires_at <= EXCLUDED.heartbeat_at OR (c.holder = EXCLUDED.holder AND NOT $6::boolean)
	RETURNING ` + claimCols

func scanClaim(row pgx.Row) (*store.Claim, error) {
	var (
		tenant, key, holder  *string
		epoch                *int64
		expiresAt, heartbeat *time.Time
	)
	if err := row.Scan(&tenant, &key, &holder, &epoch, &expiresAt, &heartbeat); err != nil {
		return nil, err
	}
	d := &decoder{kind: "claim"}
	if key != nil {
		d.id = *key
	}
	c := &store.Claim{
		Tenant:      d.str("tenant", tenant),
		Key:         d.str("key", key),
		Holder:      d.str("holder", holder),
		Epoch:       d.i64("epoch", epoch),
		ExpiresAt:   d.tm("expires_at", expiresAt),
		HeartbeatAt: d.tm("heartbeat_at", heartbeat),
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return c, nil
}

func (s *Store) claimGet(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant, key string) (*store.Claim, error) {
	return scanClaim(q.QueryRow(ctx, s.q(`SELECT `+claimCols+` FROM {{schema}}.claims WHERE tenant = $1 AND key = $2`), tenant, key))
}

// ClaimAcquire implements [store.Store].
func (s *Store) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		now := s.clock.Now()
		var c *store.Claim
		err := retryable(ctx, func() (err error) {
			c, err = scanClaim(s.pool.QueryRow(ctx, s.q(claimUpsert), p.Tenant, p.Key, p.Holder,
				store.Time(now.Add(p.TTL)), now, false))
			return err
		})
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, mapErr("acquire claim "+p.Key, err)
		}
		cur, err := s.claimGet(ctx, s.pool, p.Tenant, p.Key)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, mapErr("acquire claim "+p.Key, err)
		}
		// Held means live and another holder's. Anything else means the
		// claim changed between the two statements: try again.
		if cur != nil && cur.ExpiresAt.After(now) && cur.Holder != p.Holder || attempt == maxAttempts {
			if cur == nil {
				return nil, &store.ClaimHeldError{Key: p.Key}
			}
			return nil, &store.ClaimHeldError{Key: p.Key, Holder: cur.Holder, Epoch: cur.Epoch,
				ExpiresAt: cur.ExpiresAt.Format(time.RFC3339Nano)}
		}
	}
}

// ClaimGet implements [store.Store].
func (s *Store) ClaimGet(ctx context.Context, p *store.ClaimGetParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	c, err := s.claimGet(ctx, s.pool, p.Tenant, p.Key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "claim", ID: p.Key}
	}
	if err != nil {
		return nil, mapErr("get claim "+p.Key, err)
	}
	return c, nil
}

// fenced builds the FencedError for f after a fenced statement matched no
// row, reading the claim's current holder and epoch, and whether f's
// holder released it.
func (s *Store) fenced(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant string, f store.Fence) error {
	fe := &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch}
	var held bool
	err := q.QueryRow(ctx, s.q(`SELECT holder, epoch, held FROM {{schema}}.claims WHERE tenant = $1 AND key = $2`), tenant, f.Key).
		Scan(&fe.CurrentHolder, &fe.CurrentEpoch, &held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return mapErr("read claim "+f.Key, err)
	default:
		fe.Released = !held && fe.CurrentHolder == f.Holder && fe.CurrentEpoch == f.Epoch
	}
	return fe
}

// ClaimRelease implements [store.Store]: the claim expires now and keeps its
// epoch, so the next holder gets a larger one. A claim its holder released
// already is left as it is.
func (s *Store) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	if err := store.Check(p); err != nil {
		return err
	}
	now := s.clock.Now()
	var tag int64
	q := `UPDATE {{schema}}.claims SET expires_at = CASE WHEN held THEN $5 ELSE expires_at END, held = false
		WHERE tenant = $1 AND key = $2 AND holder = $3 AND epoch = $4`
	args := []any{p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch, now}
	if p.Remove {
		q = `DELETE FROM {{schema}}.claims WHERE tenant = $1 AND key = $2 AND holder = $3 AND epoch = $4`
		args = args[:4]
	}
	err := retryable(ctx, func() error {
		ct, err := s.pool.Exec(ctx, s.q(q), args...)
		tag = ct.RowsAffected()
		return err
	})
	if err != nil {
		return mapErr("release claim "+p.Fence.Key, err)
	}
	if tag == 0 {
		return s.fenced(ctx, s.pool, p.Tenant, p.Fence)
	}
	return nil
}

// ClaimRenew implements [store.Store].
func (s *Store) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var c *store.Claim
	err := retryable(ctx, func() (err error) {
		c, err = scanClaim(s.pool.QueryRow(ctx, s.q(`UPDATE {{schema}}.claims SET expires_at = $5, heartbeat_at = $6, held = true
			WHERE tenant = $1 AND key = $2 AND holder = $3 AND epoch = $4 AND held
			RETURNING `+claimCols),
			p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch, store.Time(now.Add(p.TTL)), now))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, s.fenced(ctx, s.pool, p.Tenant, p.Fence)
	}
	if err != nil {
		return nil, mapErr("renew claim "+p.Fence.Key, err)
	}
	return c, nil
}
