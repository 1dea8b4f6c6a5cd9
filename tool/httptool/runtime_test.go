package httptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

type payArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

type receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// payAgent is a model that pays ada 5 through the pay tool, then says so.
func payAgent(t testing.TB, url string, dedupes bool, timeout time.Duration) *actoviq.AgentSpec {
	c, err := httptool.New(&httptool.Config{Dedupes: dedupes})
	if err != nil {
		t.Fatal(err)
	}
	pay, err := httptool.NewTool[payArgs, receipt](tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect, Timeout: timeout}, c,
		func(ctx context.Context, in payArgs) (*http.Request, error) {
			body, err := json.Marshal(in)
			if err != nil {
				return nil, err
			}
			return http.NewRequestWithContext(ctx, "POST", url+"/v1/payments", bytes.NewReader(body))
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, isProbe := pay.(tool.Reconciler)
	if isProbe != dedupes {
		t.Fatalf("the tool is a Reconciler: %v, want %v (only when the target dedupes)", isProbe, dedupes)
	}
	return &actoviq.AgentSpec{ID: "payer", Model: "scripted", Tools: []tool.Tool{pay}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Done."},
	)}
}

func openRuntime(t testing.TB, path string) *actoviq.Runtime {
	t.Helper()
	st, err := storesqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(); st.Close() })
	return rt
}

func run(t *testing.T, rt *actoviq.Runtime, agent *actoviq.AgentSpec) *actoviq.RunResult {
	t.Helper()
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func entry(t *testing.T, rt *actoviq.Runtime) *store.LedgerEntry {
	t.Helper()
	info, err := rt.Get(context.Background(), "run-1")
	if err != nil || len(info.Ledger) != 1 {
		t.Fatalf("get: %v %+v", err, info)
	}
	return info.Ledger[0]
}

func wantInterrupted(t *testing.T, res *actoviq.RunResult, text string) {
	t.Helper()
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("status %s %+v, want interrupted for reconciliation", res.Status, res.Interruptions)
	}
	in := res.Interruptions[0]
	if all := in.Reason + " " + string(in.LastError); !strings.Contains(all, text) {
		t.Errorf("interruption %q / %s lacks %q", in.Reason, in.LastError, text)
	}
}

