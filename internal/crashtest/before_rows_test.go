package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A store written by the version before a write's records shared one
// events row (main at f1a4fd6: one events row per event record),
// testdata/before-rows, made by its mkfixture.go.txt: "done", completed
// after one response of two reads (c1, c2); "wait", a read (c1, run) and a
// payment (c2) waiting for approval; "unknown", two payments, c1 committed
// and c2 of unknown outcome. Opened by this version, migration 0012 /
// 014 adds the columns in place: the old rows read as before, the runs
// resume (their next responses write rows of several records after the
// old rows) and nothing runs twice.

func TestStoreBeforeRowsSQLite(t *testing.T) {
	checkBeforeRows(t, fixtureSQLite(t, "before-rows"), nil)
}

func TestStoreBeforeRowsPG(t *testing.T) {
	st := fixturePG(t, "before-rows")
	checkBeforeRows(t, st, func(runID string) int {
		var n int
		if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM "`+st.Schema()+`".events
			WHERE tenant = 'default' AND run_id = $1 AND first_seq IS NOT NULL`, runID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

func twoCalls(a, b scripted.ToolCall) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{a, b}}
}

func toolCall(id, name, args string) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// eventSeqs returns the events of a run, checking that they are numbered
// 1, 2, ... without a gap, and that every page of two, from anywhere,
// gives the same events.
func eventSeqs(t *testing.T, st store.Store, runID string) []*store.EventRecord {
	t.Helper()
	ctx := context.Background()
	evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("%s: event %d numbered %d", runID, i, e.Seq)
		}
	}
	for after := range len(evs) {
		page, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: runID, AfterSeq: int64(after), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := evs[after:min(after+2, len(evs))]
		if len(page) != len(want) || page[0].ID != want[0].ID || page[len(page)-1].ID != want[len(want)-1].ID {
			t.Fatalf("%s: page after %d: %d events", runID, after, len(page))
		}
	}
	return evs
}

func ledgerStates(r *actoviq.RunInfo) string {
	var out []string
	for _, e := range r.Ledger {
		out = append(out, fmt.Sprintf("%s:%s", e.CallID, e.State))
	}
	return fmt.Sprint(out)
}

func checkBeforeRows(t *testing.T, st store.Store, multiRows func(runID string) int) {
	t.Helper()
	ctx := context.Background()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	// The old completed run reads as before.
	done, err := rt.Get(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != actoviq.StatusCompleted || len(done.Transcript) != 6 || done.Transcript[5].Text != "all done" ||
		ledgerStates(done) != "[c1:committed c2:committed]" {
		t.Fatalf("old completed run: %s, %d items, ledger %s", done.Status, len(done.Transcript), ledgerStates(done))
	}
	if evs := eventSeqs(t, st, "done"); len(evs) != 10 || evs[2].Type != actoviq.EvToolPrepared || evs[9].Type != actoviq.EvRunCompleted {
		t.Fatalf("old completed run's events: %d", len(evs))
	}

	// The waiting payment: approved, resumed; the model asks for two more
	// reads (a response of several records after the old rows).
	var pays atomic.Int64
	if err := rt.Decide(ctx, "wait", actoviq.Decision{CallID: "c2", Kind: actoviq.DecideApprove, By: "alice", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Resume(ctx, fixtureAgent("fx-approve", true, &pays, after(1,
		twoCalls(toolCall("c3", "look", `{}`), toolCall("c4", "look", `{}`)), scripted.Turn{Text: "paid ada"})...), "wait", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 1 {
		t.Fatalf("resume of the old waiting run: %+v, %v, %d payments", res, err, pays.Load())
	}
	wait, err := rt.Get(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	if got := ledgerStates(wait); got != "[c1:committed c2:committed c3:committed c4:committed]" {
		t.Fatalf("resumed old run's ledger: %s", got)
	}
	evs := eventSeqs(t, st, "wait")
	var types []string
	for _, e := range evs[8:] {
		types = append(types, e.Type)
	}
	if len(evs) < 16 || evs[7].Type != actoviq.EvRunInterrupted || !slices.Contains(types, actoviq.EvToolPrepared) ||
		evs[len(evs)-1].Type != actoviq.EvRunCompleted {
		t.Fatalf("resumed old run's events: %d, after the old ones %v", len(evs), types)
	}
	if multiRows != nil && multiRows("wait") < 1 {
		t.Fatalf("the resumed run's response with two calls wrote no row of several records")
	}

	// The payment of unknown outcome: settled by a person, never re-run.
	if err := rt.Decide(ctx, "unknown", actoviq.Decision{CallID: "c2", Kind: actoviq.DecideCommitted, By: "bob",
		Reason: "the bank has it", Result: "paid eve"}); err != nil {
		t.Fatal(err)
	}
	res, err = rt.Resume(ctx, fixtureAgent("fx", false, &pays, after(1, scripted.Turn{Text: "settled"})...), "unknown", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 1 {
		t.Fatalf("resume of the old unknown run: %+v, %v, %d payments", res, err, pays.Load())
	}
	unknown, err := rt.Get(ctx, "unknown")
	if err != nil || ledgerStates(unknown) != "[c1:committed c2:committed]" {
		t.Fatalf("settled old run: %v, %v", ledgerStates(unknown), err)
	}
	eventSeqs(t, st, "unknown")

	// A new run on the migrated store: three calls in one response.
	res, err = rt.Run(ctx, fixtureAgent("fx", false, &pays, scripted.Turn{ToolCalls: []scripted.ToolCall{
		toolCall("f1", "look", `{}`), toolCall("f2", "look", `{}`), toolCall("f3", "pay", `{"to":"joe","amount":1}`)}},
		scripted.Turn{Text: "done"}), &actoviq.Input{RunID: "fresh", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 2 {
		t.Fatalf("new run: %+v, %v, %d payments", res, err, pays.Load())
	}
	fresh, err := rt.Get(ctx, "fresh")
	if err != nil || ledgerStates(fresh) != "[f1:committed f2:committed f3:committed]" {
		t.Fatalf("new run's ledger: %s, %v", ledgerStates(fresh), err)
	}
	if evs := eventSeqs(t, st, "fresh"); evs[len(evs)-1].Type != actoviq.EvRunCompleted {
		t.Fatalf("new run's events end with %s", evs[len(evs)-1].Type)
	}
}
