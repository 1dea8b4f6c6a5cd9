package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// pageProblems collects what a page reports as going wrong: uncaught
// exceptions, console.error/warn calls, and log entries of level error
// (a failed request among them).
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, s)
}

func (p *pageProblems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.list
	p.list = nil
	return out
}

func (f *browserFixture) listenProblems() *pageProblems {
	p := &pageProblems{}
	if err := chromedp.Listen(f.ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			p.add("exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				p.add(fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				p.add(fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventResponseReceived:
			if i := strings.Index(e.Response.URL, "/api/v1/runs/"); i >= 0 && e.Type == network.ResourceTypeFetch {
				if e.Response.Status != 200 {
					p.add(fmt.Sprintf("%s answered %d", e.Response.URL[i:], int(e.Response.Status)))
				}
			}
		}
	}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := chromedp.Call(f.ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := chromedp.Call(f.ctx, network.Enable, network.EnableParams{}); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// visitRun opens a run's page, waits until its script ran and its live
// poll answered twice, and checks that the page did not reload meanwhile
// (a run that does not change is not reloaded) and reported no problem.
func (f *browserFixture) visitRun(p *pageProblems, id, want string) {
	f.t.Helper()
	f.run(chromedp.Navigate(f.srv.URL + "/runs/" + id))
	f.waitText("#run-status", want)
	// Count the page's API answers from now on; a reload loses the count.
	f.evalBool(`(() => { window.reviewPolls = 0; const of = window.fetch;
		window.fetch = function () { return of.apply(this, arguments).then(r => { window.reviewPolls++; return r; }); }; return true; })()`)
	if _, err := chromedp.Run(f.ctx, chromedp.Poll[bool](`window.reviewPolls === undefined || window.reviewPolls >= 2`)); err != nil && !transient(err) {
		f.t.Fatalf("run %s: waiting for the page's poll: %v", id, err)
	}
	if v, err := chromedp.Run(f.ctx, chromedp.Evaluate[bool](`window.reviewPolls !== undefined`)); err != nil || !v {
		f.t.Errorf("run %s: the page reloaded though the run did not change (%v)", id, err)
	}
	if probs := p.take(); len(probs) > 0 {
		f.t.Errorf("run %s: the page reported problems:\n%s", id, strings.Join(probs, "\n"))
	}
}

// TestReview20BrowserRunKinds opens, in chromium, the page of a run of each
// kind whose JSON now leaves fields out (zero usage, no ledger, no holder,
// finished, cancelled, a child tree, an MCP task, a provider
// interruption), and drives a decision and a resume: every page renders,
// its live poll neither fails nor reloads an unchanged run, and no
// exception, console error or failed request shows.
func TestReview20BrowserRunKinds(t *testing.T) {
	f := newBrowserFixture(t)
	ctx := context.Background()
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	payer := browserAgent("payer", bank, true)
	f.agents["payer"] = payer
	talker := &actoviq.AgentSpec{ID: "talker", Model: "scripted", Provider: scripted.New(scripted.Turn{Text: "hello"})}
	tasks := &actoviq.AgentSpec{ID: "render", Model: "scripted", Tools: []tool.Tool{taskTool{}}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "jobs__render", Arguments: json.RawMessage(`{}`)}}},
		scripted.Turn{Text: "done"})}
	down := &actoviq.AgentSpec{ID: "writer", Provider: downModel{}, Model: "m-1"}

	run := func(a *actoviq.AgentSpec, id string, want actoviq.Status) {
		t.Helper()
		res, err := f.rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("go " + id)}})
		if err != nil || res.Status != want {
			t.Fatalf("run %s: %v %+v, want %s", id, err, res, want)
		}
	}
	run(talker, "done-1", actoviq.StatusCompleted)    // no ledger
	run(payer, "inv-1", actoviq.StatusInterrupted)    // decided and resumed below
	run(payer, "cx-1", actoviq.StatusInterrupted)     // cancelled below
	run(tasks, "task-1", actoviq.StatusInterrupted)   // an MCP task of an unknown call
	run(down, "prov-1", actoviq.StatusInterrupted)    // a provider interruption
	run(payer, "parent-1", actoviq.StatusInterrupted) // with a child tree
	for _, k := range [][2]string{{"parent-1", "kid-a"}, {"kid-a", "kid-aa"}, {"parent-1", "kid-b"}} {
		if _, err := f.rt.Spawn(ctx, k[0], payer, &actoviq.Input{RunID: k[1], Items: []item.Item{item.UserText(k[1])}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.rt.Cancel(ctx, "cx-1"); err != nil {
		t.Fatal(err)
	}
	// A holder name is the program's to choose: markup in it is text.
	const evil = `evil"><img src=x onerror="window.pwned=1">:1:x`
	other, err := actoviq.New(f.rt.Store(), &actoviq.Config{Holder: evil})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if res, err := other.Run(ctx, payer, &actoviq.Input{RunID: "xss-1", Items: []item.Item{item.UserText("go")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run xss-1: %v %+v", err, res)
	}

	f.login("alice")
	p := f.listenProblems()
	f.visitRun(p, "done-1", "completed")
	f.visitRun(p, "cx-1", "cancelled")
	f.visitRun(p, "task-1", "interrupted")
	f.visitRun(p, "prov-1", "interrupted")
	f.visitRun(p, "kid-aa", "queued") // no turn, no usage, no ledger, no holder
	f.visitRun(p, "xss-1", "interrupted")
	f.waitText("#run .facts", `<img src=x onerror="window.pwned=1">`)
	if f.evalBool(`window.pwned === 1 || !!document.querySelector("img[src=x]")`) {
		t.Error("the holder's markup ran in the run page")
	}
	f.visitRun(p, "parent-1", "interrupted")
	f.waitText("#children-h", "Child runs")
	f.waitText(".tree", "kid-aa")

	// Decide and resume in the page.
	f.visitRun(p, "inv-1", "interrupted")
	f.run(
		chromedp.Click(chromedp.CSS(`#call-call_pay details:first-of-type summary`)),
		chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type=submit]`)),
	)
	f.waitText("#decided", "Recorded approve for call call_pay as alice")
	f.run(chromedp.Click(chromedp.ID("resume"), chromedp.NodeEnabled))
	f.waitText("#run-status", "completed")
	f.visitRun(p, "inv-1", "completed")
	if got := bank.payments(t); got != 1 {
		t.Errorf("%d payments, want 1", got)
	}

	for _, page := range []string{"/runs", "/"} {
		f.run(chromedp.Navigate(f.srv.URL + page))
		f.waitText("h1", map[string]string{"/runs": "Runs", "/": "Inbox"}[page])
		if probs := p.take(); len(probs) > 0 {
			t.Errorf("%s: the page reported problems:\n%s", page, strings.Join(probs, "\n"))
		}
		if f.evalBool(`window.pwned === 1 || !!document.querySelector("img[src=x]")`) {
			t.Errorf("%s: the holder's markup ran", page)
		}
	}
}
