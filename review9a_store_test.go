package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

func r9aEntry(run, call string, idx int, st store.LedgerState) *store.LedgerEntry {
	return &store.LedgerEntry{Tenant: store.DefaultTenant, RunID: run, CallID: call, Turn: 1, Index: idx, Tool: "pay",
		Effect: "side-effect", State: st, IdempotencyKey: run + ":" + call, ArgsDigest: "sha256:x", Args: json.RawMessage(`{"amount":5}`)}
}

func r9aEvent(run, typ, id string) *store.EventRecord {
	return &store.EventRecord{ID: id, RunID: run, Type: typ, Data: json.RawMessage(`{}`)}
}

// A write's first miss, in its input order, is the conflict every store
// reports, with its kind, id, expected and actual revision; for entries
// stored every way a write stores them: in a folded row's more (a model
// response's prepared calls), as a folded write's trailing started record
// (created started), in a one-record row.
func TestReview9aConflictFirstMiss(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		run := "r9a-conflict"
		r, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: run, AgentID: "a", AgentDigest: "d",
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		// The model's answer with c1's start: c2, c3 prepared, c1 created started.
		ev := func(typ, id string) *store.EventRecord { return r9aEvent(run, typ, id) }
		p := &store.RunWriteParams{Tenant: store.DefaultTenant, RunID: run,
			Run:    &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"n":1}`)},
			Events: []*store.EventRecord{ev("model.response", "e1"), ev("tool.prepared", "e2")},
			Ledger: []store.LedgerWrite{
				{Entry: r9aEntry(run, "c2", 1, store.LedgerPrepared), Event: ev("tool.prepared", "e3")},
				{Entry: r9aEntry(run, "c3", 2, store.LedgerPrepared), Event: ev("tool.prepared", "e4")},
				{Entry: r9aEntry(run, "c1", 0, store.LedgerStarted), Event: ev("tool.started", "e5")},
			}}
		if _, err := st.RunWrite(ctx, p); err != nil {
			t.Fatal(err)
		}
		// c4: a one-record row, then at revision 2.
		for i, s := range []store.LedgerState{store.LedgerPrepared, store.LedgerStarted} {
			if _, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: store.DefaultTenant, RunID: run,
				Ledger: []store.LedgerWrite{{Entry: r9aEntry(run, "c4", 3, s), ExpectedRevision: int64(i), Event: ev("tool."+string(s), fmt.Sprintf("e6%d", i))}}}); err != nil {
				t.Fatal(err)
			}
		}
		type rec struct {
			call string
			exp  int64
		}
		cases := []struct {
			name     string
			recs     []rec
			id       string
			exp, act int64
		}{
			{"existing", []rec{{"c3", 1}, {"c2", 5}, {"c1", 0}}, "c2", 5, 1},
			{"existing-c1-first", []rec{{"c1", 2}, {"c2", 5}}, "c1", 2, 1},
			{"existing-c4", []rec{{"c2", 1}, {"c4", 1}, {"c1", 3}}, "c4", 1, 2},
			{"with-new", []rec{{"c9", 0}, {"c3", 0}, {"c2", 7}}, "c3", 0, 1},
			{"with-new-c1", []rec{{"c9", 0}, {"c1", 0}, {"c3", 0}}, "c1", 0, 1},
			{"new-missing", []rec{{"c2", 1}, {"c8", 3}}, "c8", 3, 0},
			{"c4-new", []rec{{"c9", 0}, {"c4", 0}}, "c4", 0, 2},
		}
		for _, c := range cases {
			var w []store.LedgerWrite
			for i, x := range c.recs {
				w = append(w, store.LedgerWrite{Entry: r9aEntry(run, x.call, 10+i, store.LedgerStarted), ExpectedRevision: x.exp,
					Event: ev("tool.started", fmt.Sprintf("x-%s-%d", c.name, i))})
			}
			_, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: store.DefaultTenant, RunID: run, Ledger: w})
			var ce *store.ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: %v, want a conflict", c.name, err)
				continue
			}
			if ce.Kind != "ledger" || (ce.ID != c.id && ce.ID != run+"/"+c.id) || ce.Expected != c.exp || ce.Actual != c.act {
				t.Errorf("%s: conflict %+v, want ledger %s expected %d actual %d", c.name, *ce, c.id, c.exp, c.act)
			}
		}
	})
}

// Concurrent writers of one run, writes of every shape (a folded row
// with a started tail, a folded row alone, one record, plain events
// only): the run's events are numbered 1..N without a gap or a repeat,
// each write's in the order it gave them, and every entry reads back in
// the state its write left.
func TestReview9aConcurrentShapesGapless(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) { r9aGapless(t, st, "r9a-gapless") })
}

// The same, with a run per writer: a group commit's batches mix the
// shapes of several runs' writes.
func TestReview9aConcurrentRunsShapes(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		var wg sync.WaitGroup
		for r := 0; r < 6; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r9aGapless(t, st, fmt.Sprintf("r9a-runs-%d", r))
			}()
		}
		wg.Wait()
	})
}

func r9aGapless(t *testing.T, st store.Store, run string) {
	{
		ctx := context.Background()
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: run, AgentID: "a", AgentDigest: "d",
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		const writers, each = 4, 12
		errc := make(chan error, writers)
		for w := 0; w < writers; w++ {
			go func() {
				for i := 0; i < each; i++ {
					pre := fmt.Sprintf("w%d-%d", w, i)
					ev := func(typ, s string) *store.EventRecord { return r9aEvent(run, typ, pre+"-"+s) }
					var p *store.RunWriteParams
					switch i % 4 {
					case 0: // the model's answer with its first call's start
						p = &store.RunWriteParams{Events: []*store.EventRecord{ev("model.response", "1"), ev("tool.prepared", "2")},
							Ledger: []store.LedgerWrite{
								{Entry: r9aEntry(run, pre+"-b", 1, store.LedgerPrepared), Event: ev("tool.prepared", "3")},
								{Entry: r9aEntry(run, pre+"-a", 0, store.LedgerStarted), Event: ev("tool.started", "4")}}}
					case 1: // an answer alone
						p = &store.RunWriteParams{Events: []*store.EventRecord{ev("model.response", "1")},
							Ledger: []store.LedgerWrite{
								{Entry: r9aEntry(run, pre+"-a", 0, store.LedgerPrepared), Event: ev("tool.prepared", "2")},
								{Entry: r9aEntry(run, pre+"-b", 1, store.LedgerPrepared), Event: ev("tool.prepared", "3")}}}
					case 2: // one record
						p = &store.RunWriteParams{Ledger: []store.LedgerWrite{{Entry: r9aEntry(run, pre+"-a", 0, store.LedgerStarted), Event: ev("tool.started", "1")}}}
					default: // plain events
						p = &store.RunWriteParams{Events: []*store.EventRecord{ev("x", "1"), ev("y", "2")}}
					}
					p.Tenant, p.RunID = store.DefaultTenant, run
					if _, err := st.RunWrite(ctx, p); err != nil {
						errc <- fmt.Errorf("%s: %w", pre, err)
						return
					}
				}
				errc <- nil
			}()
		}
		for w := 0; w < writers; w++ {
			if err := <-errc; err != nil {
				t.Error(err)
				return
			}
		}
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: run})
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]string{}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d (%s) has seq %d", i, e.ID, e.Seq)
			}
			k := e.ID[:len(e.ID)-2]
			if prev := last[k]; prev != "" && prev >= e.ID {
				t.Fatalf("event %s after %s", e.ID, prev)
			}
			last[k] = e.ID
		}
		want := writers * each / 4 * (4 + 3 + 1 + 2)
		if len(evs) != want {
			t.Fatalf("%d events, want %d", len(evs), want)
		}
		for w := 0; w < writers; w++ {
			for i := 0; i < each; i++ {
				pre := fmt.Sprintf("w%d-%d", w, i)
				states := map[int]string{0: "a:started@1 b:prepared@1", 1: "a:prepared@1 b:prepared@1", 2: "a:started@1"}[i%4]
				var got string
				for _, c := range []string{"a", "b"} {
					en, err := st.LedgerGet(ctx, &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: run, CallID: pre + "-" + c})
					if errors.Is(err, store.ErrNotFound) {
						continue
					} else if err != nil {
						t.Fatal(err)
					}
					if got != "" {
						got += " "
					}
					got += fmt.Sprintf("%s:%s@%d", c, en.State, en.Revision)
				}
				if got != states {
					t.Fatalf("%s: entries %q, want %q", pre, got, states)
				}
			}
		}
	}
}
