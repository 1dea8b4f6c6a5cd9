package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// The crash child: the test binary re-executed with this variable set
// drives a run until its payment has started, then waits to be killed.
const crashChildEnv = "ACTOVIQ_CONSOLE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

// The browser tests share one headless chromium, started by the first of
// them: starting one took seconds, more on a loaded machine (12 s at load
// 19). Each test works in a BrowserContext of its own (newBrowserFixtureWith),
// so no cookie, storage or tab passes from one test to the next.
var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	stopBrowser = func() {}
)

// sharedBrowser returns the context of the shared chromium, exe, starting
// it on first use.
func sharedBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
			chromedp.Flag("headless", true), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1100, 900))
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		stopBrowser = func() { bcancel(); acancel() }
		// An empty Run starts the browser, so that a test's own context
		// below only opens a BrowserContext in it.
		browserErr = chromedp.Do(bctx)
		browserCtx = bctx
	})
	if browserErr != nil {
		t.Fatalf("start chromium: %v", browserErr)
	}
	return browserCtx
}

// fileBank is a payment tool that appends each payment to a file, so that
// payments made by a killed process are counted too. With hang set it
// says "paying" on stdout after recording and never returns.
type fileBank struct {
	path string
	hang bool
}

func (b *fileBank) Spec() tool.Spec {
	return tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"integer"}}}`)}
}

func (b *fileBank) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	f, err := os.OpenFile(b.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return tool.Result{}, err
	}
	_, err = fmt.Fprintf(f, "%s %s\n", tool.IdempotencyKey(ctx), args)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return tool.Result{}, err
	}
	if b.hang {
		fmt.Println("paying")
		select {}
	}
	return tool.Result{Content: "payment sent"}, nil
}

func (b *fileBank) payments(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(b.path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func browserAgent(id string, b *fileBank, approve bool) *actoviq.AgentSpec {
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_pay", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":42}`)}}},
		scripted.Turn{Text: "Invoice INV-42 is paid."},
	)
	a := &actoviq.AgentSpec{ID: id, Provider: model, Model: "scripted", Tools: []tool.Tool{b}}
	if approve {
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	}
	return a
}

