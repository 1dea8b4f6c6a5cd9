package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// lostAnswer makes the merged write (the model's answer with c1's start)
// end with an error that says nothing of its outcome (a connection lost
// during COMMIT): commit first says whether the store got it.
type lostAnswer struct {
	store.Store
	commit bool
	mu     sync.Mutex
	done   bool
}

func (f *lostAnswer) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	f.mu.Lock()
	hit := !f.done && p.Run != nil && ledgerWrites(p, "c1", store.LedgerStarted)
	f.done = f.done || hit
	f.mu.Unlock()
	if !hit {
		return f.Store.RunWrite(ctx, p)
	}
	if f.commit {
		if _, err := f.Store.RunWrite(ctx, p); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("review9a: connection reset by peer during COMMIT")
}

// A merged write whose outcome is unknown is read back (drive_fold.go):
// committed or not, the run goes on, each call runs once, and the events
// are numbered 1, 2, ... with none twice.
func TestReview9aFoldedWriteOutcomeUnknown(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, commit := range []bool{true, false} {
			name := "absent"
			if commit {
				name = "committed"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				pay := &payTool{name: "pay"}
				prov := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`)}},
					scripted.Turn{Text: "done"})
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: prov}
				rt := newRT(t, &lostAnswer{Store: st, commit: commit}, "A", time.Minute)
				id := "r9a-lost-" + name
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 2 {
					t.Fatalf("Run: %+v %v, tool ran %d times", res, err, pay.count())
				}
				evs := callEvents(t, st, id)
				seen := map[string]bool{}
				for _, e := range evs {
					if seen[e] && e != actoviq.EvModelResponse {
						t.Fatalf("event %q twice: %q", e, evs)
					}
					seen[e] = true
				}
				info, err := rt.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if len(info.Ledger) != 2 || len(toolResults(t, info)) != 2 {
					t.Fatalf("ledger %+v", info.Ledger)
				}
				if len(evs) != 9 {
					t.Fatalf("events %q", evs)
				}
			})
		}
	})
}

// blockFolded holds the merged write (the model's answer with c1's
// start) until release is closed, after telling entered.
type blockFolded struct {
	store.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (f *blockFolded) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	hit := false
	if p.Run != nil && ledgerWrites(p, "c1", store.LedgerStarted) {
		f.once.Do(func() { hit = true })
	}
	if hit {
		close(f.entered)
		<-f.release
	}
	return f.Store.RunWrite(ctx, p)
}

// Close (or a cancellation) while the merged write is on its way: the
// write completes (it records what the drive decided), c1's tool does not
// run in the closing drive (the runner refuses a cancelled context and c1
// goes back to prepared, recorded not started), and a resume elsewhere
// runs it once.
func TestReview9aCloseDuringFoldedWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, how := range []string{"close", "cancel"} {
			t.Run(how, func(t *testing.T) {
				ctx := context.Background()
				pay := &payTool{name: "pay"}
				turns := func() *scripted.Provider {
					return scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`)}},
						scripted.Turn{Text: "done"})
				}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: turns()}
				bf := &blockFolded{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
				rt := newRT(t, bf, "A", 300*time.Millisecond)
				id := "r9a-close-" + how
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := rt.Run(rctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
					done <- err
				}()
				<-bf.entered
				closed := make(chan struct{})
				if how == "close" {
					go func() { rt.Close(); close(closed) }()
				} else {
					cancel()
					close(closed)
				}
				time.Sleep(50 * time.Millisecond)
				close(bf.release)
				<-done
				<-closed
				if pay.count() != 0 {
					t.Fatalf("the tool ran %d times in the stopped drive", pay.count())
				}
				rt.Close()
				time.Sleep(350 * time.Millisecond)
				rt2 := newRT(t, st, "B", time.Minute)
				info, err := rt2.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, en := range info.Ledger {
					if en.State != store.LedgerPrepared || en.Attempt != 0 {
						t.Fatalf("before resume: %s %s attempt %d", en.CallID, en.State, en.Attempt)
					}
				}
				if how == "cancel" {
					// A cancelled run ends cancelled: nothing more runs.
					if info.Status != actoviq.StatusCancelled {
						t.Fatalf("cancelled run: %s", info.Status)
					}
					return
				}
				a.Provider = turns()
				res, err := rt2.Resume(ctx, a, id, nil)
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 2 {
					t.Fatalf("resume: %+v %v, tool ran %d times", res, err, pay.count())
				}
				callEvents(t, st, id)
			})
		}
	})
}

