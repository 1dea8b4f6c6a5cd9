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
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// writeShape is what one RunWrite carried: the run update's status (""
// without one), and each ledger record as "call:state@expected".
type writeShape struct {
	run     store.RunStatus
	records []string
	events  []string // plain events' types
}

// shapeRecorder records the shape of every RunWrite of a run.
type shapeRecorder struct {
	store.Store
	mu     sync.Mutex
	shapes []writeShape
}

func (r *shapeRecorder) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	var sh writeShape
	if p.Run != nil {
		sh.run = p.Run.Status
	}
	for _, w := range p.Ledger {
		sh.records = append(sh.records, fmt.Sprintf("%s:%s@%d", w.Entry.CallID, w.Entry.State, w.ExpectedRevision))
	}
	for _, ev := range p.Events {
		sh.events = append(sh.events, ev.Type)
	}
	res, err := r.Store.RunWrite(ctx, p)
	if err == nil {
		r.mu.Lock()
		r.shapes = append(r.shapes, sh)
		r.mu.Unlock()
	}
	return res, err
}

func (r *shapeRecorder) all() []writeShape {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.shapes)
}

// callEvents lists a run's stored events from its first model.response
// on as "type" or "type call", checking that they are numbered 1, 2, ...
func callEvents(t *testing.T, st store.Store, runID string) []string {
	t.Helper()
	evs, err := st.EventList(context.Background(), &store.EventListParams{Tenant: store.DefaultTenant, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if len(out) == 0 && ev.Type != actoviq.EvModelResponse {
			continue
		}
		var d struct {
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		if d.CallID != "" {
			out = append(out, ev.Type+" "+d.CallID)
		} else {
			out = append(out, ev.Type)
		}
	}
	return out
}

// The model's response and its first call's started record are one store
// write (drive_fold.go): a turn of n side-effect calls writes n+1 times
// (response with c0 started, then each later call's started write
// carrying the committed record before it, then the last committed), and
// the run's end once more. The events are the ones, in the order and
// numbering, the separate writes made: model.response, every call's
// tool.prepared, then c0's tool.started. On main the turn wrote n+2 times.
func TestFoldResponseWithFirstStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, n := range []int{1, 10} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				ctx := context.Background()
				rec := &shapeRecorder{Store: st}
				pay := &payTool{name: "pay"}
				var sunk []string
				var sinkMu sync.Mutex
				sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
					if ev.Seq == 0 {
						return // ephemeral
					}
					sinkMu.Lock()
					sunk = append(sunk, ev.Type)
					sinkMu.Unlock()
				})
				rt, err := actoviq.New(rec, &actoviq.Config{Holder: "A", Sinks: []actoviq.EventSink{sink}})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay},
					Provider: scripted.New(scripted.Turn{ToolCalls: calls(n, "pay")}, scripted.Turn{Text: "done"})}
				id := fmt.Sprintf("f%d", n)
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != n {
					t.Fatalf("Run: %+v %v, %d payments", res, err, pay.count())
				}
				shapes := rec.all()
				if len(shapes) != n+2 {
					t.Fatalf("%d writes, want %d: %+v", len(shapes), n+2, shapes)
				}
				// The first: the response (run update, its events) with c0
				// created started, last of the records.
				first := shapes[0]
				want := []string{}
				for i := 1; i < n; i++ {
					want = append(want, fmt.Sprintf("c%d:prepared@0", i))
				}
				want = append(want, "c0:started@0")
				if first.run != store.RunRunning || !slices.Equal(first.records, want) ||
					!slices.Equal(first.events, []string{actoviq.EvModelResponse, actoviq.EvToolPrepared}) {
					t.Fatalf("first write %+v, want a running run update, records %v, events model.response, tool.prepared", first, want)
				}
				wantEvents := []string{actoviq.EvModelResponse}
				for i := range n {
					wantEvents = append(wantEvents, fmt.Sprintf("%s c%d", actoviq.EvToolPrepared, i))
				}
				for i := range n {
					wantEvents = append(wantEvents, fmt.Sprintf("%s c%d", actoviq.EvToolStarted, i), fmt.Sprintf("%s c%d", actoviq.EvToolCommitted, i))
				}
				wantEvents = append(wantEvents, actoviq.EvModelResponse, actoviq.EvRunCompleted)
				if got := callEvents(t, st, id); !slices.Equal(got, wantEvents) {
					t.Fatalf("events\n%v\nwant\n%v", got, wantEvents)
				}
				// Sinks got every stored event, in order.
				evs, _ := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: id})
				var stored []string
				for _, ev := range evs {
					stored = append(stored, ev.Type)
				}
				sinkMu.Lock()
				defer sinkMu.Unlock()
				if !slices.Equal(sunk, stored) {
					t.Fatalf("sinks got %v, stored %v", sunk, stored)
				}
				info, err := rt.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, en := range info.Ledger {
					if en.State != store.LedgerCommitted || en.Attempt != 1 {
						t.Fatalf("entry %+v", en)
					}
				}
				if r := toolResults(t, info); len(r) != n {
					t.Fatalf("%d results in the transcript, want %d", len(r), n)
				}
			})
		}
	})
}

