package once_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/actoviq/actoviq-go/once"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// waitTimeout bounds how long a test waits for a signal before failing; it
// is never slept.
const waitTimeout = 10 * time.Second

type testBundle struct {
	ctx context.Context
	s   *storemem.Store
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	s := storemem.New(nil)
	t.Cleanup(func() { _ = s.Close() })
	return &testBundle{ctx: t.Context(), s: s}
}

func TestDoConcurrentCallersRunFnOnce(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	var calls atomic.Int64
	const n = 20
	start := make(chan struct{})
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = once.DoConfig(bb.ctx, bb.s, "k", &once.Config{PollInterval: time.Millisecond},
				func(context.Context) (string, error) {
					c := calls.Add(1)
					return fmt.Sprintf("value-%d", c), nil
				})
		})
	}
	close(start)
	wg.Wait()

	if got := calls.Load(); got != 1 {
		t.Fatalf("fn ran %d times, want 1", got)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if results[i] != "value-1" {
			t.Fatalf("caller %d got %q, want %q", i, results[i], "value-1")
		}
	}
}

func TestDoDifferentKeysRunSeparately(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	var calls atomic.Int64
	fn := func(key string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			calls.Add(1)
			return "v-" + key, nil
		}
	}
	for _, key := range []string{"a", "b", "a", "b", "c"} {
		got, err := once.Do(bb.ctx, bb.s, key, fn(key))
		if err != nil {
			t.Fatal(err)
		}
		if got != "v-"+key {
			t.Fatalf("key %s: got %q", key, got)
		}
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("fn ran %d times, want 3 (one per key)", got)
	}
}

func TestDoTenantsAreSeparate(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	for _, tenant := range []string{"A", "B"} {
		got, err := once.DoConfig(bb.ctx, bb.s, "k", &once.Config{Tenant: tenant},
			func(context.Context) (string, error) { return tenant, nil })
		if err != nil {
			t.Fatal(err)
		}
		if got != tenant {
			t.Fatalf("tenant %s got %q", tenant, got)
		}
	}
	// The default tenant is "default".
	if _, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: store.DefaultTenant, Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("default tenant: err = %v, want not found", err)
	}
}

func TestDoErrorIsNotRecorded(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	boom := errors.New("boom")
	var calls atomic.Int64
	_, err := once.Do(bb.ctx, bb.s, "k", func(context.Context) (int, error) {
		calls.Add(1)
		return 0, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if _, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: store.DefaultTenant, Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after error: record err = %v, want not found", err)
	}

	// The claim was released: the next caller runs fn at once, no waiting
	// for the lease (a 1h lease would hang the test otherwise).
	got, err := once.DoConfig(bb.ctx, bb.s, "k", &once.Config{LeaseTTL: time.Hour}, func(context.Context) (int, error) {
		calls.Add(1)
		return 7, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != 7 || calls.Load() != 2 {
		t.Fatalf("got %d after %d calls, want 7 after 2", got, calls.Load())
	}
}

// heldSpy reports every ClaimAcquire that found the claim held.
type heldSpy struct {
	store.Store
	held chan struct{}
}

func (s *heldSpy) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	c, err := s.Store.ClaimAcquire(ctx, p)
	if errors.Is(err, store.ErrClaimHeld) {
		select {
		case s.held <- struct{}{}:
		default:
		}
	}
	return c, err
}

func TestDoCancelWhileWaitingReturnsPromptly(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	spy := &heldSpy{Store: bb.s, held: make(chan struct{}, 1)}

	inFn := make(chan struct{})
	unblock := make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		_, err := once.Do(bb.ctx, spy, "k", func(context.Context) (string, error) {
			close(inFn)
			<-unblock
			return "first", nil
		})
		firstDone <- err
	}()
	<-inFn

	ctx, cancel := context.WithCancel(bb.ctx)
	secondDone := make(chan error, 1)
	go func() {
		_, err := once.DoConfig(ctx, spy, "k", &once.Config{PollInterval: time.Hour},
			func(context.Context) (string, error) {
				t.Error("second caller ran fn while the first held the claim")
				return "", nil
			})
		secondDone <- err
	}()

	// The second caller has found the claim held and is waiting (for an
	// hour, were it not cancelled).
	select {
	case <-spy.held:
	case <-time.After(waitTimeout):
		t.Fatal("second caller never found the claim held")
	}
	cancel()
	select {
	case err := <-secondDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("cancelled caller did not return")
	}

	close(unblock)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
}

func TestDoRecordsAfterCallerCancelled(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	// fn's effect happens, then the caller's context is cancelled before
	// the record is written: the result must still be recorded and the
	// claim released.
	ctx, cancel := context.WithCancel(bb.ctx)
	got, err := once.DoConfig(ctx, bb.s, "k", &once.Config{LeaseTTL: time.Hour}, func(context.Context) (string, error) {
		cancel()
		return "done", nil
	})
	if err != nil || got != "done" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = once.DoConfig(bb.ctx, bb.s, "k", &once.Config{LeaseTTL: time.Hour}, func(context.Context) (string, error) {
		t.Error("fn ran again")
		return "", nil
	})
	if err != nil || got != "done" {
		t.Fatalf("second call: got %q, %v", got, err)
	}
	c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: once.ClaimKey("k")})
	if err != nil {
		t.Fatal(err)
	}
	if c.ExpiresAt.After(time.Now()) {
		t.Fatalf("claim still held until %v after the call returned", c.ExpiresAt)
	}
}

func TestDoRenewsLeaseWhileFnRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := storemem.New(nil)
		defer s.Close()
		ctx := t.Context()
		cfg := &once.Config{LeaseTTL: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond}

		var calls atomic.Int64
		unblock := make(chan struct{})
		fn := func(context.Context) (int, error) {
			n := calls.Add(1)
			<-unblock
			return int(n), nil
		}
		var wg sync.WaitGroup
		res := make([]int, 2)
		for i := range 2 {
			wg.Go(func() {
				var err error
				res[i], err = once.DoConfig(ctx, s, "slow", cfg, fn)
				if err != nil {
					t.Error(err)
				}
			})
			synctest.Wait() // the first caller is inside fn before the second starts
		}
		// Ten lease lengths pass in the bubble's fake time while fn is
		// still running; the heartbeat keeps the second caller out.
		time.Sleep(10 * cfg.LeaseTTL)
		if got := calls.Load(); got != 1 {
			t.Fatalf("fn ran %d times while the first run was alive, want 1", got)
		}
		close(unblock)
		wg.Wait()
		if res[0] != 1 || res[1] != 1 {
			t.Fatalf("results %v, want [1 1]", res)
		}
	})
}

func TestDoDecodeError(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	if _, err := once.Do(bb.ctx, bb.s, "k", func(context.Context) (string, error) { return "text", nil }); err != nil {
		t.Fatal(err)
	}
	_, err := once.Do(bb.ctx, bb.s, "k", func(context.Context) (int, error) {
		t.Error("fn ran although a record exists")
		return 0, nil
	})
	var de *once.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v (%T), want *once.DecodeError", err, err)
	}
	if de.Key != "k" || de.Tenant != store.DefaultTenant || de.Type != "int" {
		t.Fatalf("DecodeError = %+v", de)
	}
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) {
		t.Fatalf("DecodeError does not unwrap to the JSON error: %v", err)
	}
}

func TestDoConfigValidation(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	fn := func(context.Context) (int, error) { return 1, nil }

	for name, tc := range map[string]struct {
		key   string
		cfg   *once.Config
		field string
	}{
		"empty key":         {"", nil, "key"},
		"negative lease":    {"k", &once.Config{LeaseTTL: -1}, "Config.LeaseTTL"},
		"negative poll":     {"k", &once.Config{PollInterval: -1}, "Config.PollInterval"},
		"empty from holder": {"k", &once.Config{NewHolder: func() string { return "" }}, "Config.NewHolder"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := once.DoConfig(bb.ctx, bb.s, tc.key, tc.cfg, fn)
			var ie *store.InvalidError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("err = %v, want invalid %s", err, tc.field)
			}
		})
	}

	_, err := once.Do(bb.ctx, bb.s, "k", func(context.Context) (func(), error) { return nil, nil })
	if err == nil {
		t.Fatal("a result type JSON cannot encode was accepted")
	}
}

func TestDoUsesInjectedHolder(t *testing.T) {
	t.Parallel()
	bb := setup(t)

	var holder string
	_, err := once.DoConfig(bb.ctx, bb.s, "k", &once.Config{NewHolder: func() string { return "worker-7" }},
		func(ctx context.Context) (int, error) {
			c, err := bb.s.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: once.ClaimKey("k")})
			if err != nil {
				return 0, err
			}
			holder = c.Holder
			return 1, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if holder != "worker-7" {
		t.Fatalf("holder = %q, want worker-7", holder)
	}
}

func TestDoPanicReleasesClaim(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	cfg := &once.Config{LeaseTTL: time.Hour}

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic did not propagate")
			}
		}()
		_, _ = once.DoConfig(bb.ctx, bb.s, "k", cfg, func(context.Context) (int, error) { panic("boom") })
	}()
	// Not recorded, and the claim is free: this does not wait an hour.
	got, err := once.DoConfig(bb.ctx, bb.s, "k", cfg, func(context.Context) (int, error) { return 2, nil })
	if err != nil || got != 2 {
		t.Fatalf("got %d, %v", got, err)
	}
}
