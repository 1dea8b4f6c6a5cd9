package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/once"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// failPut answers every OncePut with err, writing nothing.
type failPut struct {
	store.Store
	err error
}

func (f *failPut) OncePut(context.Context, *store.OncePutParams) (*store.OnceRecord, error) {
	return nil, f.err
}

// A store that stays busy for the whole write budget: Do returns fn's
// value and an error of its own. It must not match store.ErrBusy, whose
// contract ("nothing written, call again as is") would have the caller
// run fn a second time; it says fn ran (ErrNotRecorded) and that the store
// was busy.
func TestNotRecordedBusyIsNotErrBusy(t *testing.T) {
	defer once.SetWriteTimeout(100 * time.Millisecond)()
	s := &failPut{Store: storemem.New(nil), err: &store.BusyError{Err: errors.New("injected: database is locked")}}
	var runs atomic.Int64
	v, err := once.Do(context.Background(), s, "pay-busy", func(context.Context) (int, error) { return int(runs.Add(1)) + 41, nil })
	if v != 42 || runs.Load() != 1 {
		t.Fatalf("Do returned %d after %d runs of fn, want fn's 42 after one", v, runs.Load())
	}
	if !errors.Is(err, once.ErrNotRecorded) {
		t.Fatalf("err = %v, want one matching ErrNotRecorded", err)
	}
	if errors.Is(err, store.ErrBusy) {
		t.Fatalf("err = %v matches store.ErrBusy: a caller following its contract runs fn again", err)
	}
	var nr *once.NotRecordedError
	if !errors.As(err, &nr) || !nr.Busy || nr.Key != "pay-busy" {
		t.Fatalf("err = %#v, want a *NotRecordedError for pay-busy with Busy set", err)
	}
}

// Any other store failure after fn ran is a NotRecordedError too, and
// keeps the store's error for errors.Is.
func TestNotRecordedKeepsStoreError(t *testing.T) {
	disk := errors.New("injected: no space left on device")
	s := &failPut{Store: storemem.New(nil), err: disk}
	v, err := once.Do(context.Background(), s, "pay-disk", func(context.Context) (string, error) { return "ok", nil })
	var nr *once.NotRecordedError
	if v != "ok" || !errors.As(err, &nr) || nr.Busy || !errors.Is(err, disk) || !errors.Is(err, once.ErrNotRecorded) {
		t.Fatalf("Do: %q, %v; want fn's value and a NotRecordedError wrapping the store's error", v, err)
	}
}
