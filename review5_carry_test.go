package actoviq_test

// Review 5A: a lone call's committed write carried into the next call's
// first write (drive_carry.go). Every committed record reaches the store,
// whatever the next call does (runs, is skipped, asks for approval), and
// the carried record never waits across anything that is not CPU.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

func storedStates(t *testing.T, st store.Store, runID string) map[string]store.LedgerState {
	t.Helper()
	ens, err := st.LedgerList(context.Background(), &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.LedgerState{}
	for _, en := range ens {
		out[en.CallID] = en.State
	}
	return out
}

// A call committed and held for the next call's first write, followed by
// calls the runner refuses before they start (invalid arguments, an
// unknown tool: each committed as skipped at once), then a call that
// runs: every call is committed in the store when the run ends.
func TestReview5CarriedCommitSurvivesSkippedCalls(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		m := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
			call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":"two"}`), call("c3", "nope", `{}`),
			call("c4", "pay", `{"amount":4}`), call("c5", "pay", `{"amount":"five"}`)}},
			scripted.Turn{Text: "done"})
		rt := newRT(t, st, "A", time.Minute)
		res, err := rt.Run(ctx, agent(m, pay), &actoviq.Input{RunID: "cs", Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		if n := pay.count(); n != 2 {
			t.Fatalf("pay ran %d times, want 2", n)
		}
		got := storedStates(t, st, "cs")
		for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
			if got[id] != store.LedgerCommitted {
				t.Errorf("call %s is %q in the store after the run completed, want committed (all: %v)", id, got[id], got)
			}
		}
	})
}

// Then the next call needs approval: the held commit goes with (or
// before) its awaiting-approval write, so the interrupted run's ledger
// has the first call committed.
func TestReview5CarriedCommitBeforeAnApproval(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		look := &payTool{name: "look", effect: tool.IdempotentWrite}
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		m := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
			call("c1", "look", `{"amount":1}`), call("c2", "look", `{"amount":"x"}`), call("c3", "pay", `{"amount":3}`)}},
			scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{look, pay},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		rt := newRT(t, st, "A", time.Minute)
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "ca", Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		got := storedStates(t, st, "ca")
		if got["c1"] != store.LedgerCommitted || got["c2"] != store.LedgerCommitted || got["c3"] != store.LedgerAwaitingApproval {
			t.Fatalf("stored states %v, want c1, c2 committed and c3 awaiting approval", got)
		}
	})
}

// An agent's own approval policy (tool.Policy) may take any time (a
// policy service, a person): the call before is committed in the store
// while the policy judges the next call, not held across it.
func TestReview5CarriedCommitNeverWaitsForAPolicy(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		m := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
			call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`), call("c3", "pay", `{"amount":3}`)}},
			scripted.Turn{Text: "done"})
		seen := map[string][]store.LedgerState{} // each time the policy is asked
		policy := tool.PolicyFunc(func(_ context.Context, _ tool.Spec, args json.RawMessage) tool.Verdict {
			var a struct{ Amount int }
			_ = json.Unmarshal(args, &a)
			if a.Amount > 1 {
				prev := fmt.Sprintf("c%d", a.Amount-1)
				seen[prev] = append(seen[prev], storedStates(t, st, "cp")[prev])
			}
			return tool.Verdict{Permission: tool.Allow}
		})
		ag := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay},
			Approval: actoviq.ApprovalPolicy{Policy: policy, Version: "v1"}}
		rt := newRT(t, st, "A", time.Minute)
		res, err := rt.Run(ctx, ag, &actoviq.Input{RunID: "cp", Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		for _, id := range []string{"c1", "c2"} {
			for _, s := range seen[id] {
				if s == store.LedgerStarted {
					t.Errorf("while the policy judged the call after %s, %s was started in the store (its tool had returned): %v", id, id, seen[id])
				}
			}
		}
	})
}
