package once

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// ClaimKey returns the store claim key that serialises the callers of key.
func ClaimKey(key string) string { return "once:" + key }

// Do is [DoConfig] with default configuration.
func Do[T any](ctx context.Context, s store.Store, key string, fn func(ctx context.Context) (T, error)) (T, error) {
	return DoConfig(ctx, s, key, nil, fn)
}

// DoConfig returns the result recorded for key, running fn to produce it
// when there is none yet.
//
// The first successful result of fn for a key is recorded in s as JSON and
// returned, decoded, to this and every later caller; T must survive a JSON
// round trip. Concurrent callers with the same key, in one process or many
// sharing s, run fn one at a time, and once a result is recorded nobody runs
// fn again. A caller that waits for another holder honours ctx and returns
// ctx.Err() when it is done.
//
// If fn returns an error, nothing is recorded, the claim is released and the
// error is returned as it is; a later call runs fn again.
//
// If fn succeeded but its result cannot be recorded, DoConfig returns fn's
// result together with a [*NotRecordedError] (it matches [ErrNotRecorded]):
// the effect happened, and a later call runs fn again. A store that stays
// busy is written again for up to 10 s first; the error then does not
// match store.ErrBusy, whose "call again as is" would run fn twice. If the recorded value cannot
// be decoded into T, the error is a [*DecodeError].
//
// Crash behaviour: see the package documentation. fn can run again for the
// same key when a process dies between fn's effect and the record's commit,
// so fn should hand key to the target as its idempotency key.
func DoConfig[T any](ctx context.Context, s store.Store, key string, cfg *Config, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	switch {
	case s == nil:
		return zero, &store.InvalidError{Field: "store", Reason: "nil"}
	case key == "":
		return zero, &store.InvalidError{Field: "key", Reason: "empty"}
	case fn == nil:
		return zero, &store.InvalidError{Field: "fn", Reason: "nil"}
	}
	c, err := cfg.resolve()
	if err != nil {
		return zero, err
	}
	// A T that JSON cannot encode at all (a func, a chan) must fail before
	// fn has had any effect, not after.
	if _, err := json.Marshal(zero); err != nil {
		return zero, fmt.Errorf("once: key %q: result type %s cannot be recorded: %w", key, typeName[T](), err)
	}
	d := &doer{s: s, cfg: c, key: key}
	for {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		if v, ok, err := lookup[T](ctx, d); ok || err != nil {
			if err != nil && ctx.Err() != nil {
				return zero, ctx.Err()
			}
			return v, err
		}
		claim, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{
			Tenant: c.Tenant, Key: ClaimKey(key), Holder: c.Holder, TTL: c.LeaseTTL,
		})
		if errors.Is(err, store.ErrClaimHeld) {
			if err := wait(ctx, c.PollInterval); err != nil {
				return zero, err
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return zero, ctx.Err()
			}
			return zero, fmt.Errorf("once: key %q: acquire claim: %w", key, err)
		}
		return runClaimed(ctx, d, claim, fn)
	}
}

// doer carries one call's resolved inputs.
type doer struct {
	s   store.Store
	cfg Config
	key string
}

// runClaimed runs fn under the claim and records its result.
func runClaimed[T any](ctx context.Context, d *doer, claim *store.Claim, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	fence := store.Fence{Key: claim.Key, Holder: claim.Holder, Epoch: claim.Epoch}
	defer d.release(ctx, fence)

	// Someone may have recorded a result between our first look and the
	// claim.
	if v, ok, err := lookup[T](ctx, d); ok || err != nil {
		return v, err
	}

	v, err := func() (T, error) {
		stop := d.heartbeat(ctx, fence)
		defer stop() // also when fn panics: no renewing goroutine outlives the call
		return fn(ctx)
	}()
	if err != nil {
		return zero, err
	}

	raw, err := json.Marshal(v)
	if err != nil {
		return v, fmt.Errorf("once: key %q: encode result: %w", d.key, err)
	}
	// fn's effect exists now: record it even if ctx was cancelled meanwhile.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	put := &store.OncePutParams{Tenant: d.cfg.Tenant, Key: d.key, Value: raw}
	_, err = d.s.OncePut(wctx, put)
	// A busy store wrote nothing: the record, which exists nowhere else,
	// is written again while writeTimeout allows. Given up, the claim is
	// released and a call of Do again runs fn a second time.
	for pause := 10 * time.Millisecond; err != nil && errors.Is(err, store.ErrBusy); pause = min(2*pause, time.Second) {
		if wait(wctx, pause) != nil {
			break
		}
		_, err = d.s.OncePut(wctx, put)
	}
	switch {
	case errors.Is(err, store.ErrExists):
		// Our lease lapsed during fn and another caller recorded first; its
		// result wins, for us as for everyone else.
		got, ok, lerr := lookup[T](wctx, d)
		if lerr != nil {
			// fn has run: its value goes back with the error, as below.
			return v, fmt.Errorf("once: key %q: read the recorded result (fn has run): %w", d.key, lerr)
		}
		if !ok {
			return v, fmt.Errorf("once: key %q: record reported existing but cannot be read: %w", d.key, err)
		}
		return got, nil
	case err != nil:
		return v, notRecorded(d.cfg.Tenant, d.key, err)
	}
	// Return what later callers will get, so every caller sees the same value.
	return decode[T](d, raw)
}

// lookup reads the record for d.key: ok reports whether there is one.
func lookup[T any](ctx context.Context, d *doer) (v T, ok bool, err error) {
	rec, err := d.s.OnceGet(ctx, &store.OnceGetParams{Tenant: d.cfg.Tenant, Key: d.key})
	if errors.Is(err, store.ErrNotFound) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("once: key %q: read record: %w", d.key, err)
	}
	v, err = decode[T](d, rec.Value)
	return v, true, err
}

func decode[T any](d *doer, raw json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		var zero T
		return zero, &DecodeError{Tenant: d.cfg.Tenant, Key: d.key, Type: typeName[T](), Err: err}
	}
	return v, nil
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// release gives the claim up on a detached context, so that a cancelled
// caller does not leave the lease held until it expires. A failed release is
// harmless (the lease expires on its own) and is not reported.
func (d *doer) release(ctx context.Context, fence store.Fence) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_ = d.s.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: d.cfg.Tenant, Fence: fence})
}

// heartbeat renews the claim every LeaseTTL/3 until the returned stop is
// called; stop returns once the renewing goroutine has ended. Renewal stops
// early when the fence no longer holds.
func (d *doer) heartbeat(ctx context.Context, fence store.Fence) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(d.cfg.LeaseTTL/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, d.cfg.LeaseTTL)
			_, err := d.s.ClaimRenew(rctx, &store.ClaimRenewParams{Tenant: d.cfg.Tenant, Fence: fence, TTL: d.cfg.LeaseTTL})
			rcancel()
			if errors.Is(err, store.ErrFenced) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// wait sleeps for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