// crashRun starts a process that drives runID until its payment has
// started, and SIGKILLs it there.
func crashRun(t *testing.T, dbPath, bankPath, runID string) {
	t.Helper()
	spec, _ := json.Marshal(map[string]string{"Store": dbPath, "Bank": bankPath, "Run": runID})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "paying" {
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

func crashChild(spec string) int {
	var s struct{ Store, Bank, Run string }
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := storesqlite.Open(s.Store, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rt, err := actoviq.New(st, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = rt.Run(context.Background(), browserAgent("treasurer", &fileBank{path: s.Bank, hang: true}, false),
		&actoviq.Input{RunID: s.Run, Items: []item.Item{item.UserText("pay invoice INV-42")}})
	fmt.Fprintln(os.Stderr, "the crash child was not killed:", err)
	return 1
}

// chromium finds Debian's chromium. Outside CI a missing browser skips the
// test with the reason; in CI (CI=true) it fails it.
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("ACTOVIQ_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true requires the browser test: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the browser end-to-end test needs it; in CI it is required")
	return ""
}

// screenshotDir is where the test leaves its screenshots.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("ACTOVIQ_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "actoviq-console-e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

type browserFixture struct {
	t       *testing.T
	ctx     context.Context
	srv     *httptest.Server
	rt      *actoviq.Runtime
	dbPath  string
	shots   string
	token   string
	agents  map[string]*actoviq.AgentSpec
	agentMu sync.Mutex
}

func newBrowserFixture(t *testing.T) *browserFixture { return newBrowserFixtureWith(t, nil, nil) }

// newBrowserFixtureWith builds the fixture with a runtime Config and a
// change to the console's Config.
func newBrowserFixtureWith(t *testing.T, rcfg *actoviq.Config, change func(*console.Config)) *browserFixture {
	exe := chromium(t)
	dir := t.TempDir()
	f := &browserFixture{t: t, dbPath: filepath.Join(dir, "actoviq.db"), shots: screenshotDir(t), token: "browser-test-token-0123456789",
		agents: map[string]*actoviq.AgentSpec{}}
	st, err := storesqlite.Open(f.dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.rt, err = actoviq.New(st, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.rt.Close() })
	ccfg := &console.Config{
		Tokens:       []console.Token{{Secret: f.token}},
		PollInterval: 200 * time.Millisecond,
		Resume: func(ctx context.Context, runID string) (*actoviq.RunResult, error) {
			info, err := f.rt.Get(ctx, runID)
			if err != nil {
				return nil, err
			}
			f.agentMu.Lock()
			a := f.agents[info.AgentID]
			f.agentMu.Unlock()
			return f.rt.Resume(ctx, a, runID, nil)
		},
	}
	if change != nil {
		change(ccfg)
	}
	con, err := console.New(f.rt, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	// Plain HTTP on 127.0.0.1, as `actoviq console` serves by default: the
	// browser must keep the Secure cookie on loopback.
	f.srv = httptest.NewServer(con)
	t.Cleanup(f.srv.Close)

	bctx, bcancel := chromedp.NewContext(sharedBrowser(t, exe), chromedp.WithNewBrowserContext())
	t.Cleanup(bcancel)
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancel)
	f.ctx = ctx
	return f
}

func (f *browserFixture) run(actions ...chromedp.Action[chromedp.Void]) {
	f.t.Helper()
	if err := chromedp.Do(f.ctx, actions...); err != nil {
		f.t.Fatal(err)
	}
}

func (f *browserFixture) shot(name string) {
	f.t.Helper()
	f.save(name, chromedp.FullScreenshot(100))
}

func (f *browserFixture) save(name string, capture chromedp.Action[[]byte]) {
	f.t.Helper()
	// A page that reloads itself (it follows the run live) may be between
	// two documents; take the picture once it has one.
	var buf []byte
	var err error
	for {
		buf, err = chromedp.Run(f.ctx, capture)
		if err == nil || f.ctx.Err() != nil || !transient(err) {
			break
		}
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.shots, name), buf, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// transient reports a protocol error that a navigation in progress
// causes.
func transient(err error) bool {
	for _, s := range []string{"navigated or closed", "Cannot find context", "with 0 width"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// waitText waits until the element's text contains want. A navigation
// during the wait (a form that reloads the page) starts it again.
func (f *browserFixture) waitText(sel, want string) {
	f.t.Helper()
	// The page's script must have wired its handlers too, or a click
	// right after would do nothing.
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return document.documentElement.dataset.ready === "1" && !!e && e.textContent.includes(%q); })()`, sel, want)
	for {
		_, err := chromedp.Run(f.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return
		}
		if f.ctx.Err() == nil && transient(err) {
			continue
		}
		text, _ := chromedp.Run(context.WithoutCancel(f.ctx), chromedp.Evaluate[string](`document.body.innerText`))
		f.t.Fatalf("waiting for %q in %s: %v\npage:\n%s", want, sel, err, text)
	}
}

func (f *browserFixture) login(name string) {
	f.run(
		chromedp.Navigate(f.srv.URL+"/login#token="+f.token),
		chromedp.WaitVisible(chromedp.ID("name")))
	f.waitText("#login-form", "Your name") // the script has moved the token into the form
	f.run(
		chromedp.SendKeys(chromedp.ID("name"), name),
		chromedp.Submit(chromedp.ID("login-form")),
	)
	f.waitText("#operator", name)
	loc, err := chromedp.Run(f.ctx, chromedp.Location())
	if err != nil {
		f.t.Fatal(err)
	}
	if strings.Contains(loc, "token") {
		f.t.Errorf("the token stayed in the URL: %s", loc)
	}
}

func TestBrowserApproveAndResume(t *testing.T) {
	f := newBrowserFixture(t)
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	agent := browserAgent("payer", bank, true)
	f.agents["payer"] = agent
	res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-42", Items: []item.Item{item.UserText("pay invoice INV-42")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}

	f.login("alice")
	f.waitText("#inbox", "inv-42")
	f.waitText("#inbox-live", "Live")
	f.shot("inbox-approval.png")
	// The inbox follows the store without a reload.
	if _, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-44", Items: []item.Item{item.UserText("pay invoice INV-44")}}); err != nil {
		t.Fatal(err)
	}
	f.waitText("#inbox", "inv-44")
	f.run(chromedp.Click(chromedp.CSS(`#inbox a[href^="/runs/inv-42"]`)), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	f.waitText("#call-call_pay .reason", "approval")
	f.run(
		chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="Approve"]`)),
		chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="approve"] input[name="note"]`), "invoice INV-42 checked"),
		chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type="submit"]`)),
	)
	f.waitText("#decided", "Recorded approve for call call_pay as alice")
	if bank.payments(t) != 0 {
		t.Fatal("paid before the run was resumed")
	}
	f.run(chromedp.Click(chromedp.ID("resume")))
	f.waitText("#run-status", "completed")
	f.waitText(".audit", "alice")
	f.shot("run-completed.png")

	if n := bank.payments(t); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	info, _ := f.rt.Get(context.Background(), "inv-42")
	if a := info.Ledger[0].Approval; info.Status != actoviq.StatusCompleted || a == nil || a.By != "alice" || a.Note != "invoice INV-42 checked" {
		t.Fatalf("run %s, approval %+v", info.Status, a)
	}

	// Someone else decides first: the page says so plainly.
	f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-44"), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	f.waitText("#run-status", "interrupted")
	f.run(
		chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="Approve"]`)),
		chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="approve"] input[name="note"]`), "looks fine"))
	if err := f.rt.Decide(context.Background(), "inv-44", actoviq.Decision{CallID: "call_pay", Kind: actoviq.DecideReject, By: "carol", Reason: "duplicate invoice"}); err != nil {
		t.Fatal(err)
	}
	f.run(chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type="submit"]`)))
	f.waitText("#call-call_pay .decide-result", "Not recorded: this decision no longer fits the run (someone may have decided first)")
	if info, _ := f.rt.Get(context.Background(), "inv-44"); info.Ledger[0].Approval == nil || info.Ledger[0].Approval.By != "carol" {
		t.Fatalf("inv-44: %+v", info.Ledger[0].Approval)
	}

	// The same page at a phone's width, in dark mode.
	if _, err := chromedp.Call(f.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	f.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(f.srv.URL+"/runs/inv-42"), chromedp.WaitVisible(chromedp.ID("run")))
	overflow, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Error("the run page is wider than a phone's screen")
	}
	f.shot("run-phone-dark.png")
}

