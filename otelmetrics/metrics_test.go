package otelmetrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/otelmetrics"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// endpoint serves a Prometheus provider on a real loopback listener.
type endpoint struct {
	prom *otelmetrics.Prometheus
	url  string
}

func serve(t *testing.T) *endpoint {
	t.Helper()
	prom, err := otelmetrics.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- otelmetrics.Serve(ctx, ln, prom.Handler()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		_ = prom.Shutdown(context.Background())
	})
	return &endpoint{prom: prom, url: "http://" + ln.Addr().String() + "/metrics"}
}

// scrape reads the endpoint as Prometheus would and returns each sample
// line's value by its series ("name{labels}", labels as printed).
func (e *endpoint) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %s %s\n%s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// series finds the sample of name whose labels include all of want
// (k="v" pairs), or reports it missing.
func series(samples map[string]float64, name string, want ...string) (float64, bool) {
	for k, v := range samples {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(labels, w) {
				ok = false
			}
		}
		if ok {
			return v, true
		}
	}
	return 0, false
}

func wantSample(t *testing.T, samples map[string]float64, want float64, name string, labels ...string) {
	t.Helper()
	got, ok := series(samples, name, labels...)
	if !ok {
		var names []string
		for k := range samples {
			if strings.HasPrefix(k, "actoviq") {
				names = append(names, k)
			}
		}
		t.Errorf("no sample %s%v; actoviq samples: %v", name, labels, names)
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func lookup() tool.Tool {
	return tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read}, func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "found", nil
	})
}

func payTool() tool.Tool {
	return tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		return "paid", nil
	})
}

