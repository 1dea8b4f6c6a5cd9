// Command seed fills a store with a history as the real code writes it:
// N copies of a finished template run (run row, released claim and run
// log, and for the first -history copies its events and ledger rows), plus
// waiting, stalled, queued and driven runs (scaletest.Spec). The template
// is a run the store already holds (made with the CLI, for example the
// README's `actoviq run` with the scripted model, then approve and
// resume). It then reads one copy back with the store's own readers.
//
//	go run ./internal/scaletest/seed -store sqlite:/tmp/big.db -template tpl -n 1000000 -history 100000
//	go run ./internal/scaletest/seed -store 'postgres://...&actoviq_schema=big' -template tpl -n 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

var (
	storeURL = flag.String("store", "", "sqlite:PATH or a postgres:// URL (schema in actoviq_schema)")
	template = flag.String("template", "tpl", "id of the finished run to copy")
	n        = flag.Int("n", 1000000, "copies of the template (run row and claim)")
	history  = flag.Int("history", -1, "copies that also get events and ledger rows (-1: all)")
	waiting  = flag.Int("waiting", 5000, "waiting runs")
	stalled  = flag.Int("stalled", 2000, "stalled runs")
	queued   = flag.Int("queued", 1000, "queued runs")
	driven   = flag.Int("driven", 10000, "driven runs (claims live for a day)")
	tenant   = flag.String("tenant", "default", "tenant")
)

func main() {
	flag.Parse()
	ctx := context.Background()
	if *history < 0 {
		*history = *n
	}
	// The copies end a day before now; the other runs come after them.
	base := time.Now().Add(-time.Duration(*n)*time.Second - 24*time.Hour).UTC().Truncate(time.Second)
	c := scaletest.Clone{Tenant: *tenant, Template: *template, N: *n, History: *history, Base: base}
	spec := scaletest.Spec{Tenant: *tenant, Waiting: *waiting, Stalled: *stalled, Queued: *queued, Driven: *driven,
		DrivenUntil: time.Now().Add(24 * time.Hour), Base: base.Add(time.Duration(*n) * time.Second)}
	t0 := time.Now()
	var st store.Store
	switch {
	case strings.HasPrefix(*storeURL, "sqlite:"):
		s, err := storesqlite.Open(strings.TrimPrefix(*storeURL, "sqlite:"), nil)
		if err != nil {
			fail(err)
		}
		st = s
		if err := scaletest.CloneSQLite(ctx, s.DB(), c); err != nil {
			fail(err)
		}
		fmt.Printf("cloned %d runs (%d with history) in %.0f s\n", *n, *history, time.Since(t0).Seconds())
		if err := scaletest.SQLite(ctx, s.DB(), spec); err != nil {
			fail(err)
		}
		if _, err := s.DB().ExecContext(ctx, `ANALYZE`); err != nil {
			fail(err)
		}
	case strings.HasPrefix(*storeURL, "postgres"):
		u, err := url.Parse(*storeURL)
		if err != nil {
			fail(err)
		}
		q := u.Query()
		schema := q.Get("actoviq_schema")
		if schema == "" {
			schema = "actoviq"
		}
		q.Del("actoviq_schema")
		u.RawQuery = q.Encode()
		s, err := storepg.Open(ctx, u.String(), &storepg.Config{Schema: schema})
		if err != nil {
			fail(err)
		}
		st = s
		quoted := `"` + schema + `"`
		if err := scaletest.ClonePostgreSQL(ctx, scaletest.PGPool{Pool: s.Pool()}, quoted, c); err != nil {
			fail(err)
		}
		fmt.Printf("cloned %d runs (%d with history) in %.0f s\n", *n, *history, time.Since(t0).Seconds())
		if err := scaletest.PostgreSQL(ctx, scaletest.PGPool{Pool: s.Pool()}.Exec, quoted, spec); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("-store: want sqlite:PATH or postgres://"))
	}
	defer st.Close()
	fmt.Printf("seeded in %.0f s\n", time.Since(t0).Seconds())
	// Read copies back with the store's own readers: the last with its
	// history, the last of all.
	for _, id := range []string{scaletest.HistoryID("", max(*history, 1)), scaletest.HistoryID("", *n)} {
		r, err := st.RunGet(ctx, &store.RunGetParams{Tenant: *tenant, ID: id})
		if err != nil {
			fail(err)
		}
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: *tenant, RunID: id})
		if err != nil {
			fail(err)
		}
		cl, err := st.ClaimList(ctx, &store.ClaimListParams{Tenant: *tenant, Keys: []string{store.RunClaimKey(id)}})
		if err != nil {
			fail(err)
		}
		fmt.Printf("%s: %s, revision %d, created %s, %d events, %d claims\n", id, r.Status, r.Revision, r.CreatedAt.Format(time.RFC3339),
			len(evs), len(cl))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seed:", err)
	os.Exit(1)
}
