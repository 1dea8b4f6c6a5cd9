package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// Another tenant's run of the same id, with its own children, shows
// nowhere in this tenant's console: not in the run, its child tree, its
// interruptions, nor a list row.
func TestReview20OtherTenantsTwinRun(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ctx := context.Background()
	f.interrupted(f.rt, "p")
	f.interrupted(f.other, "p")
	if _, err := f.other.Spawn(ctx, "p", f.agent, &actoviq.Input{RunID: "acme-kid-9931", Items: []item.Item{item.UserText("x")}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Spawn(ctx, "p", f.agent, &actoviq.Input{RunID: "own-kid", Items: []item.Item{item.UserText("x")}}, nil); err != nil {
		t.Fatal(err)
	}
	r := f.call("GET", "/api/v1/runs/p", tokenAnon, "")
	var run console.Run
	r.json(t, &run)
	if bytes.Contains(r.body, []byte("acme-kid-9931")) || len(run.Children) != 1 || run.Children[0].ID != "own-kid" {
		t.Errorf("run p: children %+v\n%s", run.Children, r.body)
	}
	for _, path := range []string{"/api/v1/runs", "/api/v1/runs?q=kid", "/api/v1/runs?status=queued", "/api/v1/inbox"} {
		if b := f.call("GET", path, tokenAnon, "").body; bytes.Contains(b, []byte("acme-kid-9931")) {
			t.Errorf("%s shows the other tenant's child: %s", path, b)
		}
	}
	if r := f.call("GET", "/api/v1/runs/acme-kid-9931", tokenAnon, ""); r.status != 404 {
		t.Errorf("the other tenant's child: %d %s", r.status, r.body)
	}
}

type pinPayment struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
	PIN    string `json:"pin"`
}

// pinAgent pays with a PIN (a secret the redactor hides by its name); with
// lost set, the payment's outcome is unknown (the bank did not answer).
func pinAgent(id string, lost bool) *actoviq.AgentSpec {
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect},
		func(ctx context.Context, p pinPayment) (string, error) {
			if lost {
				return "", fmt.Errorf("the bank did not answer: %w", tool.ErrOutcomeUnknown)
			}
			return "sent", nil
		})
	a := &actoviq.AgentSpec{ID: id, Model: "scripted", Tools: []tool.Tool{pay}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(pinArgs)}}},
		scripted.Turn{Text: "Paid."})}
	if !lost {
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	}
	return a
}

const pinArgs = `{"to":"ada","amount":5,"pin":"4821"}`

// guessPIN tries every 4-digit PIN against the sha256 digests in body, as
// anyone who reads the console could: the digest of the unredacted
// arguments is a plain SHA-256 of them, and the redacted arguments beside
// it give away everything but the PIN.
func guessPIN(body []byte) string {
	for n := range 10000 {
		pin := fmt.Sprintf("%04d", n)
		sum := sha256.Sum256([]byte(strings.Replace(pinArgs, "4821", pin, 1)))
		if bytes.Contains(body, []byte(hex.EncodeToString(sum[:]))) {
			return pin
		}
	}
	return ""
}

// The console hides the digest of a call's unredacted arguments
// everywhere, not only in the ledger: in an open or unsettled
// interruption, an approval or settlement record and its evidence, the
// audit trail, the events' data, the resume answer and the run page. With
// it, a low-entropy secret in the arguments (a PIN) is found by trying
// them all. The CLI, which reads the store itself, still prints it.
func TestReview20NoDigestOfUnredactedArgs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	approved, lost := pinAgent("payer-pin", false), pinAgent("payer-lost", true)
	var f *fixture
	f = setup(t, &setupOpts{cfg: func(c *console.Config) {
		c.Resume = func(ctx context.Context, id string) (*actoviq.RunResult, error) {
			return f.rt.Resume(ctx, map[string]*actoviq.AgentSpec{"pin-ok": approved, "pin-lost": lost}[id], id, nil)
		}
	}})
	for id, a := range map[string]*actoviq.AgentSpec{"pin-ok": approved, "pin-lost": lost} {
		res, err := f.rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("pay ada")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("run %s: %v %+v", id, err, res)
		}
	}
	b, _ := f.login("bob", tokenAnon)
	check := func(what string, body []byte) {
		t.Helper()
		if !bytes.Contains(body, []byte("[REDACTED]")) && !strings.Contains(what, "resume") {
			t.Errorf("%s: the redacted arguments are not there: the check proves nothing\n%s", what, body)
		}
		if pin := guessPIN(body); pin != "" {
			t.Errorf("%s: the PIN %s is found from the digest of the unredacted arguments", what, pin)
		}
	}
	look := func(when string) {
		t.Helper()
		if when == "open" {
			check(when+": GET /api/v1/inbox", f.call("GET", "/api/v1/inbox", tokenAnon, "").body)
			check(when+": inbox page", f.callWith(b.c, "GET", "/", "", "").body)
		}
		for _, id := range []string{"pin-ok", "pin-lost"} {
			check(when+": GET /api/v1/runs/"+id, f.call("GET", "/api/v1/runs/"+id, tokenAnon, "").body)
			check(when+": page /runs/"+id, f.callWith(b.c, "GET", "/runs/"+id, "", "").body)
		}
	}
	look("open")

	// Resuming the lost payment without a decision stops it again: the
	// answer lists the open question.
	r := f.call("POST", "/api/v1/runs/pin-lost/resume", tokenAnon, "")
	if r.status != 200 || !bytes.Contains(r.body, []byte("call_1")) {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	check("POST resume", r.body)

	if err := f.rt.Decide(ctx, "pin-ok", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Decide(ctx, "pin-lost", actoviq.Decision{CallID: "call_1", Kind: actoviq.DecideFailed, Message: "not paid", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	look("decided")
	if res, err := f.rt.Resume(ctx, approved, "pin-ok", nil); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	look("completed")

	// The CLI's view (and the store) keep it: approvals bind to it.
	info, err := f.rt.Get(ctx, "pin-ok")
	if err != nil {
		t.Fatal(err)
	}
	if js, _ := json.Marshal(info); guessPIN(js) != "4821" {
		t.Errorf("the RunInfo view lost the digest that approvals bind to")
	}
}
