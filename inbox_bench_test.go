package actoviq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// BenchmarkInboxLiveClaimsElsewhere measures one inbox page (its runs and
// its totals, which add the runs a dead process of this host holds) on a
// store where other hosts drive 10,000 runs (live claims) against one
// where they drive 100; both hold 1,000 waiting runs, 4 of them claimed by
// an exited process of this host. The two stores are read in turn in the
// same run; reported are the milliseconds of a page on each and their
// ratio (many/few), the same for the read that the totals used before
// (every live-claimed waiting run of the tenant and its claim), and the
// time of the store's count of idle waiting runs alone and its ratio (the
// counters of runs and of held claims, less the held claims expired
// without a release: none here, so it should not grow with the runs
// driven). On SQLite and, with ACTOVIQ_TEST_PG_URL, PostgreSQL.
//
//	go test -run '^$' -bench InboxLiveClaimsElsewhere -benchtime 200x .
func BenchmarkInboxLiveClaimsElsewhere(b *testing.B) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		b.Skip("no hostname: no local holder")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		b.Fatal(err)
	}
	deadHolder := fmt.Sprintf("%s:%d:1.x", host, gone.Process.Pid)
	const waiting, deadHere = 1000, 4
	spec := func(driven int) scaletest.Spec {
		return scaletest.Spec{Tenant: store.DefaultTenant, Finished: 1000, Waiting: waiting, Driven: driven,
			Base: time.Now().Add(-24 * time.Hour).UTC().Truncate(time.Second), DrivenUntil: time.Now().Add(24 * time.Hour)}
	}
	open := map[string]func(b *testing.B, s scaletest.Spec) store.Store{
		"sqlite": func(b *testing.B, s scaletest.Spec) store.Store {
			st, err := storesqlite.Open(filepath.Join(b.TempDir(), "inbox.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			if err := scaletest.SQLite(context.Background(), st.DB(), s); err != nil {
				b.Fatal(err)
			}
			if _, err := st.DB().Exec(`ANALYZE`); err != nil {
				b.Fatal(err)
			}
			return st
		},
		"postgres": func(b *testing.B, s scaletest.Spec) store.Store {
			url := os.Getenv("ACTOVIQ_TEST_PG_URL")
			if url == "" {
				b.Skip("ACTOVIQ_TEST_PG_URL not set")
			}
			raw := make([]byte, 6)
			if _, err := rand.Read(raw); err != nil {
				b.Fatal(err)
			}
			schema := "b_inbox_" + hex.EncodeToString(raw)
			ctx := context.Background()
			st, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			quoted := `"` + schema + `"`
			b.Cleanup(func() {
				_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA `+quoted+` CASCADE`)
				st.Close()
			})
			exec := scaletest.PGPool{Pool: st.Pool()}.Exec
			if err := scaletest.PostgreSQL(ctx, exec, quoted, s); err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			type side struct {
				st             store.Store
				rt             *actoviq.Runtime
				page, old, cnt time.Duration
			}
			sides := []*side{}
			for _, driven := range []int{100, 10000} {
				st := open[name](b, spec(driven))
				for i := 1; i <= deadHere; i++ {
					if _, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: store.DefaultTenant,
						Key: store.RunClaimKey(scaletest.WaitingID(i)), Holder: deadHolder, TTL: 24 * time.Hour}); err != nil {
						b.Fatal(err)
					}
				}
				rt, err := actoviq.New(st, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { rt.Close() })
				// The page must be right before it is timed: every waiting
				// run counted (those of the dead local process too), none
				// of the driven ones.
				page, err := rt.Inbox(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if page.Total != waiting || len(page.Runs) != 50 {
					b.Fatalf("%d driven elsewhere: inbox total %d (%v), %d runs on the page; want %d and 50",
						driven, page.Total, page.Totals, len(page.Runs), waiting)
				}
				sides = append(sides, &side{st: st, rt: rt})
			}
			// oldRead is what the totals read before: every live-claimed
			// waiting run of the tenant, then their claims.
			oldRead := func(s *side) {
				runs, err := s.st.RunList(ctx, &store.RunListParams{Tenant: store.DefaultTenant,
					Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning},
					Claim:    store.ClaimFilter{State: store.ClaimLive}, Summary: true})
				if err != nil {
					b.Fatal(err)
				}
				var keys []string
				for _, r := range runs {
					keys = append(keys, store.RunClaimKey(r.ID))
				}
				for len(keys) > 0 {
					n := min(len(keys), store.MaxLedgerRuns)
					if _, err := s.st.ClaimList(ctx, &store.ClaimListParams{Tenant: store.DefaultTenant, Keys: keys[:n]}); err != nil {
						b.Fatal(err)
					}
					keys = keys[n:]
				}
			}
			b.ResetTimer()
			for range b.N {
				for _, s := range sides {
					t0 := time.Now()
					if _, err := s.rt.Inbox(ctx, nil); err != nil {
						b.Fatal(err)
					}
					s.page += time.Since(t0)
					t0 = time.Now()
					oldRead(s)
					s.old += time.Since(t0)
					t0 = time.Now()
					if _, err := s.st.RunCount(ctx, &store.RunCountParams{Tenant: store.DefaultTenant,
						Statuses: []store.RunStatus{store.RunInterrupted, store.RunRunning}, Claim: store.ClaimFilter{State: store.ClaimIdle}}); err != nil {
						b.Fatal(err)
					}
					s.cnt += time.Since(t0)
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
			few, many := sides[0], sides[1]
			b.ReportMetric(ms(few.page), "ms/page-few")
			b.ReportMetric(ms(many.page), "ms/page-many")
			b.ReportMetric(float64(many.page)/float64(few.page), "page-many/few")
			b.ReportMetric(ms(few.old), "ms/oldread-few")
			b.ReportMetric(ms(many.old), "ms/oldread-many")
			b.ReportMetric(float64(many.old)/float64(few.old), "oldread-many/few")
			b.ReportMetric(ms(few.cnt), "ms/idlecount-few")
			b.ReportMetric(ms(many.cnt), "ms/idlecount-many")
			b.ReportMetric(float64(many.cnt)/float64(few.cnt), "idlecount-many/few")
		})
	}
}
