package storepg_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// Concurrent run writes of very different sizes (a few bytes to over the
// 1 MiB at which the pooled encoder buffer is given up) through the raw
// path, single and batched: every entry reads back with its own
// arguments and result, no write sees another's bytes.
func TestReview9bRawWriteSizesConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("large writes")
	}
	b := setup(t)
	s := b.s
	ctx := context.Background()
	sizes := []int{0, 1, 100, 4095, 4097, 70000, 1 << 20, 1<<20 + 3, 3 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j, n := range sizes {
				id := fmt.Sprint("g", g, "-", j)
				if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
					errs <- err
					return
				}
				args := json.RawMessage(`{"s":"` + strings.Repeat(string(rune('a'+g)), n) + `","n":"\u0000é"}`)
				res := json.RawMessage(`"` + strings.Repeat(string(rune('A'+g)), n/2) + `"`)
				e := &store.LedgerEntry{Tenant: "t", RunID: id, CallID: "c", Tool: "x", State: store.LedgerPrepared, Args: args}
				if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Ledger: []store.LedgerWrite{{Entry: e, Event: &store.EventRecord{Type: "tool.prepared", Data: args}}}}); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				e2 := *e
				e2.State, e2.Result, e2.Holder, e2.Epoch, e2.Attempt = store.LedgerCommitted, res, "w", 1, 1
				if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Ledger: []store.LedgerWrite{{Entry: &e2, ExpectedRevision: 1, Event: &store.EventRecord{Type: "tool.committed", Data: res}}}}); err != nil {
					errs <- fmt.Errorf("%s commit: %w", id, err)
					return
				}
				got, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: id, CallID: "c"})
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got.Args, args) || !bytes.Equal(got.Result, res) {
					errs <- fmt.Errorf("%s: read back args %d bytes, result %d bytes; wrote %d, %d", id, len(got.Args), len(got.Result), len(args), len(res))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
