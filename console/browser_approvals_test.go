package console_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
)

const browserPolicy = `{"version": "ap-browser", "groups": {"finance": ["alice", "bob"], "oncall": ["carol"]},
  "rules": [{"name": "payments", "tools": ["pay"], "approve": ["group:finance"], "reject": ["group:finance"],
             "settle": ["group:finance"], "approvers": 2, "escalate_after": "1ms", "escalate_to": ["group:oncall"]}]}`

// The approvals policy in the browser: the inbox shows the escalated
// approval and its progress; a person the policy does not name is refused
// with why; two distinct approvers, the page saying who approved and who is
// still needed, Resume waiting for the second; the audit trail names both.
func TestBrowserApprovalsPolicy(t *testing.T) {
	pol, err := approvals.Parse([]byte(browserPolicy))
	if err != nil {
		t.Fatal(err)
	}
	f := newBrowserFixtureWith(t, &actoviq.Config{Approvers: pol}, func(c *console.Config) { c.EscalateEvery = 50 * time.Millisecond })
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	agent := browserAgent("payer", bank, true)
	f.agents["payer"] = agent
	if res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-60", Items: []item.Item{item.UserText("pay invoice INV-60")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}

	f.login("carol")
	// The console's escalation loop marks the wait escalated (the policy
	// allows 1 ms); the inbox shows it with what is to be approved.
	f.waitText("#inbox .kind-approval", "escalated")
	f.waitText("#inbox .kind-approval", "0 of 2 approvers")
	f.waitText("#inbox .kind-approval .summary", "to: ada · amount: 42")
	f.shot("approvals-inbox-escalated.png")
	evs, err := f.rt.Events(context.Background(), "inv-60", nil)
	if err != nil {
		t.Fatal(err)
	}
	escalated := 0
	for _, ev := range evs {
		if ev.Type == actoviq.EvApprovalEscalated {
			escalated++
		}
	}
	if escalated != 1 {
		t.Fatalf("%d escalation events, want 1", escalated)
	}

	approve := func(note string) {
		f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-60"), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
		f.waitText("#call-call_pay", "approval")
		f.run(
			chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="Approve"]`)),
			chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="approve"] input[name="note"]`), note),
			chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type="submit"]`)),
		)
	}
	// carol is on call, not in finance: refused, with why.
	approve("looks fine")
	f.waitText("#call-call_pay .decide-result", "Not recorded: carol may not approve call call_pay of pay")
	f.waitText("#call-call_pay .decide-result", "the rule lets group:finance approve")
	f.shot("approvals-refused.png")
	if info, _ := f.rt.Get(context.Background(), "inv-60"); info.Ledger[0].Approval == nil || info.Ledger[0].Approval.Kind != "escalated" {
		t.Fatalf("the refusal changed the record: %+v", info.Ledger[0].Approval)
	}

	f.login("alice")
	approve("invoice INV-60 checked")
	f.waitText("#decided", "Recorded approve for call call_pay as alice")
	f.waitText("#call-call_pay .approvers", "1 of 2 distinct approvers: approved by alice. Still needed: 1 more from group:finance.")
	if !f.evalBool(`document.getElementById("resume").disabled`) {
		t.Error("Resume is enabled while the second approval is missing")
	}
	f.shot("approvals-one-of-two.png")
	// alice cannot be the second approver.
	approve("again")
	f.waitText("#call-call_pay .decide-result", "alice already approved this call")

	f.login("bob")
	approve("second pair of eyes")
	f.waitText("#decided", "Recorded approve for call call_pay as bob")
	if f.evalBool(`document.getElementById("resume").disabled`) {
		t.Error("Resume stays disabled after the second approval")
	}
	f.run(chromedp.Click(chromedp.ID("resume")))
	f.waitText("#run-status", "completed")
	f.waitText(".audit", "bob")
	f.shot("approvals-completed.png")
	if n := bank.payments(t); n != 1 {
		t.Fatalf("%d payments", n)
	}
	a := mustGet(t, f.rt, "inv-60").Ledger[0].Approval
	if len(a.Approvers) != 2 || a.Approvers[0].By != "alice" || a.Approvers[1].By != "bob" || a.EscalatedAt.IsZero() {
		t.Fatalf("record %+v", a)
	}
	// What each saw: the digest the page rendered, and when the page was shown.
	for _, s := range a.Approvers {
		if s.Seen == nil || s.Seen.Digest != actoviq.ArgsRenderingDigest(s.Seen.Args) || s.Seen.At.After(s.At) || s.Seen.AgentVersion == "" {
			t.Fatalf("%s saw %+v", s.By, s.Seen)
		}
	}
}

func mustGet(t *testing.T, rt *actoviq.Runtime, id string) *actoviq.RunInfo {
	t.Helper()
	info, err := rt.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A run a Go program started, on a console that cannot drive it: the page
// says plainly that its program resumes it and offers no button; once a
// worker serving its agent runs, the page offers the queue, and the worker
// completes the run.
func TestBrowserResumeOffer(t *testing.T) {
	f := newBrowserFixtureWith(t, nil, func(c *console.Config) {
		c.Resume, c.ResumeCommand = nil, func(string) string { return "" }
	})
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	agent := browserAgent("payer", bank, true)
	if res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-70", Items: []item.Item{item.UserText("pay invoice INV-70")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := f.rt.Decide(context.Background(), "inv-70", actoviq.Decision{CallID: "call_pay", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	f.login("dave")
	f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-70"), chromedp.WaitVisible(chromedp.ID("run")))
	f.waitText("#resume-how", "was started by a program with agent payer, and no worker serving that agent is running: that program resumes it")
	if f.evalBool(`!!document.getElementById("resume")`) {
		t.Error("a Resume button is offered that would not work")
	}
	if strings.Contains(f.evalString(`document.querySelector(".resume").textContent`), "actoviq resume") {
		t.Error("the page offers actoviq resume for a Go-started run")
	}
	f.shot("resume-offer-program.png")

	// A worker that serves the agent starts.
	w, err := actoviq.New(f.rt.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Register(agent); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Work(ctx, &actoviq.WorkOptions{PollInterval: 20 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	for { // until the worker says it serves the agent
		c, err := f.rt.AgentServed(context.Background(), "payer")
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			break
		}
		select {
		case <-f.ctx.Done():
			t.Fatal("the worker never said it serves agent payer")
		case <-time.After(10 * time.Millisecond):
		}
	}
	f.run(chromedp.Reload())
	f.waitText(".resume", "hands the run to the workers' queue: a worker serving agent payer")
	f.shot("resume-offer-queue.png")
	f.run(chromedp.Click(chromedp.ID("resume")))
	f.waitText("#run-status", "completed")
	if n := bank.payments(t); n != 1 {
		t.Fatalf("%d payments", n)
	}
}