// When something may come between the response and its first call's
// start, the response is written alone, as before: a call that needs
// approval, an agent with an approval policy of its own, a first call of
// an unknown tool or with malformed arguments, two reads that run in
// parallel.
func TestFoldNotWhenTheFirstCallWaits(t *testing.T) {
	allow := tool.PolicyFunc(func(context.Context, tool.Spec, json.RawMessage) tool.Verdict {
		return tool.Verdict{Permission: tool.Allow}
	})
	cases := []struct {
		name   string
		calls  []scripted.ToolCall
		tools  []toolT
		appr   actoviq.ApprovalPolicy
		status actoviq.Status
	}{
		{"approval", []scripted.ToolCall{call("c0", "pay", `{"amount":1}`)}, []toolT{&payTool{name: "pay"}},
			actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}, actoviq.StatusInterrupted},
		{"policy", []scripted.ToolCall{call("c0", "pay", `{"amount":1}`)}, []toolT{&payTool{name: "pay"}},
			actoviq.ApprovalPolicy{Policy: allow, Version: "v1"}, actoviq.StatusCompleted},
		{"unknown-tool", []scripted.ToolCall{call("c0", "nope", `{}`), call("c1", "pay", `{"amount":1}`)}, []toolT{&payTool{name: "pay"}},
			actoviq.ApprovalPolicy{}, actoviq.StatusCompleted},
		{"malformed", []scripted.ToolCall{call("c0", "pay", `[1]`), call("c1", "pay", `{"amount":1}`)}, []toolT{&payTool{name: "pay"}},
			actoviq.ApprovalPolicy{}, actoviq.StatusCompleted},
		{"invalid-args", []scripted.ToolCall{call("c0", "pay", `{"amount":"x"}`), call("c1", "pay", `{"amount":1}`)}, []toolT{&payTool{name: "pay"}},
			actoviq.ApprovalPolicy{}, actoviq.StatusCompleted},
		{"parallel-reads", []scripted.ToolCall{call("c0", "look", `{"amount":1}`), call("c1", "look", `{"amount":2}`)},
			[]toolT{&payTool{name: "look", effect: tool.Read}}, actoviq.ApprovalPolicy{}, actoviq.StatusCompleted},
	}
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				rec := &shapeRecorder{Store: st}
				rt := newRT(t, rec, "A", time.Minute)
				a := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: c.tools, Approval: c.appr,
					Provider: scripted.New(scripted.Turn{ToolCalls: c.calls}, scripted.Turn{Text: "done"})}
				res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "n-" + c.name, Items: input("go").Items})
				if err != nil || res.Status != c.status {
					t.Fatalf("Run: %+v %v, want %s", res, err, c.status)
				}
				for _, sh := range rec.all() {
					if sh.run == "" {
						continue
					}
					for _, r := range sh.records {
						_, state, _ := strings.Cut(r, ":")
						state, _, _ = strings.Cut(state, "@")
						if state == string(store.LedgerStarted) || state == string(store.LedgerAwaitingApproval) {
							t.Fatalf("a run write carried %s: %+v", r, sh)
						}
					}
				}
			})
		}
	})
}

// failFolded fails the write that carries the model's response with its
// first call's start, with err, once.
type failFolded struct {
	store.Store
	err  error
	mu   sync.Mutex
	done bool
}

func (f *failFolded) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	f.mu.Lock()
	hit := !f.done && p.Run != nil && ledgerWrites(p, "c1", store.LedgerStarted)
	f.done = f.done || hit
	f.mu.Unlock()
	if hit {
		return nil, f.err
	}
	return f.Store.RunWrite(ctx, p)
}

// The write of the response with its first call's start fails for good
// (fenced out, a revision conflict, a busy store past the budget is in
// TestReview7BusyStartedWrite): the drive stops with the store's error,
// no tool ran, and the store holds the run as if the model had not
// answered (no call, no response in the transcript). A resume asks the
// model again and runs the call it answers, once.
func TestFoldedWriteFails(t *testing.T) {
	errs := map[string]error{
		"fenced":   &store.FencedError{Key: "run:x", Holder: "A", Epoch: 1, CurrentHolder: "B", CurrentEpoch: 2},
		"conflict": &store.ConflictError{Kind: "run", ID: "x", Expected: 2, Actual: 3},
	}
	eachBackend(t, func(t *testing.T, st store.Store) {
		for name, werr := range errs {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				pay := &payTool{name: "pay"}
				turns := func() *scripted.Provider {
					return scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
				}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: []toolT{pay}, Provider: turns()}
				rt := newRT(t, &failFolded{Store: st, err: werr}, "A", 200*time.Millisecond)
				id := "ff-" + name
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if !errors.Is(err, werr) || res != nil || pay.count() != 0 {
					t.Fatalf("Run: %+v %v (want the store's error), tool ran %d times", res, err, pay.count())
				}
				info, err := rt.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if len(info.Ledger) != 0 || len(info.Transcript) != 1 || info.Transcript[0].Type != item.TypeText {
					t.Fatalf("after the failed write: ledger %+v, transcript %+v", info.Ledger, info.Transcript)
				}
				rt.Close()
				time.Sleep(250 * time.Millisecond) // the claim of the drive that stopped
				a.Provider = turns()
				res, err = newRT(t, st, "B", time.Minute).Resume(ctx, a, id, nil)
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
					t.Fatalf("resume: %+v %v, tool ran %d times", res, err, pay.count())
				}
			})
		}
	})
}
