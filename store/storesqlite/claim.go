package storesqlite

import (
	"context"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

const claimColumns = `tenant, key, holder, epoch, expires_at, heartbeat_at`

func scanClaim(sc scanner) (*store.Claim, error) {
	var (
		c                  store.Claim
		expires, heartbeat int64
	)
	if err := sc.Scan(&c.Tenant, &c.Key, &c.Holder, &c.Epoch, &expires, &heartbeat); err != nil {
		return nil, &store.DataError{Kind: "claim", ID: c.Key, Err: err}
	}
	c.ExpiresAt = fromMicros(expires)
	c.HeartbeatAt = fromMicros(heartbeat)
	return &c, nil
}

// getClaim reads a claim inside tx; nil when there is none.
func getClaim(ctx context.Context, tx querier, tenant, key string) (*store.Claim, error) {
	var c *store.Claim
	_, err := queryOne(one(tx.QueryContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE tenant = ? AND key = ?`, tenant, key)),
		func(sc scanner) (err error) { c, err = scanClaim(sc); return err })
	return c, err
}

// claimAcquire takes or renews a claim inside tx. A free key starts at
// epoch 1; a key whose claim expired or was released goes to the next
// epoch, also for the previous holder, so that every write it made under
// the old epoch is fenced out; a live claim of the same holder is renewed
// at the same epoch.
func claimAcquire(ctx context.Context, tx querier, now time.Time, tenant, key, holder string, ttl time.Duration) (*store.Claim, error) {
	cur, err := getClaim(ctx, tx, tenant, key)
	if err != nil {
		return nil, err
	}
	c := &store.Claim{Tenant: tenant, Key: key, Holder: holder, Epoch: 1,
		ExpiresAt: store.Time(now.Add(ttl)), HeartbeatAt: now}
	switch {
	case cur == nil:
	case cur.ExpiresAt.After(now) && cur.Holder == holder:
		c.Epoch = cur.Epoch
	case cur.ExpiresAt.After(now):
		return nil, &store.ClaimHeldError{Key: key, Holder: cur.Holder, Epoch: cur.Epoch,
			ExpiresAt: cur.ExpiresAt.Format(time.RFC3339Nano)}
	default:
		c.Epoch = cur.Epoch + 1
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO claims (`+claimColumns+`, held) VALUES (?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (tenant, key) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch,
			expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at, held = 1`,
		tenant, key, holder, c.Epoch, micros(c.ExpiresAt), micros(c.HeartbeatAt))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkFence returns the current claim if f still holds inside tx, and a
// [*store.FencedError] otherwise: the claim does not exist, another holder
// or epoch has it, or its holder released it (held = 0). Expiry alone does
// not fence: until another holder takes the claim, no write under a newer
// epoch can exist, and a holder whose heartbeat was late has not given
// anything up.
func checkFence(ctx context.Context, tx querier, tenant string, f *store.Fence) (*store.Claim, error) {
	cur, held, err := ownedClaim(ctx, tx, tenant, f)
	if err == nil && !held {
		return nil, &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch, CurrentHolder: cur.Holder, CurrentEpoch: cur.Epoch, Released: true}
	}
	return cur, err
}

// ownedClaim is checkFence for a release: it returns the claim when it
// has f's holder and epoch, held or released already.
func ownedClaim(ctx context.Context, tx querier, tenant string, f *store.Fence) (*store.Claim, bool, error) {
	var (
		cur  *store.Claim
		held bool
	)
	_, err := queryOne(one(tx.QueryContext(ctx, `SELECT `+claimColumns+`, held FROM claims WHERE tenant = ? AND key = ?`, tenant, f.Key)),
		func(sc scanner) (err error) {
			cur, err = scanClaim(heldScanner{sc, &held})
			return err
		})
	if err != nil {
		return nil, false, err
	}
	if cur == nil || cur.Holder != f.Holder || cur.Epoch != f.Epoch {
		fe := &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch}
		if cur != nil {
			fe.CurrentHolder, fe.CurrentEpoch = cur.Holder, cur.Epoch
		}
		return nil, false, fe
	}
	return cur, held, nil
}

// heldScanner scans a claim row followed by its held column.
type heldScanner struct {
	sc   scanner
	held *bool
}

func (h heldScanner) Scan(dest ...any) error { return h.sc.Scan(append(dest, h.held)...) }

// ClaimAcquire implements [store.Store].
func (s *Store) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var out *store.Claim
	err := s.write(ctx, func(tx querier) (err error) {
		out, err = claimAcquire(ctx, tx, s.now(), p.Tenant, p.Key, p.Holder, p.TTL)
		return err
	})
	if err != nil {
		return nil, wrap("acquire claim "+p.Key, err)
	}
	return out, nil
}

// ClaimGet implements [store.Store].
func (s *Store) ClaimGet(ctx context.Context, p *store.ClaimGetParams) (*store.Claim, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var c *store.Claim
	found, err := queryOne(one(s.db.QueryContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE tenant = ? AND key = ?`, p.Tenant, p.Key)),
		func(sc scanner) (err error) { c, err = scanClaim(sc); return err })
	if err != nil {
		return nil, wrap("get claim "+p.Key, mapErr(ctx, err))
	}
	if !found {
		return nil, &store.NotFoundError{Kind: "claim", ID: p.Key}
	}
	return c, nil
}

// ClaimRelease implements [store.Store]. The claim expires now; its epoch
// stays, so the next holder gets a larger one.
func (s *Store) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	if err := validate(p); err != nil {
		return err
	}
	err := s.write(ctx, func(tx querier) error {
		_, held, err := ownedClaim(ctx, tx, p.Tenant, &p.Fence)
		if err != nil {
			return err
		}
		if !held && !p.Remove {
			return nil // released already: nothing changes
		}
		if p.Remove {
			_, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE tenant = ? AND key = ?`, p.Tenant, p.Fence.Key)
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE claims SET expires_at = MIN(expires_at, ?), held = 0 WHERE tenant = ? AND key = ?`,
			micros(s.now()), p.Tenant, p.Fence.Key)
		return err
	})
	return wrap("release claim "+p.Fence.Key, err)
}

// ClaimRenew implements [store.Store].
func (s *Store) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var out *store.Claim
	err := s.write(ctx, func(tx querier) error {
		cur, err := checkFence(ctx, tx, p.Tenant, &p.Fence)
		if err != nil {
			return err
		}
		now := s.now()
		cur.ExpiresAt, cur.HeartbeatAt = store.Time(now.Add(p.TTL)), now
		_, err = tx.ExecContext(ctx, `UPDATE claims SET expires_at = ?, heartbeat_at = ?, held = 1 WHERE tenant = ? AND key = ?`,
			micros(cur.ExpiresAt), micros(now), p.Tenant, p.Fence.Key)
		out = cur
		return err
	})
	if err != nil {
		return nil, wrap("renew claim "+p.Fence.Key, err)
	}
	return out, nil
}