// TestScrapeRealRuns: real runs through a real runtime, counted by the
// sink, read back by an HTTP scrape of the Prometheus endpoint; the gauges
// come from the source, at the clock's age.
func TestScrapeRealRuns(t *testing.T) {
	t.Parallel()
	ep := serve(t)
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	reads := 0
	m, err := otelmetrics.New(ep.prom.MeterProvider(), &otelmetrics.Config{Clock: clk.Now, SourceEvery: time.Minute,
		Source: func(ctx context.Context) (*otelmetrics.Snapshot, error) {
			reads++
			return &otelmetrics.Snapshot{
				Runs: map[string]int64{"interrupted": 2, "queued": 5, "running": 1, "stalled": 0},
				Inbox: map[string]otelmetrics.InboxKind{
					"approval":       {Items: 2, Oldest: clk.Now().Add(-20 * time.Minute)},
					"reconciliation": {Items: 0},
				},
			}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })

	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{Sinks: []actoviq.EventSink{m}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := t.Context()
	in := &actoviq.Input{Items: []item.Item{item.UserText("go")}}

	// One read call, committed.
	_, err = rt.Run(ctx, &actoviq.AgentSpec{ID: "a", Model: "m", Tools: []tool.Tool{lookup()}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}},
		scripted.Turn{Text: "done"})}, in)
	if err != nil {
		t.Fatal(err)
	}
	// Two payments that need approval: one approved (then committed), one
	// rejected.
	payAgent := func() *actoviq.AgentSpec {
		return &actoviq.AgentSpec{ID: "billing", Model: "m", Tools: []tool.Tool{payTool()},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}, Provider: scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "p1", Name: "pay", Arguments: json.RawMessage(`{"amount":5}`)}}},
				scripted.Turn{Text: "done"})}
	}
	for _, kind := range []actoviq.DecisionKind{actoviq.DecideApprove, actoviq.DecideReject} {
		a := payAgent()
		res, err := rt.Run(ctx, a, in)
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("%v %v", res, err)
		}
		res, err = rt.Resume(ctx, a, res.RunID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "p1", Kind: kind, By: "op"}}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("resume after %s: %v %v", kind, res, err)
		}
	}
	// A worker claims a queued run.
	q := payAgent()
	q.Approval = actoviq.ApprovalPolicy{}
	if err := rt.Register(q); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Enqueue(ctx, q, in)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- rt.Work(wctx, &actoviq.WorkOptions{PollInterval: time.Millisecond, OnDrive: func(string, *actoviq.RunResult, error) { stop() }})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Wait(ctx, id); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("queued run: %v %v", res, err)
	}
	m.RecordRetention(ctx, 3)
	m.Emit(ctx, actoviq.Event{Type: "runs.pruned", Data: json.RawMessage(`{"run_ids":["a","b","c","d"],"events":9}`)})
	m.Emit(ctx, actoviq.Event{Type: "runs.pruned", Data: json.RawMessage(`{"run_ids":["e"],"dry_run":true}`)})
	m.Emit(ctx, actoviq.Event{Type: "tool.approval_expired", RunID: "x", Data: json.RawMessage(`{"call_id":"c"}`)})
	m.Emit(ctx, actoviq.Event{Type: "tool.approval_escalated", RunID: "x", Data: json.RawMessage(`{"call_id":"c"}`)})
	m.Emit(ctx, actoviq.Event{Type: "tool.approval_signed", RunID: "x", Data: json.RawMessage(`{"call_id":"c"}`)})
	m.RecordNotification(ctx, "delivered")

	s := ep.scrape(t)
	wantSample(t, s, 1, "actoviq_tool_calls_total", `effect="read"`, `outcome="committed"`)
	wantSample(t, s, 2, "actoviq_tool_calls_total", `effect="side-effect"`, `outcome="committed"`) // approved + queued
	wantSample(t, s, 1, "actoviq_tool_calls_total", `effect="side-effect"`, `outcome="rejected"`)
	wantSample(t, s, 1, "actoviq_approvals_total", `decision="approved"`)
	wantSample(t, s, 1, "actoviq_approvals_total", `decision="rejected"`)
	wantSample(t, s, 1, "actoviq_approvals_total", `decision="expired"`)
	wantSample(t, s, 1, "actoviq_approvals_total", `decision="escalated"`)
	wantSample(t, s, 1, "actoviq_approvals_total", `decision="signed"`)
	wantSample(t, s, 1, "actoviq_claims_total", `takeover="false"`)
	wantSample(t, s, 1, "actoviq_claim_duration_seconds_count")
	wantSample(t, s, 2, "actoviq_drives_ended_total", `status="interrupted"`)
	wantSample(t, s, 4, "actoviq_drives_ended_total", `status="completed"`)
	wantSample(t, s, 7, "actoviq_retention_removed_total")
	wantSample(t, s, 1, "actoviq_notifications_total", `outcome="delivered"`)
	wantSample(t, s, 2, "actoviq_runs", `status="interrupted"`)
	wantSample(t, s, 5, "actoviq_runs", `status="queued"`)
	wantSample(t, s, 2, "actoviq_inbox_items", `kind="approval"`)
	wantSample(t, s, 1200, "actoviq_inbox_oldest_age_seconds", `kind="approval"`)
	wantSample(t, s, 0, "actoviq_inbox_oldest_age_seconds", `kind="reconciliation"`)
	wantSample(t, s, 0, "actoviq_lease_takeovers_total")
	wantSample(t, s, 0, "actoviq_lease_lost_total")

	// The source is read once per SourceEvery, however often Prometheus
	// scrapes; the age grows with the clock.
	clk.Advance(30 * time.Second)
	s = ep.scrape(t)
	wantSample(t, s, 1230, "actoviq_inbox_oldest_age_seconds", `kind="approval"`)
	if reads != 1 {
		t.Errorf("source read %d times for two scrapes within SourceEvery, want 1", reads)
	}
	clk.Advance(time.Minute)
	ep.scrape(t)
	if reads != 2 {
		t.Errorf("source read %d times after SourceEvery passed, want 2", reads)
	}
}

