package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// A store written by the version before the run journal (main at
// 4fae6cd), testdata/before-journal: sqlite.db, and pg.sql (pg_dump
// --inserts of its schema, the schema name replaced by {{schema}}), made
// by mkfixture.go.txt. It holds a completed run ("done"), a run waiting
// for approval of a payment after a read ("wait"), a run whose payment's
// outcome is unknown ("unknown") and a session "s1" with one run. Opened
// by this version, the migrations take it forward in place: every run
// reads as before, the waiting runs resume and finish, and their
// transcript moves to the run's log at their first write.

// fixtureAgent is the fixture's agent, as mkfixture builds it; pays counts
// the payments made here.
func fixtureAgent(id string, approve bool, pays *atomic.Int64, turns ...scripted.Turn) *actoviq.AgentSpec {
	look := tool.Func(tool.Spec{Name: "look", Description: "Look", Effect: tool.Read},
		func(ctx context.Context, in struct{}) (string, error) { return "seen", nil })
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Pay", Effect: tool.SideEffect},
		func(ctx context.Context, in struct {
			To     string `json:"to"`
			Amount int    `json:"amount"`
		}) (string, error) {
			pays.Add(1)
			return "paid", nil
		})
	a := &actoviq.AgentSpec{ID: id, Model: "scripted", Provider: scripted.New(turns...), Tools: []tool.Tool{look, pay}}
	if approve {
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	}
	return a
}

func fixtureCall(id, name, args string) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

func TestStoreBeforeJournalSQLite(t *testing.T) {
	checkBeforeJournal(t, fixtureSQLite(t, "before-journal"))
}

func TestStoreBeforeJournalPG(t *testing.T) {
	checkBeforeJournal(t, fixturePG(t, "before-journal"))
}

func checkBeforeJournal(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	// Read as before.
	done, err := rt.Get(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != actoviq.StatusCompleted || len(done.Transcript) != 4 || done.Transcript[3].Text != "all done" ||
		len(done.Ledger) != 1 || done.Ledger[0].State != store.LedgerCommitted {
		t.Fatalf("old completed run reads as %s, %d items, ledger %+v", done.Status, len(done.Transcript), done.Ledger)
	}
	evs, err := st.EventList(ctx, &store.EventListParams{Tenant: rt.Tenant(), RunID: "done"})
	if err != nil || len(evs) < 5 || evs[0].Seq != 1 {
		t.Fatalf("old events: %d, %v", len(evs), err)
	}

	// The waiting payment: approve, resume, pay once.
	var pays atomic.Int64
	if err := rt.Decide(ctx, "wait", actoviq.Decision{CallID: "c2", Kind: actoviq.DecideApprove, By: "alice", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Resume(ctx, fixtureAgent("fx-approve", true, &pays,
		fixtureCall("c1", "look", `{}`), fixtureCall("c2", "pay", `{"to":"ada","amount":5}`), scripted.Turn{Text: "paid ada"}), "wait", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 1 {
		t.Fatalf("resume of the old waiting run: %+v, %v, %d payments", res, err, pays.Load())
	}
	wait, err := rt.Get(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range wait.Transcript {
		texts = append(texts, fmt.Sprintf("%s:%s", it.Type, it.Text))
	}
	if len(wait.Transcript) != 6 || wait.Transcript[0].Text != "pay ada" || wait.Transcript[5].Text != "paid ada" {
		t.Fatalf("resumed old run's transcript: %v", texts)
	}
	run, err := st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(run.Checkpoint, &head); err != nil {
		t.Fatal(err)
	}
	if _, ok := head["items"]; ok || len(run.Log) != 6 {
		t.Fatalf("after its first write the old run keeps %d log items and items in its checkpoint: %v", len(run.Log), ok)
	}

	// The payment of unknown outcome: settled by a person, never re-run.
	if err := rt.Decide(ctx, "unknown", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideCommitted, By: "bob",
		Reason: "the bank has it", Result: "paid bob"}); err != nil {
		t.Fatal(err)
	}
	res, err = rt.Resume(ctx, fixtureAgent("fx", false, &pays,
		fixtureCall("c1", "pay", `{"to":"bob","amount":7}`), scripted.Turn{Text: "settled"}), "unknown", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 1 {
		t.Fatalf("resume of the old unknown run: %+v, %v, %d payments", res, err, pays.Load())
	}

	// The session goes on from its old history.
	model := scripted.New(scripted.Turn{Text: "hi back"}, scripted.Turn{Text: "again"})
	a := fixtureAgent("fx", false, &pays)
	a.Provider = model
	res, err = rt.Run(ctx, a, &actoviq.Input{RunID: "sess-2", SessionID: "s1", Items: []item.Item{item.UserText("more")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("continuing the old session: %+v, %v", res, err)
	}
	s2, err := rt.Get(ctx, "sess-2")
	if err != nil || len(s2.Transcript) != 4 || s2.Transcript[0].Text != "hi" || s2.Transcript[1].Text != "hi back" {
		t.Fatalf("new run in the old session: %+v, %v", s2, err)
	}
}
