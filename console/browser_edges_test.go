package console_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
)

// evalBool runs a JavaScript expression in the page and returns its
// boolean value.
func (f *browserFixture) evalBool(expr string) bool {
	f.t.Helper()
	v, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		f.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func (f *browserFixture) evalString(expr string) string {
	f.t.Helper()
	v, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		f.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// The rough edges a first-day trial found, each driven in the browser:
// the inbox card says what is to be approved; Resume sits below the open
// questions and waits for them; a decision lands on its confirmation,
// which says "Recorded" once; "last driven by" names the process that
// drove the run, not the one that recorded a decision; the ledger is whole
// at 1280 px with a long holder name; side-effect stays on one line on a
// phone.
func TestBrowserConsoleEdges(t *testing.T) {
	f := newBrowserFixture(t)
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	agent := browserAgent("payer", bank, true)
	f.agents["payer"] = agent

	// The run is driven by another process (a runtime with its own, long,
	// holder name) and decided through the console's runtime.
	const driver = "batch-host-eu-west-1-payments-0042.internal.example.com:4242:20261201T233300Z.deadbeef"
	other, err := actoviq.New(f.rt.Store(), &actoviq.Config{Holder: driver})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	res, err := other.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-50", Items: []item.Item{item.UserText("pay invoice INV-50")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}

	f.login("alice")
	// The approval card shows what is to be approved, redacted as stored.
	f.waitText("#inbox .kind-approval", "inv-50")
	f.waitText("#inbox .kind-approval .summary", "to: ada · amount: 42")
	f.shot("edges-inbox-summary.png")

	f.run(chromedp.Click(chromedp.CSS(`#inbox a[href^="/runs/inv-50"]`)), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	f.waitText("#run-status", "interrupted")
	// Resume comes after the open questions, and waits for them.
	if !f.evalBool(`!!(document.getElementById("open-h").compareDocumentPosition(document.getElementById("resume")) & Node.DOCUMENT_POSITION_FOLLOWING)`) {
		t.Error("the Resume button is not below the open questions")
	}
	if !f.evalBool(`document.getElementById("resume").disabled`) {
		t.Error("Resume is enabled while a question is undecided")
	}
	f.waitText("#resume-wait", "1 open question above still waits for a decision")
	f.shot("edges-resume-waits.png")

	// Approve from the bottom of a long form: after the reload the page
	// lands on the confirmation, beside the now enabled Resume button.
	f.run(
		chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="Approve"]`)),
		chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="approve"] input[name="note"]`), "INV-50 checked"),
		chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type="submit"]`)),
	)
	f.waitText("#decided", "Recorded approve for call call_pay as alice")
	if n := strings.Count(f.evalString(`document.getElementById("decided").textContent`), "Recorded"); n != 1 {
		t.Errorf("the confirmation says Recorded %d times", n)
	}
	if !f.evalBool(`(() => { const r = document.getElementById("decided").getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; })()`) {
		t.Error("the confirmation is not in view after the decision")
	}
	if f.evalBool(`document.getElementById("resume").disabled`) {
		t.Error("Resume stays disabled with every question decided")
	}
	f.save("edges-decided.png", chromedp.CaptureScreenshot())

	// Last driven by: the process that drove the run, not the console's
	// runtime, which took the claim only to record the decision.
	facts := f.evalString(`document.querySelector(".facts").textContent`)
	if !strings.Contains(facts, "Last driven by") || !strings.Contains(facts, "batch-host-eu-west-1-payments-0042.internal.example.com pid 4242") {
		t.Errorf("facts do not name the driving process:\n%s", facts)
	}
	if base, _, _ := strings.Cut(f.rt.Holder(), "."); strings.Contains(facts, actoviq.ParseHolder(f.rt.Holder()).String()) || strings.Contains(facts, base) {
		t.Errorf("facts name the process that only recorded a decision (%s):\n%s", f.rt.Holder(), facts)
	}

	// The driving process resumes it; then the ledger at 1280 px: its long
	// holder name does not cut the table (no horizontal scrolling inside).
	if res, err := other.Resume(context.Background(), agent, "inv-50", nil); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	f.waitText("#run-status", "completed") // the page follows the run
	if n := bank.payments(t); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	f.run(chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".ledger")))
	f.waitText(".ledger", "committed")
	f.waitText(".ledger", "batch-host-eu-west-1-payments-0042.internal.example.com pid 4242")
	if f.evalBool(`(() => { const s = document.querySelector(".ledger").closest(".scroll"); return s.scrollWidth > s.clientWidth + 1; })()`) {
		t.Errorf("the ledger table is cut at 1280 px: %s", f.evalString(`(() => { const s = document.querySelector(".ledger").closest(".scroll"); return s.scrollWidth + " > " + s.clientWidth; })()`))
	}
	f.save("edges-ledger-1280.png", chromedp.FullScreenshot(100))

	// On a phone, side-effect stays on one line, in the inbox and on the
	// run page.
	if _, err := other.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-51-with-a-longer-run-id", Items: []item.Item{item.UserText("pay invoice INV-51")}}); err != nil {
		t.Fatal(err)
	}
	f.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(f.srv.URL+"/"))
	f.waitText("#inbox", "inv-51")
	// An element wraps when its text takes more than one line box.
	wraps := `Array.from(document.querySelectorAll(".effect, .ledger td")).filter(e => {
		if (e.textContent.trim() !== "side-effect") return false;
		const r = document.createRange(); r.selectNodeContents(e);
		const tops = new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top)));
		return tops.size > 1;
	}).length`
	if n := f.evalString(`String(` + wraps + `)`); n != "0" {
		t.Errorf("%s side-effect badge(s) wrap on a phone in the inbox", n)
	}
	f.shot("edges-inbox-phone.png")
	f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-51-with-a-longer-run-id"), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	if n := f.evalString(`String(Array.from(document.querySelectorAll(".effect, .ledger td")).filter(e => e.textContent.trim() === "side-effect").length)`); n != "2" {
		t.Fatalf("found %s side-effect labels on the run page, want 2 (the question and the ledger)", n)
	}
	f.waitText("#run-status", "interrupted")
	if n := f.evalString(`String(` + wraps + `)`); n != "0" {
		t.Errorf("%s side-effect badge(s) wrap on a phone on the run page", n)
	}
	if f.evalBool(`document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Error("the run page is wider than a phone's screen")
	}
	f.shot("edges-run-phone.png")
}
