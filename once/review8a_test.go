package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/actoviq/actoviq-go/once"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// busyPut refuses the first n OncePuts as busy (nothing written), as a
// SQLite file locked by another process past the busy timeout does.
type busyPut struct {
	store.Store
	n atomic.Int64
}

func (b *busyPut) OncePut(ctx context.Context, p *store.OncePutParams) (*store.OnceRecord, error) {
	if b.n.Add(-1) >= 0 {
		return nil, &store.BusyError{Err: errors.New("injected: database is locked")}
	}
	return b.Store.OncePut(ctx, p)
}

// review8a: fn ran (its effect exists), and the write of its record meets
// a busy store once. The record is a result that exists nowhere else: it
// is written again within the write's budget (as the engine's result
// writes are, add430b), and Do returns fn's value. Do returned an error
// matching store.ErrBusy instead, the record unwritten and the claim
// released: by store/doc.go's BusyError contract ("nothing written, call
// again as is"; 6ce86ff says OnceTx must never answer one after fn ran)
// the caller calls Do again, and fn runs a second time.
func TestReview8aBusyRecordAfterFnRan(t *testing.T) {
	ctx := context.Background()
	s := &busyPut{Store: storemem.New(nil)}
	s.n.Store(1)
	var runs atomic.Int64
	fn := func(context.Context) (int, error) { return int(runs.Add(1)), nil }
	v, err := once.Do(ctx, s, "pay-1", fn)
	if err != nil && errors.Is(err, store.ErrBusy) {
		// What a caller does with a BusyError.
		v, err = once.Do(ctx, s, "pay-1", fn)
	}
	if err != nil || v != 1 || runs.Load() != 1 {
		t.Fatalf("Do: %v %v, fn ran %d times", v, err, runs.Load())
	}
}