// TestSourceErrorShowsNoGauge: a failing source leaves the gauges out (not
// stale values) and counts the failure.
func TestSourceErrorShowsNoGauge(t *testing.T) {
	t.Parallel()
	ep := serve(t)
	m, err := otelmetrics.New(ep.prom.MeterProvider(), &otelmetrics.Config{Source: func(context.Context) (*otelmetrics.Snapshot, error) {
		return nil, errors.New("store down")
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	s := ep.scrape(t)
	if _, ok := series(s, "actoviq_runs"); ok {
		t.Error("a gauge shown although its source failed")
	}
	wantSample(t, s, 1, "actoviq_gauges_errors_total")
	wantSample(t, s, 0, "actoviq_lease_lost_total") // present before the first loss
}

// renewGate lets a test hold a drive's heartbeat renewals (as if the
// process were frozen) and let them go again.
type renewGate struct {
	store.Store
	mu     sync.Mutex
	frozen bool
}

func (g *renewGate) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	g.mu.Lock()
	frozen := g.frozen
	g.mu.Unlock()
	if frozen {
		return nil, errors.New("frozen")
	}
	return g.Store.ClaimRenew(ctx, p)
}

func (g *renewGate) set(f bool) {
	g.mu.Lock()
	g.frozen = f
	g.mu.Unlock()
}

// TestTakeoverAndLeaseLost: a worker frozen mid-payment loses its lease;
// another worker takes the run over (counted as a takeover by the taker),
// and when the first wakes its heartbeat finds the claim gone (counted as
// a lost lease by the loser).
func TestTakeoverAndLeaseLost(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	shared := storemem.New(&storemem.Config{Clock: clk.Now})
	epA, epB := serve(t), serve(t)
	mA, err := otelmetrics.New(epA.prom.MeterProvider(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mB, err := otelmetrics.New(epB.prom.MeterProvider(), nil)
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		close(started)
		<-release
		return "paid", nil
	})
	agent := &actoviq.AgentSpec{ID: "billing", Model: "m", Tools: []tool.Tool{pay}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "p1", Name: "pay", Arguments: json.RawMessage(`{"amount":5}`)}}},
		scripted.Turn{Text: "done"})}

	gate := &renewGate{Store: shared}
	const ttl = 30 * time.Millisecond // heartbeats every 10 ms of real time; expiry follows clk
	first, err := actoviq.New(gate, &actoviq.Config{Clock: clk.Now, LeaseTTL: ttl, Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })
	if err := first.Register(agent); err != nil {
		t.Fatal(err)
	}
	id, err := first.Enqueue(t.Context(), agent, &actoviq.Input{Items: []item.Item{item.UserText("pay")}})
	if err != nil {
		t.Fatal(err)
	}
	lost := &signal{typ: actoviq.EvRunLeaseLost, ch: make(chan struct{})}
	ctxA, stopA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() {
		doneA <- first.Work(ctxA, &actoviq.WorkOptions{PollInterval: time.Millisecond, Grace: -1, Sinks: []actoviq.EventSink{mA, lost},
			OnDrive: func(string, *actoviq.RunResult, error) { stopA() }})
	}()
	<-started
	gate.set(true)         // the first worker freezes mid-payment
	clk.Advance(time.Hour) // its lease runs out

	second, err := actoviq.New(shared, &actoviq.Config{Clock: clk.Now, LeaseTTL: time.Hour, Holder: "second"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Close() })
	if err := second.Register(agent); err != nil {
		t.Fatal(err)
	}
	ctxB, stopB := context.WithCancel(t.Context())
	var resB *actoviq.RunResult
	doneB := make(chan error, 1)
	go func() {
		doneB <- second.Work(ctxB, &actoviq.WorkOptions{PollInterval: time.Millisecond, Sinks: []actoviq.EventSink{mB},
			OnDrive: func(_ string, res *actoviq.RunResult, _ error) { resB = res; stopB() }})
	}()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if resB == nil || resB.Status != actoviq.StatusInterrupted || resB.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("the takeover: %+v, want a reconciliation interruption", resB)
	}
	gate.set(false) // the first wakes: its next renewal is fenced out
	<-lost.ch
	close(release)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}

	a, b := epA.scrape(t), epB.scrape(t)
	wantSample(t, a, 1, "actoviq_claims_total", `takeover="false"`)
	wantSample(t, a, 1, "actoviq_lease_lost_total")
	wantSample(t, b, 1, "actoviq_claims_total", `takeover="true"`)
	wantSample(t, b, 1, "actoviq_lease_takeovers_total")
	wantSample(t, b, 1, "actoviq_drives_ended_total", `status="interrupted"`)
	wantSample(t, b, 0, "actoviq_lease_lost_total")
	info, err := second.Get(t.Context(), id)
	if err != nil || info.Status != actoviq.StatusInterrupted {
		t.Fatalf("run after both: %v %v", info, err)
	}
}

// signal is a sink that closes ch at the first event of type typ.
type signal struct {
	typ  string
	ch   chan struct{}
	once sync.Once
}

func (s *signal) Emit(_ context.Context, ev actoviq.Event) {
	if ev.Type == s.typ {
		s.once.Do(func() { close(s.ch) })
	}
}
