package actoviq_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// inboxView is what a live inbox shows of Inbox's first page, ages left out.
func inboxView(t *testing.T, rt *actoviq.Runtime) string {
	t.Helper()
	page, err := rt.Inbox(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		ID, Kind string
		Open     []string
	}
	var out struct {
		Items  []item
		Totals map[string]int64
	}
	for _, r := range page.Runs {
		it := item{ID: r.Run.ID, Kind: r.Kind}
		for _, in := range r.Interruptions {
			it.Open = append(it.Open, in.CallID+"/"+string(in.Kind))
		}
		out.Items = append(out.Items, it)
	}
	out.Totals = page.Totals
	b, _ := json.Marshal(&out)
	return string(b)
}

// A Decide that approves the first call of an interrupted run changes
// what the inbox shows (the open question is gone) without writing the
// run's row: the stamp a live inbox polls must move all the same, while
// another process keeps a claim of the tenant live. On main it stayed
// equal on all three stores (the Decide's claim taken and released left
// every expiry and count as it was), and the console's stream showed the
// decided question for up to 30 more ticks.
func TestReview7StampFollowsDecide(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		ws, ok := st.(store.WaitingStamper)
		if !ok {
			t.Skip("no stamp")
		}
		pay := &payTool{name: "pay"}
		m := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`)}},
			scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		rt := newRT(t, st, "A", time.Minute)
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("%+v %v", res, err)
		}
		// Another process drives another run: its claim is live, renewed.
		other := &store.Run{Tenant: store.DefaultTenant, ID: "busy", AgentID: "x", AgentDigest: "d", Status: store.RunRunning,
			Checkpoint: json.RawMessage(`{}`)}
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: other, Holder: "otherhost:1:1", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		s1, err := ws.WaitingStamp(ctx, store.DefaultTenant, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		v1 := inboxView(t, rt)
		if err := rt.Decide(ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}); err != nil {
			t.Fatal(err)
		}
		s2, err := ws.WaitingStamp(ctx, store.DefaultTenant, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		v2 := inboxView(t, rt)
		if v1 == v2 {
			t.Fatalf("the Decide changed nothing the inbox shows: %s", v1)
		}
		if s1 == s2 {
			t.Fatalf("the inbox changed (%s -> %s) but the stamp did not: %s", v1, v2, s1)
		}
	})
}