// TestInProgressThenDone: the target answers 409 (a request with this key
// is in progress) and then, asked again, 200. The first answer is an
// unknown outcome, never a failure. A tool whose target dedupes settles it
// on resume with its probe (one effect, two requests); without the
// declaration the run waits for a person and nothing is sent again.
func TestInProgressThenDone(t *testing.T) {
	t.Parallel()
	for _, dedupes := range []bool{true, false} {
		t.Run(fmt.Sprint("dedupes=", dedupes), func(t *testing.T) {
			t.Parallel()
			g := newTarget(t, true)
			g.set(func(g *target) {
				g.answer = func(n int, w http.ResponseWriter) (int, bool) {
					if n == 1 {
						w.Header().Set("Retry-After", "1")
						return http.StatusConflict, true
					}
					return http.StatusOK, true
				}
			})
			rt := openRuntime(t, filepath.Join(t.TempDir(), "a.db"))
			agent := payAgent(t, g.srv.URL, dedupes, 0)
			wantInterrupted(t, run(t, rt, agent), "ask again after 1s")
			res, err := rt.Resume(context.Background(), agent, "run-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			n, e := g.counts()
			if !dedupes {
				wantInterrupted(t, res, "no probe")
				if n != 1 {
					t.Errorf("requests %d, want 1: nothing is sent again without the declaration", n)
				}
				return
			}
			if res.Status != actoviq.StatusCompleted || n != 2 || e != 1 {
				t.Fatalf("status %s, requests %d, effects %d; want completed, 2, 1", res.Status, n, e)
			}
			en := entry(t, rt)
			if en.Resolution == nil || en.Resolution.Kind != "probe" || !strings.Contains(string(en.Resolution.Evidence), "Idempotent-Replayed: true") ||
				!strings.Contains(string(en.Resolution.Evidence), "dedupes") {
				t.Errorf("resolution %+v", en.Resolution)
			}
			if !strings.Contains(string(en.Result), "pay_1") || !strings.Contains(string(en.Result), "nothing was done twice") {
				t.Errorf("committed result %s", en.Result)
			}
		})
	}
}

// TestKeyReusedGoesToAPerson: 422 is a hard error for a person, never an
// error result the model could answer by calling again.
func TestKeyReusedGoesToAPerson(t *testing.T) {
	t.Parallel()
	g := newTarget(t, true)
	g.set(func(g *target) {
		g.answer = func(int, http.ResponseWriter) (int, bool) { return http.StatusUnprocessableEntity, false }
	})
	rt := openRuntime(t, filepath.Join(t.TempDir(), "a.db"))
	wantInterrupted(t, run(t, rt, payAgent(t, g.srv.URL, true, 0)), "different request")
	if n, _ := g.counts(); n != 1 {
		t.Errorf("requests %d, want 1", n)
	}
}

// TestRejectedTheModelSees: a 4xx the target answered without acting is
// an error result the model sees; the run goes on.
func TestRejectedTheModelSees(t *testing.T) {
	t.Parallel()
	g := newTarget(t, false)
	g.set(func(g *target) {
		g.answer = func(int, http.ResponseWriter) (int, bool) { return http.StatusBadRequest, false }
	})
	rt := openRuntime(t, filepath.Join(t.TempDir(), "a.db"))
	res := run(t, rt, payAgent(t, g.srv.URL, false, 0))
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Interruptions)
	}
	en := entry(t, rt)
	var r tool.Result
	json.Unmarshal(en.Result, &r)
	if !r.IsError || !strings.Contains(r.Content, "rejected with 400") {
		t.Errorf("result %s", en.Result)
	}
}

