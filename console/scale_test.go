package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// scaleSpec is the store of the inbox scale test: 10,000 runs waiting for
// a person (approvals and reconciliations), 10 stalled runs, among 20,000
// finished runs and 5 queued ones.
var scaleSpec = scaletest.Spec{Tenant: "default", Finished: 20000, Waiting: 10000, Stalled: 10, Queued: 5,
	Base: time.Now().Add(-30 * 24 * time.Hour).UTC().Truncate(time.Second)}

// TestInboxEveryWaitingRun pages through the inbox's JSON API and checks
// that every one of 10,000 waiting runs (and the 10 stalled ones) shows,
// once, oldest first, with correct totals on every page, that the page
// says it is cut, and that Runtime.ListPage pages through the same runs.
// On SQLite and on PostgreSQL.
func TestInboxEveryWaitingRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := storesqlite.Open(filepath.Join(t.TempDir(), "scale.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := scaletest.SQLite(context.Background(), st.DB(), scaleSpec); err != nil {
			t.Fatal(err)
		}
		checkInboxScale(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("ACTOVIQ_TEST_PG_URL")
		if url == "" {
			t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
		}
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		schema := "t_inbox_" + hex.EncodeToString(b)
		ctx := context.Background()
		st, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		quoted := `"` + schema + `"`
		defer func() {
			_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA `+quoted+` CASCADE`)
			st.Close()
		}()
		exec := scaletest.PGPool{Pool: st.Pool()}.Exec
		if err := scaletest.PostgreSQL(ctx, exec, quoted, scaleSpec); err != nil {
			t.Fatal(err)
		}
		checkInboxScale(t, st)
	})
}

func checkInboxScale(t *testing.T, st store.Store) {
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	con, err := console.New(rt, &console.Config{Tokens: []console.Token{{Secret: tokenAnon}}, InboxLimit: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	f := &fixture{t: t, con: con}
	f.srv = httptest.NewTLSServer(con)
	defer f.srv.Close()

	wantTotals := map[string]int64{"approval": 5000, "reconciliation": 5000, "stalled": 10}
	seen := map[string]bool{}
	var order []string
	after := ""
	pages := 0
	for {
		r := f.call("GET", "/api/v1/inbox?after="+url.QueryEscape(after), tokenAnon, "")
		if r.status != 200 {
			t.Fatalf("page %d: %d %s", pages, r.status, r.body)
		}
		var in console.Inbox
		r.json(t, &in)
		pages++
		if in.Total != 10010 || len(in.Totals) != len(wantTotals) {
			t.Fatalf("page %d totals %v (total %d), want %v", pages, in.Totals, in.Total, wantTotals)
		}
		for k, n := range wantTotals {
			if in.Totals[k] != n {
				t.Fatalf("page %d totals %v, want %v", pages, in.Totals, wantTotals)
			}
		}
		if in.Runs > 700 || in.Runs == 0 && in.Next != "" {
			t.Fatalf("page %d shows %d runs", pages, in.Runs)
		}
		if in.Cut == "" {
			t.Fatalf("page %d of a cut inbox does not say so", pages)
		}
		for _, it := range in.Items {
			if seen[it.RunID] {
				t.Fatalf("run %s shown twice", it.RunID)
			}
			seen[it.RunID] = true
			order = append(order, it.RunID)
			want := "stalled"
			if strings.HasPrefix(it.RunID, "w") {
				want = "approval"
				if n := it.RunID[len(it.RunID)-1] - '0'; n%2 == 0 {
					want = "reconciliation"
				}
				if it.CallID != "c1" || it.Tool != "pay" {
					t.Fatalf("item %+v: no call", it)
				}
			}
			if it.Kind != want {
				t.Fatalf("run %s kind %q, want %q", it.RunID, it.Kind, want)
			}
		}
		if in.Next == "" {
			break
		}
		if pages > 100 {
			t.Fatal("the inbox does not end")
		}
		after = in.Next
	}
	if len(seen) != 10010 || pages != 15 {
		t.Fatalf("paged %d runs in %d pages, want 10010 in 15", len(seen), pages)
	}
	for i := 1; i <= 10; i++ {
		if order[i-1] != scaletest.StalledID(i) {
			t.Fatalf("position %d is %s, want %s (oldest first)", i, order[i-1], scaletest.StalledID(i))
		}
	}
	for i := 1; i <= 10000; i++ {
		if order[9+i] != scaletest.WaitingID(i) {
			t.Fatalf("position %d is %s, want %s (oldest first)", 9+i, order[9+i], scaletest.WaitingID(i))
		}
	}
	// The first HTML page says it is cut and links the next one.
	br, _ := f.login("ops", tokenAnon)
	r := f.callWith(br.c, "GET", "/", "", "")
	if r.status != 200 || !strings.Contains(string(r.body), "10010 runs wait") ||
		!strings.Contains(string(r.body), `id="inbox-next"`) || !strings.Contains(string(r.body), "this page shows 700 runs") {
		t.Fatalf("inbox page: %d\n%.2000s", r.status, r.body)
	}
	// A filter by kind pages the store's index of that kind only.
	r = f.call("GET", "/api/v1/inbox?kind=reconciliation", tokenAnon, "")
	var rec console.Inbox
	r.json(t, &rec)
	if rec.Runs != 700 || rec.Items[0].RunID != scaletest.WaitingID(2) || rec.Next == "" {
		t.Fatalf("reconciliations: %d runs, first %s", rec.Runs, rec.Items[0].RunID)
	}
	// Its cut counts that kind, not the whole inbox (it said "10010 runs
	// wait in all" over pages of reconciliations only).
	if want := "this page shows 700 runs; 5000 runs wait for reconciliation (10010 in the inbox); more on the next page"; rec.Cut != want {
		t.Fatalf("reconciliations: cut %q, want %q", rec.Cut, want)
	}
	// A cursor the console did not hand out is refused.
	if r := f.call("GET", "/api/v1/inbox?after=%21%21", tokenAnon, ""); r.status != 400 {
		t.Fatalf("bad cursor: %d %s", r.status, r.body)
	}
	// runs list --status interrupted, through Runtime.ListPage: newest
	// first, every waiting run once.
	n, p := 0, &actoviq.ListParams{Status: actoviq.StatusInterrupted, Limit: 900}
	last := ""
	for pages := 0; ; pages++ {
		page, err := rt.ListPage(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runs {
			if r.Status != actoviq.StatusInterrupted || last != "" && r.ID >= last {
				t.Fatalf("run %s (%s) after %s", r.ID, r.Status, last)
			}
			last = r.ID
			n++
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	if n != 10000 {
		t.Fatalf("ListPage paged %d interrupted runs, want 10000", n)
	}
}