// The events a sink gets for a folded write, also one read back after an
// unknown outcome, are the stored ones: same ids, same numbers, in order,
// each once.
func TestReview9aFoldedSinkEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, mode := range []string{"plain", "committed", "absent"} {
			t.Run(mode, func(t *testing.T) {
				ctx := context.Background()
				pay := &payTool{name: "pay"}
				prov := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`),
					call("c3", "pay", `{"amount":3}`)}}, scripted.Turn{Text: "done"})
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: prov}
				var mu sync.Mutex
				var got []string
				sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
					if ev.Seq > 0 {
						mu.Lock()
						got = append(got, fmt.Sprintf("%d %s %s", ev.Seq, ev.ID, ev.Type))
						mu.Unlock()
					}
				})
				var s store.Store = st
				if mode != "plain" {
					s = &lostAnswer{Store: st, commit: mode == "committed"}
				}
				rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: time.Minute, Holder: "A", Sinks: []actoviq.EventSink{sink}})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				id := "r9a-sink-" + mode
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 3 {
					t.Fatalf("Run: %+v %v, tool ran %d times", res, err, pay.count())
				}
				evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: id})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, ev := range evs {
					want = append(want, fmt.Sprintf("%d %s %s", ev.Seq, ev.ID, ev.Type))
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(got, want) {
					t.Fatalf("sink got\n%s\nstored\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	})
}

// A first call with a secret in its arguments folds (its arguments are in
// memory): the tool gets them as the model sent them, the store holds
// them redacted, in the entry created started and in every event.
func TestReview9aFoldedSecretArgs(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		prov := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1,"api_key":"hunter2-r9a"}`),
			call("c2", "pay", `{"amount":2}`)}}, scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: prov}
		rec := &shapeRecorder{Store: st}
		rt := newRT(t, rec, "A", time.Minute)
		id := "r9a-secret"
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		pay.mu.Lock()
		seen := slices.Clone(pay.calls)
		pay.mu.Unlock()
		if len(seen) != 2 || !strings.Contains(seen[0], "hunter2-r9a") {
			t.Fatalf("the tool got %q", seen)
		}
		if sh := rec.all(); len(sh) == 0 || len(sh[0].records) == 0 || sh[0].records[len(sh[0].records)-1] != "c1:started@0" {
			t.Fatalf("not folded: %+v", sh)
		}
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), "hunter2") {
				t.Fatalf("event %s holds the secret: %s", ev.Type, ev.Data)
			}
		}
		for _, c := range []string{"c1", "c2"} {
			en, err := st.LedgerGet(ctx, &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: c})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(en.Args), "hunter2") || en.State != store.LedgerCommitted {
				t.Fatalf("%s: %s %s", c, en.State, en.Args)
			}
		}
		info, err := rt.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(info)
		if strings.Contains(string(b), "hunter2") {
			t.Fatalf("the run's info holds the secret")
		}
	})
}

// budgetAfterCommit commits the merged write and answers as if the
// write's budget ran out (the drive stops; the store holds c1 started and
// c2 prepared, as after a crash right after the write).
type budgetAfterCommit struct {
	store.Store
	once sync.Once
}

func (f *budgetAfterCommit) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	res, err := f.Store.RunWrite(ctx, p)
	hit := false
	if err == nil && p.Run != nil && ledgerWrites(p, "c1", store.LedgerStarted) {
		f.once.Do(func() { hit = true })
	}
	if hit {
		return nil, context.DeadlineExceeded
	}
	return res, err
}

// A run stopped right after the merged write, taken over by a new agent
// version (one more tool): c1, a started side effect created started,
// stops the run for reconciliation and is never run again; c2 stays
// prepared; nothing runs. Decided committed, the run goes on: c2 runs
// once, c1 never.
func TestReview9aAgentChangeAfterFoldedWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		turns := func() *scripted.Provider {
			return scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`)}},
				scripted.Turn{Text: "done"})
		}
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: turns()}
		rt := newRT(t, &budgetAfterCommit{Store: st}, "A", 200*time.Millisecond)
		id := "r9a-agentchange"
		if _, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items}); err == nil || pay.count() != 0 {
			t.Fatalf("Run: %v, tool ran %d times", err, pay.count())
		}
		rt.Close()
		time.Sleep(250 * time.Millisecond)
		other := &payTool{name: "refund"}
		b := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay, other}, Provider: turns()}
		rt2 := newRT(t, st, "B", time.Minute)
		res, err := rt2.Resume(ctx, b, id, &actoviq.ResumeOptions{AcceptAgentChange: &actoviq.AcceptAgentChange{By: "ops", Note: "r9a"}})
		if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].CallID != "c1" ||
			res.Interruptions[0].Kind != actoviq.InterruptReconciliation || pay.count() != 0 || other.count() != 0 {
			t.Fatalf("resume: %+v %v, tool ran %d times", res, err, pay.count())
		}
		info, err := rt2.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]store.LedgerState{}
		for _, en := range info.Ledger {
			got[en.CallID] = store.LedgerState(en.State)
		}
		if got["c1"] != store.LedgerStarted || got["c2"] != store.LedgerPrepared {
			t.Fatalf("ledger %+v", got)
		}
		if err := rt2.Decide(ctx, id, actoviq.Decision{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops", Result: "paid 1 (checked)"}); err != nil {
			t.Fatal(err)
		}
		b.Provider = turns() // the script answers by the run's turn: turn 2 is "done"
		res, err = rt2.Resume(ctx, b, id, nil)
		if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 || !strings.Contains(pay.calls[0], `"amount":2`) {
			t.Fatalf("after the decision: %+v %v, tool calls %q", res, err, pay.calls)
		}
		callEvents(t, st, id)
	})
}
