package storepg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Run writes whose context ends at every moment of the raw path (before
// the connection, during the statement, during the answer), alone and
// concurrent: a success is stored, a BusyError stored nothing, and the
// store writes on afterwards.
func TestReview9bRunWriteCanceledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	b := setup(t)
	s := b.s
	ctx := context.Background()
	tally := map[string]int{}
	for i := range 200 {
		conc := 1 + i%3
		ids := make([]string, conc)
		errs := make([]error, conc)
		for j := range ids {
			ids[j] = fmt.Sprint("r", i, "-", j)
			if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: ids[j], Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for j, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithTimeout(ctx, time.Duration(i*40)*time.Microsecond)
				defer cancel()
				_, errs[j] = s.RunWrite(wctx, &store.RunWriteParams{Tenant: "t", RunID: id, Ledger: []store.LedgerWrite{{
					Entry: &store.LedgerEntry{Tenant: "t", RunID: id, CallID: "c", Tool: "x", State: store.LedgerPrepared, Args: json.RawMessage(`{}`)},
					Event: &store.EventRecord{Type: "tool.prepared"}}}})
			}()
		}
		wg.Wait()
		for j, id := range ids {
			_, gerr := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: id, CallID: "c"})
			stored := gerr == nil
			if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
				t.Fatal(gerr)
			}
			tally[fmt.Sprint(errs[j] == nil, errors.Is(errs[j], store.ErrBusy), stored)]++
			switch {
			case errs[j] == nil && !stored:
				t.Errorf("%s: success, nothing stored", id)
			case errors.Is(errs[j], store.ErrBusy) && stored:
				t.Errorf("%s: %v, but stored", id, errs[j])
			}
		}
	}
	t.Logf("(ok, busy, stored): %v", tally)
}
