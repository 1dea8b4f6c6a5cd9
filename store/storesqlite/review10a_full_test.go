package storesqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestReview10aHotWritesFillTheDatabase (review10a): concurrent hot
// writes (ledger transitions with their events only, 1 to 40 records,
// arguments up to 8 KB: one INSERT ... VALUES per 16 records, in group
// commit batches with savepoints) fill a database capped by MaxPageCount.
// Each write is stored whole or is a FullError that stored nothing of
// it; every run's events stay gapless; and writes go on afterwards
// (small ones stored or full).
func TestReview10aHotWritesFillTheDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a database")
	}
	dir, cfg := t.TempDir(), &storesqlite.Config{MaxPageCount: 1500}
	if d := os.Getenv("REVIEW10A_FULL_DIR"); d != "" {
		// A small file system (a tmpfs of a few MB): the disk fills
		// instead of the page cap.
		dir, cfg = d, nil
	}
	s := open(t, filepath.Join(dir, "w.db"), cfg)
	bg := context.Background()
	const runs, calls = 4, 48
	for r := range runs {
		if _, err := s.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: fmt.Sprint("r", r), Status: store.RunRunning}}); err != nil {
			t.Fatal(err)
		}
	}
	type callState struct {
		mu  sync.Mutex
		rev int64
	}
	var (
		state [runs][calls]callState
		mu    sync.Mutex
		full  int
		ok    int
	)
	write := func(rng *rand.Rand, r int, big bool) {
		run := fmt.Sprint("r", r)
		n := 1 + rng.Intn(40)
		first := rng.Intn(calls - n + 1)
		// Lock the calls of this write in order (the test's own model).
		for c := first; c < first+n; c++ {
			state[r][c].mu.Lock()
		}
		defer func() {
			for c := first; c < first+n; c++ {
				state[r][c].mu.Unlock()
			}
		}()
		p := &store.RunWriteParams{Tenant: "t", RunID: run}
		for c := first; c < first+n; c++ {
			size := 10
			if big {
				size = rng.Intn(8000)
			}
			e := &store.LedgerEntry{Tenant: "t", RunID: run, CallID: fmt.Sprint("c", c), Tool: "x", State: store.LedgerStarted,
				Args: json.RawMessage(`"` + strings.Repeat("a", size) + `"`)}
			p.Ledger = append(p.Ledger, store.LedgerWrite{Entry: e, ExpectedRevision: state[r][c].rev, Event: &store.EventRecord{Type: "ledger"}})
		}
		res, err := s.RunWrite(bg, p)
		switch {
		case err == nil:
			for i, e := range res.Ledger {
				c := first + i
				if e.Revision != state[r][c].rev+1 {
					t.Errorf("%s c%d: revision %d after %d", run, c, e.Revision, state[r][c].rev)
				}
				state[r][c].rev = e.Revision
			}
			mu.Lock()
			ok++
			mu.Unlock()
		case errors.Is(err, store.ErrFull):
			mu.Lock()
			full++
			mu.Unlock()
		default:
			t.Errorf("write of %d records: %v", n, err)
		}
		// What is stored is what the model says (nothing of a failed write).
		for c := first; c < first+n; c++ {
			e, err := s.LedgerGet(bg, &store.LedgerGetParams{Tenant: "t", RunID: run, CallID: fmt.Sprint("c", c)})
			switch {
			case errors.Is(err, store.ErrNotFound) && state[r][c].rev == 0:
			case err != nil:
				t.Errorf("%s c%d: %v", run, c, err)
			case e.Revision != state[r][c].rev:
				t.Errorf("%s c%d: stored revision %d, want %d (write err %v)", run, c, e.Revision, state[r][c].rev, err)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := range 60 {
				write(rng, rng.Intn(runs), i%5 != 4)
			}
		}()
	}
	wg.Wait()
	t.Logf("ok %d, full %d", ok, full)
	if full == 0 {
		t.Fatal("the database never filled")
	}
	for r := range runs {
		evs, err := s.EventList(bg, &store.EventListParams{Tenant: "t", RunID: fmt.Sprint("r", r)})
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("r%d: event %d has seq %d", r, i, ev.Seq)
			}
		}
	}
}
