package actoviq_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// review25Setup: a run waiting for the approval of a side effect, under
// the given Authorizer.
func review25Setup(t *testing.T, auth approvals.Authorizer) (*actoviq.Runtime, *actoviq.AgentSpec, *payTool) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), &storesqlite.Config{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := actoviq.New(st, &actoviq.Config{Clock: clock.Now, LeaseTTL: time.Minute, Approvers: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	pay := &payTool{name: "pay", effect: tool.SideEffect}
	ag := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":42}`)}}, scripted.Turn{Text: "paid"}), pay)
	ag.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	res, err := rt.Run(context.Background(), ag, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("pay 42")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	return rt, ag, pay
}

// anyoneTwice is a Go Authorizer (an identity provider's hook) that lets
// anyone decide and asks for two approvers: the engine, not each
// Authorizer, must keep the two people distinct.
type anyoneTwice struct{}

func (anyoneTwice) Authorize(context.Context, *approvals.Request) error { return nil }
func (anyoneTwice) Require(context.Context, *approvals.Call) approvals.Requirement {
	return approvals.Requirement{Rule: "two", Approvers: 2}
}
func (anyoneTwice) Version() string { return "hook-1" }

// The same person cannot be the two approvers of a two-person rule by
// writing their name with another case or with spaces, nor through an
// Authorizer that does not itself check distinctness.
func TestReview25TwoApproversAreDistinctPeople(t *testing.T) {
	pol, err := approvals.Parse([]byte(`{"version":"v","rules":[{"name":"two","approve":["*"],"reject":["*"],"settle":["*"],"approvers":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth approvals.Authorizer
		by   []string
	}{
		{"policy case", pol, []string{"alice", "Alice"}},
		{"policy spaces", pol, []string{"alice", " alice "}},
		{"hook same name", anyoneTwice{}, []string{"alice", "alice"}},
		{"hook case", anyoneTwice{}, []string{"Bob", "BOB\t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, ag, pay := review25Setup(t, tc.auth)
			ctx := context.Background()
			if err := rt.Decide(ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: tc.by[0]}); err != nil {
				t.Fatal(err)
			}
			err := rt.Decide(ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: tc.by[1]})
			if !errors.Is(err, approvals.ErrRefused) {
				t.Errorf("second approval by %q after %q: %v (want refused)", tc.by[1], tc.by[0], err)
			}
			res, err := rt.Resume(ctx, ag, "r1", nil)
			if err != nil || res.Status != actoviq.StatusInterrupted || pay.count() != 0 {
				t.Fatalf("one person approved twice and the call ran: %v %+v, %d payments", err, res, pay.count())
			}
			info, err := rt.Get(ctx, "r1")
			if err != nil || info.Ledger[0].State != store.LedgerAwaitingApproval {
				t.Fatalf("entry: %v %+v", err, info.Ledger)
			}
		})
	}
}

// A name of only spaces is nobody: no decision is recorded under it.
func TestReview25BlankNameDecidesNothing(t *testing.T) {
	rt, _, _ := review25Setup(t, nil)
	err := rt.Decide(context.Background(), "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: " \t"})
	if !errors.Is(err, actoviq.ErrDecision) {
		t.Fatalf("approval by a blank name: %v", err)
	}
}
