package scaletest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/internal/scaletest"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// TestClone: a finished run written by the runtime, copied, reads back
// through the runtime as the same run (its transcript, ledger, events and
// released claim), under the copy's id and times; copies past History
// have their transcript and no events.
func TestClone(t *testing.T) {
	ctx := context.Background()
	backends := map[string]func(t *testing.T) (store.Store, func(c scaletest.Clone) error){
		"sqlite": func(t *testing.T) (store.Store, func(c scaletest.Clone) error) {
			st, err := storesqlite.Open(filepath.Join(t.TempDir(), "clone.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, func(c scaletest.Clone) error { return scaletest.CloneSQLite(ctx, st.DB(), c) }
		},
		"postgres": func(t *testing.T) (store.Store, func(c scaletest.Clone) error) {
			url := os.Getenv("ACTOVIQ_TEST_PG_URL")
			if url == "" {
				t.Skip("ACTOVIQ_TEST_PG_URL not set")
			}
			raw := make([]byte, 6)
			if _, err := rand.Read(raw); err != nil {
				t.Fatal(err)
			}
			st, err := storepg.Open(ctx, url, &storepg.Config{Schema: "clone_" + hex.EncodeToString(raw)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA "`+st.Schema()+`" CASCADE`)
				st.Close()
			})
			return st, func(c scaletest.Clone) error {
				return scaletest.ClonePostgreSQL(ctx, scaletest.PGPool{Pool: st.Pool()}, `"`+st.Schema()+`"`, c)
			}
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			st, clone := backends[name](t)
			rt, err := actoviq.New(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect},
				func(ctx context.Context, p struct{ To string }) (string, error) { return "sent to " + p.To, nil })
			model := scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"To":"ada"}`)},
					{ID: "call_2", Name: "pay", Arguments: json.RawMessage(`{"To":"bob"}`)}}},
				scripted.Turn{Text: "Paid."},
			)
			agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
			if _, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "tpl", Items: []item.Item{item.UserText("pay ada")}}); err != nil {
				t.Fatal(err)
			}
			base := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
			if err := clone(scaletest.Clone{Tenant: store.DefaultTenant, Template: "tpl", N: 3, History: 2, Base: base}); err != nil {
				t.Fatal(err)
			}
			tpl, err := rt.Get(ctx, "tpl")
			if err != nil {
				t.Fatal(err)
			}
			tplEvents, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "tpl"})
			if err != nil || len(tplEvents) == 0 {
				t.Fatalf("template events: %d, %v", len(tplEvents), err)
			}
			for n := 1; n <= 3; n++ {
				id := scaletest.HistoryID("", n)
				got, err := rt.Get(ctx, id)
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if want := base.Add(time.Duration(n) * time.Second); !got.CreatedAt.Equal(want) {
					t.Errorf("%s created %v, want %v", id, got.CreatedAt, want)
				}
				if got.Status != actoviq.StatusCompleted || got.Revision != tpl.Revision {
					t.Errorf("%s: %s revision %d, template %s %d", id, got.Status, got.Revision, tpl.Status, tpl.Revision)
				}
				evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: id})
				if err != nil {
					t.Fatalf("%s events: %v", id, err)
				}
				cl, err := st.ClaimList(ctx, &store.ClaimListParams{Tenant: store.DefaultTenant, Keys: []string{store.RunClaimKey(id)}})
				if err != nil || len(cl) != 1 || cl[0].ExpiresAt.After(time.Now()) {
					t.Fatalf("%s claim: %v %v", id, cl, err)
				}
				if !reflect.DeepEqual(got.Transcript, tpl.Transcript) {
					t.Fatalf("%s: transcript differs from the template's", id)
				}
				if n > 2 {
					if len(evs) != 0 {
						t.Errorf("%s: %d events past History", id, len(evs))
					}
					continue
				}
				if len(evs) != len(tplEvents) {
					t.Fatalf("%s: %d events, template %d", id, len(evs), len(tplEvents))
				}
				for i := range evs {
					if evs[i].Type != tplEvents[i].Type {
						t.Errorf("%s event %d: %s, template %s", id, i, evs[i].Type, tplEvents[i].Type)
					}
				}
				if len(got.Ledger) != len(tpl.Ledger) {
					t.Fatalf("%s: %d ledger entries, template %d", id, len(got.Ledger), len(tpl.Ledger))
				}
				if k := got.Ledger[0].IdempotencyKey; k != id+":call_1" {
					t.Errorf("%s: idempotency key %q", id, k)
				}
				if sq, ok := st.(*storesqlite.Store); ok {
					// call_2 was prepared in the response's row of several
					// records: its index entry (0017) is copied with it.
					var n int
					if err := sq.DB().QueryRowContext(ctx, `SELECT count(*) FROM event_calls WHERE run_id = ? AND call_id = 'call_2'`, id).Scan(&n); err != nil || n != 1 {
						t.Errorf("%s: %d event_calls rows for call_2, %v; want 1", id, n, err)
					}
				}
			}
		})
	}
}
