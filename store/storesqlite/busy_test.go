package storesqlite_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// A write that cannot take the file's write lock within the busy timeout,
// because another handle holds it, fails with a *store.BusyError (matching
// store.ErrBusy) and writes nothing; the same params, sent again once the
// lock is free, are written as the first try would have been. Alone and in
// a group commit of several writes. Before, the error was the driver's
// untyped "database is locked (SQLITE_BUSY)".
func TestBusyWriteIsTypedAndWritesNothing(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	bb.s.Close()
	s := open(t, bb.path, &storesqlite.Config{BusyTimeout: 30 * time.Millisecond})
	other := open(t, bb.path, nil)
	const n = 4
	params := make([]*store.RunWriteParams, n)
	for i := range n {
		id := "r" + string(rune('0'+i))
		r := createRun(t, s, "t", id, store.RunRunning)
		params[i] = &store.RunWriteParams{Tenant: "t", RunID: id,
			Run:    &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"n":1}`)},
			Events: []*store.EventRecord{{ID: id + "-e", Type: "x", Time: time.Now(), Data: json.RawMessage(`{}`)}}}
	}
	tx, err := other.DB().BeginTx(bb.ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.RunWrite(bb.ctx, params[i])
		}()
	}
	wg.Wait()
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		var be *store.BusyError
		if !errors.As(err, &be) || !errors.Is(err, store.ErrBusy) {
			t.Fatalf("write %d: %v, want a *store.BusyError", i, err)
		}
		r, err := s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: params[i].RunID})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: params[i].RunID})
		if err != nil {
			t.Fatal(err)
		}
		if r.Revision != params[i].Run.ExpectedRevision || len(evs) != 0 {
			t.Fatalf("write %d: the busy write changed the run: revision %d, %d events", i, r.Revision, len(evs))
		}
	}
	for i, p := range params {
		res, err := s.RunWrite(bb.ctx, p)
		if err != nil {
			t.Fatalf("write %d again: %v", i, err)
		}
		if res.Run.Revision != p.Run.ExpectedRevision+1 || len(res.Events) != 1 || res.Events[0].Seq != 1 {
			t.Fatalf("write %d again: revision %d, events %+v", i, res.Run.Revision, res.Events)
		}
	}
}