func TestBrowserSettlesReconciliationAfterSIGKILL(t *testing.T) {
	f := newBrowserFixture(t)
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	f.agents["treasurer"] = browserAgent("treasurer", bank, false)

	// A process starts the payment and is SIGKILLed while it runs.
	crashRun(t, f.dbPath, bank.path, "inv-43")
	if n := bank.payments(t); n != 1 {
		t.Fatalf("the killed process made %d payments, want 1", n)
	}

	f.login("bob")
	// The inbox shows the run as stalled: its worker's process is gone.
	f.waitText("#inbox .kind-stalled", "inv-43")
	f.waitText("#inbox .kind-stalled", "process is gone")
	f.shot("inbox-stalled.png")
	f.run(chromedp.Click(chromedp.CSS(`#inbox a[href="/runs/inv-43"]`)), chromedp.WaitVisible(chromedp.ID("run")))
	f.waitText("#run-status", "stalled")
	f.waitText(".ledger", "started")
	// Resuming applies the recovery rules: a started side effect goes to
	// reconciliation, never to replay.
	f.run(chromedp.Click(chromedp.ID("resume")))
	f.waitText("#run-status", "interrupted")
	f.waitText("#call-call_pay", "reconciliation")
	if n := bank.payments(t); n != 1 {
		t.Fatalf("resume re-ran the payment: %d payments", n)
	}
	f.run(chromedp.Navigate(f.srv.URL + "/"))
	f.waitText("#inbox", "reconciliation")
	f.shot("inbox-reconciliation.png")

	f.run(chromedp.Click(chromedp.CSS(`#inbox a[href^="/runs/inv-43"]`)), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	f.waitText("#call-call_pay", "reconciliation")
	f.shot("run-reconciliation.png")
	f.run(chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="It happened (committed)"]`)),
		chromedp.EmulateViewport(1000, 900))
	f.save("readme-console.png", chromedp.CaptureScreenshot())
	// Plain text is the result's text; it needs no JSON quotes.
	f.run(
		chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="committed"] textarea[name="result"]`), `payment p-77 sent`),
		chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="committed"] button[type="submit"]`)),
	)
	f.waitText("#decided", "Recorded committed for call call_pay as bob")
	f.run(chromedp.Click(chromedp.ID("resume")))
	f.waitText("#run-status", "completed")
	f.waitText(".transcript", "payment p-77 sent")

	if n := bank.payments(t); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	info, _ := f.rt.Get(context.Background(), "inv-43")
	r := info.Ledger[0].Resolution
	if info.Status != actoviq.StatusCompleted || r == nil || r.Kind != "committed" || r.By != "bob" || info.Ledger[0].Attempt != 1 {
		t.Fatalf("run %s, resolution %+v, attempt %d", info.Status, r, info.Ledger[0].Attempt)
	}
}
