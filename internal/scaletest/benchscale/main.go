// Command benchscale prints the figures of issue 21 (scripts/bench-scale):
// how claims, worker throughput, the inbox's first page and a status list
// cost in a store holding 1,000,000 finished runs compared with an empty
// one, and what pruning those runs costs the workers, on SQLite and on
// PostgreSQL (fsync on: the script starts its own cluster). Ratios come
// from one run, the two stores measured in alternating rounds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

var (
	finished = flag.Int("finished", 1000000, "finished runs in the large store")
	rounds   = flag.Int("rounds", 3, "alternating measurement rounds")
	claims   = flag.Int("claims", 100, "claims per round and store")
	pgURL    = flag.String("pg", os.Getenv("ACTOVIQ_TEST_PG_URL"), "PostgreSQL URL (fsync on); empty skips PostgreSQL")
	dir      = flag.String("dir", "", "directory for the SQLite files (default: a temporary one)")
	only     = flag.String("only", "", "sqlite or pg: measure one backend")
	noPrune  = flag.Bool("no-prune", false, "leave the prune out")
)

// backend is one store under test with a way to run SQL on it.
type backend struct {
	name  string
	st    store.Store
	seed  func(ctx context.Context, s scaletest.Spec) error
	close func()
}

func openSQLite(path string) (*backend, error) {
	st, err := storesqlite.Open(path, nil)
	if err != nil {
		return nil, err
	}
	return &backend{name: "sqlite", st: st, seed: func(ctx context.Context, s scaletest.Spec) error {
		return scaletest.SQLite(ctx, st.DB(), s)
	}, close: func() { st.Close() }}, nil
}

