package actoviq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// countRunGets counts the runs read (RunGet), the cost of loading a run.
type countRunGets struct {
	store.Store
	n atomic.Int64
}

func (c *countRunGets) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	c.n.Add(1)
	return c.Store.RunGet(ctx, p)
}

// The approval escalation costs what is due, not what waits: after a
// first pass, a worker's poll reads no run while no wait is due, then the
// runs whose wait is due and no other. 50 runs wait since T0 and 2 since
// T0+20m (escalate_after 30m). On main every poll loaded all 52 waiting
// runs.
func TestEscalationPollReadsWhatIsDue(t *testing.T) {
	s := newApprovalsSetup(t)
	const early, late = 50, 2
	var turns []scripted.Turn
	for range early + late {
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":42}`)}}, scripted.Turn{Text: "paid"})
	}
	s.agent = agent(scripted.New(turns...), s.pay)
	s.agent.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	start := func(id string) {
		t.Helper()
		res, err := s.rt.Run(s.ctx, s.agent, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("pay 42")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("run %s: %v %+v", id, err, res)
		}
	}
	for i := range early {
		start(fmt.Sprintf("e%02d", i))
	}
	s.clock.Advance(20 * time.Minute)
	for i := range late {
		start(fmt.Sprintf("l%02d", i))
	}
	pol, err := approvals.Parse([]byte(testApprovers))
	if err != nil {
		t.Fatal(err)
	}
	counted := &countRunGets{Store: s.st}
	worker, err := actoviq.New(counted, &actoviq.Config{Clock: s.clock.Now, LeaseTTL: time.Minute, Approvers: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Close() })
	poll := func(name string, wantRead int64, wantEscalated int) {
		t.Helper()
		counted.n.Store(0)
		got, err := worker.EscalateApprovals(s.ctx)
		if err != nil || len(got) != wantEscalated {
			t.Fatalf("%s: escalated %d, %v; want %d", name, len(got), err, wantEscalated)
		}
		if n := counted.n.Load(); n != wantRead {
			t.Fatalf("%s: read %d runs, want %d", name, n, wantRead)
		}
	}
	poll("first poll (every waiting run once, for their timers)", early+late, 0)
	poll("a poll with nothing due", 0, 0)
	s.clock.Advance(11 * time.Minute) // the early waits are 31 minutes old
	counted.n.Store(0)
	if got, err := worker.EscalateApprovals(s.ctx); err != nil || len(got) != early {
		t.Fatalf("escalated %d, %v; want the %d early waits", len(got), err, early)
	}
	// Each due run is read to escalate it (a load, its claim, a read
	// again), never a run not due.
	if n := counted.n.Load(); n < early || n > 3*early {
		t.Fatalf("the poll with %d due read %d runs", early, n)
	}
	poll("a poll after the escalations", 0, 0)
	// One late run is decided and resumed before its wait is due: its
	// timer finds it completed and goes.
	for _, by := range []string{"alice", "bob"} {
		if err := s.rt.Decide(s.ctx, "l00", s.approve(by)); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.rt.Resume(s.ctx, s.agent, "l00", nil); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	s.clock.Advance(20 * time.Minute) // the late waits are 31 minutes old
	counted.n.Store(0)
	if got, err := worker.EscalateApprovals(s.ctx); err != nil || len(got) != late-1 || got[0].RunID != "l01" {
		t.Fatalf("escalated %+v, %v; want l01's wait", got, err)
	}
	if n := counted.n.Load(); n < late || n > 3*late {
		t.Fatalf("the poll with %d due read %d runs", late, n)
	}
	poll("a poll after every escalation", 0, 0)
	due, err := s.st.ClaimList(s.ctx, &store.ClaimListParams{Tenant: store.DefaultTenant, HolderPrefix: store.EscalationHolderPrefix,
		ExpiredBy: s.clock.Now().Add(1000 * time.Hour), Limit: 1000})
	if err != nil || len(due) != 0 {
		t.Fatalf("escalation timers left: %d %v", len(due), err)
	}
}
