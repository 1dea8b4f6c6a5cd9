package actoviq_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// In a batch [charge (needs approval), ship], ship used to run at once and
// the charge was rejected afterwards (docs/design.md#the-ledger: a call waits while any call
// before it is unsettled; the others stay prepared and run after the
// decision).
func TestBatchWaitsForApprovalOfEarlierCall(t *testing.T) {
	s := newSetup(t)
	charge := &payTool{name: "charge"}
	ship := &payTool{name: "ship", effect: tool.IdempotentWrite}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "charge", `{"amount":5}`), call("c2", "ship", `{"amount":1}`)}},
		scripted.Turn{Text: "done"})
	a := approvalAgent(p, charge, ship)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].CallID != "c1" {
		t.Fatalf("%+v", res)
	}
	if ship.count() != 0 {
		t.Fatal("ship ran before the charge was decided")
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Ledger[1].State != store.LedgerPrepared || info.Ledger[1].Attempt != 0 {
		t.Fatalf("ship entry %+v, want prepared and never started", info.Ledger[1])
	}
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReject, By: "bob", Reason: "no"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if charge.count() != 0 || ship.count() != 1 {
		t.Fatalf("charge %d ship %d", charge.count(), ship.count())
	}
}

// The same after a reconciliation on the first call of the batch.
func TestBatchWaitsForReconciliationOfEarlierCall(t *testing.T) {
	s := newSetup(t)
	charge := &payTool{name: "charge", fail: errUnknownOutcome}
	ship := &payTool{name: "ship"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "charge", `{"amount":5}`), call("c2", "ship", `{"amount":1}`)}},
		scripted.Turn{Text: "done"})
	a := agent(p, charge, ship)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("%+v", res)
	}
	if ship.count() != 0 {
		t.Fatal("ship ran while the charge's outcome was unknown")
	}
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideFailed, By: "bob", Message: "the charge did not happen"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || ship.count() != 1 || charge.count() != 1 {
		t.Fatalf("%+v %v charge %d ship %d", res, err, charge.count(), ship.count())
	}
}

// A read placed after a write in the same batch used to overtake it and
// see the old value (docs/design.md#the-ledger: a read never overtakes an earlier write).
func TestReadDoesNotOvertakeEarlierWrite(t *testing.T) {
	s := newSetup(t)
	var mu sync.Mutex
	value := "old"
	set := tool.Func(tool.Spec{Name: "set", Effect: tool.IdempotentWrite}, func(_ context.Context, in struct{ V string }) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		value = in.V
		return "set", nil
	})
	get := tool.Func(tool.Spec{Name: "get", Effect: tool.Read}, func(context.Context, struct{}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return value, nil
	})
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c0", "get", `{}`), call("c1", "set", `{"V":"new"}`),
		call("c2", "get", `{}`), call("c3", "get", `{}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, set, get), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	results := toolResults(t, info)
	var got []string
	for _, id := range []string{"c0", "c2", "c3"} {
		got = append(got, results[id].Content)
	}
	if strings.Join(got, ",") != "old,new,new" {
		t.Fatalf("reads saw %v, want the value before and after the write", got)
	}
}