// TestHangsPastTheToolDeadline: the target holds the request past the
// tool's timeout: the outcome is unknown (the target did act). With the
// dedupe declaration, resume's probe asks again and the target's replay
// settles it; without, the run waits for a person.
func TestHangsPastTheToolDeadline(t *testing.T) {
	t.Parallel()
	for _, dedupes := range []bool{true, false} {
		t.Run(fmt.Sprint("dedupes=", dedupes), func(t *testing.T) {
			t.Parallel()
			g := newTarget(t, true)
			g.holdRequests()
			rt := openRuntime(t, filepath.Join(t.TempDir(), "a.db"))
			agent := payAgent(t, g.srv.URL, dedupes, 300*time.Millisecond)
			wantInterrupted(t, run(t, rt, agent), "the side effect may or may not have happened")
			res, err := rt.Resume(context.Background(), agent, "run-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			n, e := g.counts()
			if dedupes && (res.Status != actoviq.StatusCompleted || n != 2 || e != 1) {
				t.Errorf("dedupes: status %s, requests %d, effects %d; want completed, 2, 1", res.Status, n, e)
			}
			if !dedupes && (res.Status != actoviq.StatusInterrupted || n != 1) {
				t.Errorf("no dedupe: status %s, requests %d; want interrupted, 1", res.Status, n)
			}
		})
	}
}

// TestKilledAfterTheRequestLeft: a child process runs the agent; the
// target receives the payment request and holds it; the parent SIGKILLs
// the child and resumes the run from the same SQLite file. Only where the
// target dedupes and the tool says so is the request sent again (by the
// probe), and the target acts once; otherwise it is sent exactly one time
// and the run waits for a person.
func TestKilledAfterTheRequestLeft(t *testing.T) {
	t.Parallel()
	for _, dedupes := range []bool{true, false} {
		t.Run(fmt.Sprint("dedupes=", dedupes), func(t *testing.T) {
			t.Parallel()
			g := newTarget(t, true)
			hold := g.holdRequests()
			path := filepath.Join(t.TempDir(), "a.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "HTTPTOOL_CHILD_DB="+path, "HTTPTOOL_CHILD_URL="+g.srv.URL, "HTTPTOOL_CHILD_DEDUPES="+strconv.FormatBool(dedupes))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-g.arrived: // the request left the child
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("the child's request never arrived: %s", out.String())
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			cmd.Wait()
			close(hold)

			rt := openRuntime(t, path)
			agent := payAgent(t, g.srv.URL, dedupes, 0)
			res, err := rt.Resume(context.Background(), agent, "run-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			n, e := g.counts()
			if dedupes {
				if res.Status != actoviq.StatusCompleted || n != 2 || e != 1 {
					t.Errorf("dedupes: status %s %+v, requests %d, effects %d; want completed, 2, 1", res.Status, res.Interruptions, n, e)
				}
				return
			}
			wantInterrupted(t, res, "no probe")
			if n != 1 || e != 1 {
				t.Errorf("no dedupe: requests %d, effects %d; want 1 and 1", n, e)
			}
		})
	}
}

// TestMain runs the child of TestKilledAfterTheRequestLeft when asked to.
func TestMain(m *testing.M) {
	if path := os.Getenv("HTTPTOOL_CHILD_DB"); path != "" {
		child(path, os.Getenv("HTTPTOOL_CHILD_URL"), os.Getenv("HTTPTOOL_CHILD_DEDUPES") == "true")
		return
	}
	os.Exit(m.Run())
}

type childTB struct{ testing.TB }

func (childTB) Fatal(args ...any) { fmt.Fprintln(os.Stderr, args...); os.Exit(3) }
func (childTB) Helper()           {}
func (childTB) Cleanup(func())    {}

func child(path, url string, dedupes bool) {
	tb := childTB{}
	rt := openRuntime(tb, path)
	_, err := rt.Run(context.Background(), payAgent(tb, url, dedupes, time.Hour), &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay ada 5")}})
	fmt.Fprintln(os.Stderr, "the child was not killed:", err)
	os.Exit(4)
}

// TestProbeStaysInsideTheKeyWindow: the probe sends a call again only
// while the target still keeps its key (Config.KeyWindow, counted from the
// call's recorded start); past it, or with no start known, it sends
// nothing and leaves the call to a person.
func TestProbeStaysInsideTheKeyWindow(t *testing.T) {
	t.Parallel()
	g := newTarget(t, true)
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	c, err := httptool.New(&httptool.Config{Dedupes: true, KeyWindow: time.Hour, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	pay, err := httptool.NewTool[payArgs, receipt](tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect}, c,
		func(ctx context.Context, in payArgs) (*http.Request, error) {
			body, _ := json.Marshal(in)
			return http.NewRequestWithContext(ctx, "POST", g.srv.URL+"/v1/payments", bytes.NewReader(body))
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := pay.(tool.Reconciler)
	args := json.RawMessage(`{"to":"ada","amount":5}`)
	probe := func(started time.Time) tool.Probe {
		ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
		if !started.IsZero() {
			ctx = tool.WithCallStarted(ctx, started)
		}
		p, err := rec.Reconcile(ctx, "run-1:call_1", args)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, started := range []time.Time{{}, now.Add(-2 * time.Hour), now.Add(-time.Hour)} {
		if p := probe(started); p.Outcome != tool.ProbeUnknown || !strings.Contains(p.Evidence, "did not send") || !strings.Contains(p.Evidence, "1h0m0s") {
			t.Errorf("started %v: %+v, want unknown without sending", started, p)
		}
	}
	if n, _ := g.counts(); n != 0 {
		t.Fatalf("the target got %d requests outside the window, want 0", n)
	}
	p := probe(now.Add(-10 * time.Minute))
	if p.Outcome != tool.ProbeCommitted || p.Result == nil || !strings.Contains(p.Evidence, "may be the one that acted") {
		t.Errorf("inside the window: %+v", p)
	}
	if n, e := g.counts(); n != 1 || e != 1 {
		t.Errorf("requests %d, effects %d; want 1 and 1", n, e)
	}
}