func openPG(ctx context.Context, url, schema string) (*backend, error) {
	st, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
	if err != nil {
		return nil, err
	}
	quoted := `"` + schema + `"`
	exec := scaletest.PGPool{Pool: st.Pool()}.Exec
	return &backend{name: "pg", st: st, seed: func(ctx context.Context, s scaletest.Spec) error {
		return scaletest.PostgreSQL(ctx, exec, quoted, s)
	}, close: func() {
		_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA `+quoted+` CASCADE`)
		st.Close()
	}}, nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// work claims n runs with w workers, each claim followed by the fenced
// write that finishes the run (what a worker's drive does at least), and
// returns the claim latencies and the runs per second.
func work(ctx context.Context, st store.Store, n, w int, holder string) ([]time.Duration, float64, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		left atomic.Int64
		errs = make(chan error, w)
		wg   sync.WaitGroup
	)
	left.Store(int64(n))
	start := time.Now()
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				run, claim, err := st.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "default", Holder: fmt.Sprintf("%s-%d", holder, i),
					TTL: time.Minute})
				d := time.Since(t0)
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				f := store.Fence{Key: claim.Key, Holder: claim.Holder, Epoch: claim.Epoch}
				if _, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: "default", RunID: run.ID, Fence: &f,
					Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunCompleted, Checkpoint: run.Checkpoint}}); err != nil {
					errs <- fmt.Errorf("finish: %w", err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return nil, 0, err
	default:
	}
	return lat, float64(len(lat)) / elapsed.Seconds(), nil
}

// pages times the inbox's first page and runs list --status interrupted
// --limit 50 (Runtime.ListPage), n times each, alternating.
func pages(ctx context.Context, rt *actoviq.Runtime, n int) (inbox, list time.Duration, shown int, err error) {
	var a, b []time.Duration
	for range n {
		t0 := time.Now()
		p, err := rt.Inbox(ctx, &actoviq.InboxParams{Limit: 50})
		if err != nil {
			return 0, 0, 0, err
		}
		a = append(a, time.Since(t0))
		shown = int(p.Total)
		t0 = time.Now()
		if _, err := rt.ListPage(ctx, &actoviq.ListParams{Status: actoviq.StatusInterrupted, Limit: 50}); err != nil {
			return 0, 0, 0, err
		}
		b = append(b, time.Since(t0))
	}
	return median(a), median(b), shown, nil
}

// timedStore records how long each store call of an inbox page takes.
type timedStore struct {
	store.Store
	mu  sync.Mutex
	lat map[string][]time.Duration
}

func (t *timedStore) add(what string, t0 time.Time) {
	d := time.Since(t0)
	t.mu.Lock()
	t.lat[what] = append(t.lat[what], d)
	t.mu.Unlock()
}

func (t *timedStore) RunList(ctx context.Context, p *store.RunListParams) ([]*store.Run, error) {
	defer t.add(fmt.Sprintf("RunList(limit %d)", p.Limit), time.Now())
	return t.Store.RunList(ctx, p)
}

func (t *timedStore) RunCount(ctx context.Context, p *store.RunCountParams) ([]store.RunCount, error) {
	defer t.add("RunCount", time.Now())
	return t.Store.RunCount(ctx, p)
}

func (t *timedStore) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	defer t.add("LedgerList", time.Now())
	return t.Store.LedgerList(ctx, p)
}

func (t *timedStore) ClaimList(ctx context.Context, p *store.ClaimListParams) ([]*store.Claim, error) {
	defer t.add("ClaimList", time.Now())
	return t.Store.ClaimList(ctx, p)
}

// breakdown prints the median time of each store call of the inbox's
// first page, and of the page itself, over n pages.
func breakdown(ctx context.Context, name string, st store.Store, n int) error {
	ts := &timedStore{Store: st, lat: map[string][]time.Duration{}}
	rt, err := actoviq.New(ts, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	var page []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := rt.Inbox(ctx, &actoviq.InboxParams{Limit: 50}); err != nil {
			return err
		}
		page = append(page, time.Since(t0))
	}
	fmt.Printf("%s inbox first page, median of %d: page %v;", name, n, median(page).Round(time.Microsecond))
	keys := make([]string, 0, len(ts.lat))
	for k := range ts.lat {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf(" %s %v ×%d;", k, median(ts.lat[k]).Round(time.Microsecond), len(ts.lat[k])/n)
	}
	fmt.Println()
	return nil
}

func ratio(a, b time.Duration) string { return fmt.Sprintf("%.2f", float64(a)/float64(b)) }

func bench(ctx context.Context, small, large *backend) error {
	base := time.Now().Add(-400 * 24 * time.Hour).UTC().Truncate(time.Second)
	queued := *rounds * *claims * 2
	t0 := time.Now()
	if err := small.seed(ctx, scaletest.Spec{Tenant: "default", Waiting: 10, Queued: queued, Base: base}); err != nil {
		return err
	}
	if err := large.seed(ctx, scaletest.Spec{Tenant: "default", Finished: *finished, Waiting: 10, Queued: queued, Base: base}); err != nil {
		return err
	}
	fmt.Printf("%s: seeded %d finished runs in %.0f s\n", large.name, *finished, time.Since(t0).Seconds())

	// Claims and throughput, alternating rounds: 1 worker, then 4.
	var lat [2][]time.Duration
	var tp1, tp4 [2][]float64
	for r := range *rounds {
		for i, b := range []*backend{small, large} {
			l, t, err := work(ctx, b.st, *claims/2, 1, fmt.Sprintf("w%d", r))
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			lat[i] = append(lat[i], l...)
			tp1[i] = append(tp1[i], t)
			_, t, err = work(ctx, b.st, *claims/2, 4, fmt.Sprintf("v%d", r))
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			tp4[i] = append(tp4[i], t)
		}
	}
	med := func(f []float64) float64 { s := slices.Clone(f); slices.Sort(s); return s[len(s)/2] }
	fmt.Printf("%s claim (median, 1 worker): empty %v, %d finished %v, ratio %s\n", large.name,
		median(lat[0]).Round(time.Microsecond), *finished, median(lat[1]).Round(time.Microsecond), ratio(median(lat[1]), median(lat[0])))
	fmt.Printf("%s runs/s, 1 worker: empty %.0f, large %.0f, ratio %.2f\n", large.name, med(tp1[0]), med(tp1[1]), med(tp1[0])/med(tp1[1]))
	fmt.Printf("%s runs/s, 4 workers: empty %.0f, large %.0f, ratio %.2f\n", large.name, med(tp4[0]), med(tp4[1]), med(tp4[0])/med(tp4[1]))

	// The inbox and the interrupted list among the finished runs: 10
	// waiting, then 10,000.
	rt, err := actoviq.New(large.st, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	in10, list10, n10, err := pages(ctx, rt, 15)
	if err != nil {
		return err
	}
	if err := breakdown(ctx, large.name+" (10 waiting)", large.st, 15); err != nil {
		return err
	}
	if err := large.seed(ctx, scaletest.Spec{Tenant: "default", Waiting: 9990, Base: base, Prefix: "b"}); err != nil {
		return err
	}
	in10k, list10k, n10k, err := pages(ctx, rt, 15)
	if err != nil {
		return err
	}
	if err := breakdown(ctx, large.name+" (10,000 waiting)", large.st, 15); err != nil {
		return err
	}
	fmt.Printf("%s inbox first page: %d waiting %v, %d waiting %v, ratio %s\n", large.name, n10, in10.Round(time.Microsecond),
		n10k, in10k.Round(time.Microsecond), ratio(in10k, in10))
	fmt.Printf("%s runs list --status interrupted --limit 50: %d waiting %v, %d waiting %v, ratio %s\n", large.name, n10,
		list10.Round(time.Microsecond), n10k, list10k.Round(time.Microsecond), ratio(list10k, list10))

	if *noPrune {
		return nil
	}
	// Prune every finished run while a worker claims, against the same
	// worker without the prune (just before).
	if err := large.seed(ctx, scaletest.Spec{Tenant: "default", Queued: 100000, Base: base.Add(time.Hour), Prefix: "p"}); err != nil {
		return err
	}
	before, _, err := work(ctx, large.st, *claims, 1, "before")
	if err != nil {
		return err
	}
	var during []time.Duration
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			l, _, err := work(ctx, large.st, 10, 1, "during")
			if err != nil {
				done <- err
				return
			}
			during = append(during, l...)
		}
	}()
	var peak atomic.Uint64
	sample := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-sample:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	t0 = time.Now()
	res, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: time.Now(), Batch: 500})
	elapsed := time.Since(t0)
	close(stop)
	close(sample)
	if werr := <-done; werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s prune: %d runs in %d batches, %.0f s (%.0f runs/s), heap in use %.1f MiB before, peak %.1f MiB\n", large.name,
		res.Runs, res.Batches, elapsed.Seconds(), float64(res.Runs)/elapsed.Seconds(), float64(ms0.HeapInuse)/(1<<20), float64(peak.Load())/(1<<20))
	fmt.Printf("%s claim during the prune (median, 1 worker): without %v, during %v (%d claims), ratio %s\n", large.name,
		median(before).Round(time.Microsecond), median(during).Round(time.Microsecond), len(during), ratio(median(during), median(before)))
	return nil
}

func main() {
	flag.Parse()
	ctx := context.Background()
	d := *dir
	if d == "" {
		var err error
		if d, err = os.MkdirTemp("", "actoviq-bench-scale"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
	if *only == "" || *only == "sqlite" {
		small, err := openSQLite(filepath.Join(d, "empty.db"))
		if err != nil {
			fail(err)
		}
		large, err := openSQLite(filepath.Join(d, "large.db"))
		if err != nil {
			fail(err)
		}
		err = bench(ctx, small, large)
		small.close()
		large.close()
		if err != nil {
			fail(err)
		}
	}
	if (*only == "" || *only == "pg") && *pgURL != "" {
		small, err := openPG(ctx, *pgURL, fmt.Sprintf("bench_empty_%d", os.Getpid()))
		if err != nil {
			fail(err)
		}
		large, err := openPG(ctx, *pgURL, fmt.Sprintf("bench_large_%d", os.Getpid()))
		if err != nil {
			fail(err)
		}
		err = bench(ctx, small, large)
		small.close()
		large.close()
		if err != nil {
			fail(err)
		}
	}
}
