package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// LoadOptions bounds [Load]. Zero fields take the defaults in brackets.
type LoadOptions struct {
	Writers int           // concurrent writers [32]
	Updates int           // successful CAS updates each writer makes [ACTOVIQ_TEST_LOAD_UPDATES, else 100]
	Runs    int           // runs they all update [4]
	Handles int           // store handles the writers share, as processes would [4]
	MaxTime time.Duration // writers stop early after this, counted and said [2 min]
}

// Load has Writers goroutines make Updates successful compare-and-swap
// updates each on the same few runs: read the run, write its counter + 1
// at the revision read, and on a conflict read again. It checks that no
// update is lost (each run's counter and revision account for every
// successful write), that every failed write is a typed conflict
// (errors.As *store.ConflictError, errors.Is store.ErrConflict, with both
// revisions), and logs the throughput. The time bound stops the writers
// early on a slow machine; the checks hold for the writes that were made.
//
// By default each writer makes 100 updates (3,200 commits in all), which
// contends as hard as more would and keeps go test ./... quick; the
// environment variable ACTOVIQ_TEST_LOAD_UPDATES asks for more
// (scripts/test sets 1000, the figure docs/measured.md quotes).
func Load(t *testing.T, b Backend, o LoadOptions) {
	t.Helper()
	if o.Writers == 0 {
		o.Writers = 32
	}
	if o.Updates == 0 {
		o.Updates = 100
		if v := os.Getenv("ACTOVIQ_TEST_LOAD_UPDATES"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("ACTOVIQ_TEST_LOAD_UPDATES=%q: want a positive number", v)
			}
			o.Updates = n
		}
	}
	if o.Runs == 0 {
		o.Runs = 4
	}
	if o.Handles == 0 {
		o.Handles = 4
	}
	if o.MaxTime == 0 {
		o.MaxTime = 2 * time.Minute
	}
	ctx := context.Background()
	open := b.NewDatabase(t)
	handles := make([]store.Store, o.Handles)
	for i := range handles {
		handles[i] = open(t, nil)
	}
	for r := range o.Runs {
		if _, err := handles[0].RunCreate(ctx, &store.RunCreateParams{Run: newRun("load", fmt.Sprintf("run-%d", r))}); err != nil {
			t.Fatal(err)
		}
	}
	var ok, conflicts atomic.Int64
	perRun := make([]atomic.Int64, o.Runs)
	stop := time.Now().Add(o.MaxTime)
	start := time.Now()
	var wg sync.WaitGroup
	var once sync.Once
	fail := func(format string, args ...any) { once.Do(func() { t.Errorf(format, args...) }) }
	for w := range o.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := handles[w%len(handles)]
			for done := 0; done < o.Updates && time.Now().Before(stop); {
				r := (w + done) % o.Runs
				id := fmt.Sprintf("run-%d", r)
				run, err := h.RunGet(ctx, &store.RunGetParams{Tenant: "load", ID: id})
				if err != nil {
					fail("writer %d: get %s: %v", w, id, err)
					return
				}
				var cp struct{ N int64 }
				if err := json.Unmarshal(run.Checkpoint, &cp); err != nil {
					fail("writer %d: %s checkpoint %s: %v", w, id, run.Checkpoint, err)
					return
				}
				_, err = h.RunWrite(ctx, &store.RunWriteParams{Tenant: "load", RunID: id,
					Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunRunning,
						Checkpoint: json.RawMessage(fmt.Sprintf(`{"N":%d}`, cp.N+1))}})
				var ce *store.ConflictError
				switch {
				case err == nil:
					done++
					ok.Add(1)
					perRun[r].Add(1)
				case errors.As(err, &ce) && errors.Is(err, store.ErrConflict):
					if ce.Expected != run.Revision || ce.Actual <= run.Revision {
						fail("writer %d: conflict on %s expected %d actual %d; it read revision %d", w, id, ce.Expected, ce.Actual, run.Revision)
						return
					}
					conflicts.Add(1)
				default:
					fail("writer %d: write %s: %v (%T), want success or a *store.ConflictError", w, id, err, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	var sum int64
	for r := range o.Runs {
		id := fmt.Sprintf("run-%d", r)
		run, err := handles[0].RunGet(ctx, &store.RunGetParams{Tenant: "load", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var cp struct{ N int64 }
		_ = json.Unmarshal(run.Checkpoint, &cp)
		if got := perRun[r].Load(); cp.N != got || run.Revision != 1+got {
			t.Errorf("%s: counter %d, revision %d after %d successful updates: %d lost", id, cp.N, run.Revision, got, got-cp.N)
		}
		sum += cp.N
	}
	want := int64(o.Writers * o.Updates)
	if ok.Load() < want {
		t.Logf("stopped by the %v bound after %d of %d updates", o.MaxTime, ok.Load(), want)
	}
	t.Logf("%s: %d writers × %d CAS updates on %d runs through %d handles: %d updates, %d typed conflicts, 0 lost of %d, %.0f updates/s (%.0f attempts/s), %.1fs",
		b.Name, o.Writers, o.Updates, o.Runs, o.Handles, ok.Load(), conflicts.Load(), sum, float64(ok.Load())/took.Seconds(),
		float64(ok.Load()+conflicts.Load())/took.Seconds(), took.Seconds())
}
