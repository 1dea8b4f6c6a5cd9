package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// payTool is a side-effect tool that counts its executions and the keys it
// saw. Its probe answers what probeAnswer says.
type payTool struct {
	name     string
	effect   tool.Effect
	mu       sync.Mutex
	calls    []string // key#attempt per execution
	fail     error
	block    chan struct{}
	started  chan struct{}
	probe    *tool.Probe
	probeErr error
	signal   sync.Once
}

func (p *payTool) Spec() tool.Spec {
	return tool.Spec{Name: p.name, Description: "pays", Effect: p.effect,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"api_key":{"type":"string"}},"required":["amount"]}`)}
}

func (p *payTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	p.mu.Lock()
	p.calls = append(p.calls, fmt.Sprintf("%s#%d %s", tool.IdempotencyKey(ctx), tool.Attempt(ctx), args))
	started, block, fail := p.started, p.block, p.fail
	p.mu.Unlock()
	if started != nil {
		p.signal.Do(func() { close(started) }) // the first execution only
	}
	if block != nil {
		<-block
	}
	if fail != nil {
		return tool.Result{}, fail
	}
	var in struct{ Amount any }
	_ = json.Unmarshal(args, &in)
	return tool.Result{Content: fmt.Sprintf("paid %v", in.Amount)}, nil
}

// set changes the tool's behaviour for later executions.
func (p *payTool) set(fn func(p *payTool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *payTool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

type probingPay struct{ *payTool }

func (p probingPay) Reconcile(ctx context.Context, key string, args json.RawMessage) (tool.Probe, error) {
	if p.probe == nil {
		return tool.Probe{}, p.probeErr
	}
	return *p.probe, p.probeErr
}

type setup struct {
	ctx   context.Context
	st    store.Store
	rt    *actoviq.Runtime
	clock *fakeClock
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	st := storemem.New(&storemem.Config{Clock: clock.Now})
	s := &setup{ctx: context.Background(), st: st, clock: clock}
	s.rt = s.runtime(t)
	return s
}

// runtime returns a fresh runtime on the same store: a "restarted process".
func (s *setup) runtime(t *testing.T) *actoviq.Runtime {
	t.Helper()
	var n atomic.Int64
	rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, LeaseTTL: time.Minute,
		NewID: func() string { return fmt.Sprintf("id%04d-%p", n.Add(1), &n) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func agent(p *scripted.Provider, tools ...tool.Tool) *actoviq.AgentSpec {
	return &actoviq.AgentSpec{ID: "payer", Instructions: "pay", Provider: p, Model: "scripted-1", Tools: tools}
}

func call(id, name, args string) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func input(text string) *actoviq.Input {
	return &actoviq.Input{Items: []item.Item{item.UserText(text)}}
}

func toolResults(t *testing.T, info *actoviq.RunInfo) map[string]item.ToolResult {
	t.Helper()
	out := map[string]item.ToolResult{}
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			if _, dup := out[it.ToolResult.CallID]; dup {
				t.Fatalf("two results for call %s in the transcript", it.ToolResult.CallID)
			}
			out[it.ToolResult.CallID] = *it.ToolResult
		}
	}
	return out
}

func TestRunSideEffectTool(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("pay 5")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "done" {
		t.Fatalf("result %+v", res)
	}
	if pay.count() != 1 || pay.calls[0] != `r1:c1#1 {"amount":5}` {
		t.Fatalf("tool calls %v", pay.calls)
	}
	info, err := s.rt.Get(s.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted || info.Ledger[0].IdempotencyKey != "r1:c1" ||
		info.Ledger[0].Attempt != 1 || info.Ledger[0].Effect != "side-effect" || info.Ledger[0].Revision != 2 { // created started with the response (drive_fold.go), committed
		t.Fatalf("ledger %+v", info.Ledger[0])
	}
	if r := toolResults(t, info)["c1"]; r.Content != "paid 5" || r.IsError {
		t.Fatalf("result %+v", r)
	}
	// The run id is never re-run.
	_, err = s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"})
	if !errors.Is(err, actoviq.ErrRunExists) || pay.count() != 1 {
		t.Fatalf("re-run of an id: %v, %d calls", err, pay.count())
	}
	// Events have a gapless per-run sequence.
	evs, _ := s.st.EventList(s.ctx, &store.EventListParams{Tenant: "default", RunID: "r1"})
	var types []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		types = append(types, ev.Type)
	}
	want := "run.started model.response tool.prepared tool.started tool.committed model.response run.completed"
	if strings.Join(types, " ") != want {
		t.Fatalf("events\n got %s\nwant %s", strings.Join(types, " "), want)
	}
}

func approvalAgent(p *scripted.Provider, tools ...tool.Tool) *actoviq.AgentSpec {
	a := agent(p, tools...)
	a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	return a
}

func TestApprovalSurvivesRestart(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, approvalAgent(p, pay), &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("pay")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptApproval ||
		res.Interruptions[0].IdempotencyKey != "r1:c1" || pay.count() != 0 {
		t.Fatalf("want an approval interruption: %+v", res)
	}
	// A new process approves and resumes.
	rt2 := s.runtime(t)
	if err := rt2.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice", Reason: "looks right"}); err != nil {
		t.Fatal(err)
	}
	res, err = s.runtime(t).Resume(s.ctx, approvalAgent(p, pay), "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("after approval: %+v, %d calls", res, pay.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	en := info.Ledger[0]
	if en.Approval == nil || en.Approval.By != "alice" || en.Approval.Reason != "looks right" || en.Approval.ArgsDigest != en.ArgsDigest ||
		en.Approval.PolicyVersion == "" || en.Approval.Attempt != 1 || len(en.Approval.Evidence) == 0 {
		t.Fatalf("approval record %+v", en.Approval)
	}
	// A second resume does nothing more.
	if res, err = s.rt.Resume(s.ctx, approvalAgent(p, pay), "r1", nil); err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("resume of a completed run: %+v %v", res, err)
	}
}

func TestRejectFeedsErrorResult(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":500}`)}}, scripted.Turn{Text: "ok, not paid"})
	a := approvalAgent(p, pay)
	if res, _ := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); res.Status != actoviq.StatusInterrupted {
		t.Fatalf("status %s", res.Status)
	}
	res, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReject, By: "bob", Reason: "too much"}}})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	r := toolResults(t, info)["c1"]
	if res.Status != actoviq.StatusCompleted || pay.count() != 0 || !r.IsError || !strings.Contains(r.Content, "rejected by bob") || !strings.Contains(r.Content, "too much") {
		t.Fatalf("reject: %+v result %+v calls %d", res, r, pay.count())
	}
}

func TestApprovalBindsToPolicyVersionAndArgs(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// Approving twice is refused: the call no longer awaits approval.
	err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"})
	if !errors.Is(err, actoviq.ErrDecision) {
		t.Fatalf("second approval: %v", err)
	}
	// A changed policy changes the agent digest: resume refuses it.
	b := approvalAgent(p, pay)
	b.Approval.Effects = append(b.Approval.Effects, tool.Read)
	if _, err := s.rt.Resume(s.ctx, b, "r1", nil); !errors.Is(err, actoviq.ErrDigestMismatch) {
		t.Fatalf("changed policy: %v", err)
	}
	if pay.count() != 0 {
		t.Fatal("tool ran")
	}
}

func TestBatchInterruptionKeepsOtherCalls(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	look := &payTool{name: "lookup", effect: tool.Read}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
		call("c1", "pay", `{"amount":5}`), call("c2", "lookup", `{"amount":1}`), call("c3", "lookup", `{"amount":2}`)}},
		scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay, look)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	// The reads come after the call that waits for approval: they wait
	// too (docs/design.md#the-ledger: calls run in the model's order).
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || look.count() != 0 || pay.count() != 0 {
		t.Fatalf("batch: %+v reads %d pays %d", res, look.count(), pay.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	for _, en := range info.Ledger[1:] {
		if en.State != store.LedgerPrepared {
			t.Fatalf("a call after the interrupted one is %s, want prepared", en.State)
		}
	}
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
	info, _ = s.rt.Get(s.ctx, "r1")
	var order []string
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			order = append(order, it.ToolResult.CallID)
		}
	}
	if strings.Join(order, ",") != "c1,c2,c3" || look.count() != 2 || pay.count() != 1 {
		t.Fatalf("results in order %v; reads %d pays %d", order, look.count(), pay.count())
	}
}

// errUnknownOutcome makes a live call end with an unknown outcome.
var errUnknownOutcome = fmt.Errorf("connection reset after the request was sent: %w", tool.ErrOutcomeUnknown)

func TestUnknownSideEffectNeedsReconciliation(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptReconciliation || res.Interruptions[0].State != "unknown" {
		t.Fatalf("%+v", res)
	}
	// Resuming without a decision never runs it again.
	for range 3 {
		res, err = s.runtime(t).Resume(s.ctx, a, "r1", nil)
		if err != nil || res.Status != actoviq.StatusInterrupted || pay.count() != 1 {
			t.Fatalf("resume without decision: %+v %v, %d calls", res, err, pay.count())
		}
	}
	// Re-execute: same key, next attempt.
	pay.set(func(p *payTool) { p.fail = nil })
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops", Reason: "bank says no payment"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("re-execute: %+v %v", res, err)
	}
	if pay.count() != 2 || !strings.HasPrefix(pay.calls[1], "r1:c1#2 ") || !strings.HasPrefix(pay.calls[0], "r1:c1#1 ") {
		t.Fatalf("calls %v", pay.calls)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if en := info.Ledger[0]; en.Attempt != 2 || en.Resolution == nil || en.Resolution.Kind != "re-execute" || en.Resolution.By != "ops" {
		t.Fatalf("entry %+v resolution %+v", en, en.Resolution)
	}
}

func TestOperatorSettlesCommittedAndFailed(t *testing.T) {
	for _, kind := range []actoviq.DecisionKind{actoviq.DecideCommitted, actoviq.DecideFailed} {
		t.Run(string(kind), func(t *testing.T) {
			s := newSetup(t)
			pay := &payTool{name: "pay", fail: errUnknownOutcome}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
			a := agent(p, pay)
			s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
			dec := actoviq.Decision{CallID: "c1", Kind: kind, By: "ops", Result: "payment p-77 exists", Message: "no such payment"}
			res, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{dec}})
			if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
				t.Fatalf("%+v %v calls %d", res, err, pay.count())
			}
			info, _ := s.rt.Get(s.ctx, "r1")
			r := toolResults(t, info)["c1"]
			if kind == actoviq.DecideCommitted && (r.Content != "payment p-77 exists" || r.IsError) {
				t.Fatalf("committed result %+v", r)
			}
			if kind == actoviq.DecideFailed && (r.Content != "no such payment" || !r.IsError) {
				t.Fatalf("failed result %+v", r)
			}
		})
	}
}

func TestProbeSettlesOrEscalates(t *testing.T) {
	t.Run("committed", func(t *testing.T) {
		s := newSetup(t)
		pay := probingPay{&payTool{name: "pay", fail: errUnknownOutcome,
			probe: &tool.Probe{Outcome: tool.ProbeCommitted, Result: &tool.Result{Content: "found payment"}, Evidence: "GET /payments?key=r1:c1 → 1"}}}
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
		a := agent(p, pay)
		res, _ := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
		if res.Status != actoviq.StatusInterrupted {
			t.Fatalf("live unknown: %+v", res)
		}
		res, err := s.rt.Resume(s.ctx, a, "r1", nil)
		if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
			t.Fatalf("%+v %v", res, err)
		}
		info, _ := s.rt.Get(s.ctx, "r1")
		if en := info.Ledger[0]; en.Resolution == nil || en.Resolution.Kind != "probe" || !strings.Contains(string(en.Resolution.Evidence), "r1:c1") {
			t.Fatalf("resolution %+v", en.Resolution)
		}
		if r := toolResults(t, info)["c1"]; r.Content != "found payment" {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		s := newSetup(t)
		pay := probingPay{&payTool{name: "pay", fail: errUnknownOutcome,
			probe: &tool.Probe{Outcome: tool.ProbeUnknown, Evidence: "bank API timed out"}}}
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
		a := agent(p, pay)
		s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
		res, err := s.rt.Resume(s.ctx, a, "r1", nil)
		if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Probe == nil ||
			res.Interruptions[0].Probe.Evidence != "bank API timed out" || pay.count() != 1 {
			t.Fatalf("%+v %v", res, err)
		}
		info, _ := s.rt.Get(s.ctx, "r1")
		if len(info.Interruptions) != 1 || info.Interruptions[0].Probe.Outcome != tool.ProbeUnknown {
			t.Fatalf("open interruptions %+v", info.Interruptions)
		}
	})
}

func TestReadWithUnknownOutcomeGetsErrorResult(t *testing.T) {
	s := newSetup(t)
	look := &payTool{name: "lookup", effect: tool.Read, fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, look), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted || look.count() != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if r := toolResults(t, info)["c1"]; !r.IsError || !strings.Contains(r.Content, "unknown") || !strings.Contains(r.Content, "not retried") {
		t.Fatalf("result %+v", r)
	}
}

func TestInvalidArgumentsAndUnknownTool(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":"five"}`), call("c2", "nope", `{}`)}},
		scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	rs := toolResults(t, info)
	if !rs["c1"].IsError || !strings.Contains(rs["c1"].Content, "amount") || !rs["c2"].IsError {
		t.Fatalf("results %+v", rs)
	}
}

func TestDuplicateCallIDs(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	// Same id, same arguments: one call.
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`), call("c1", "pay", `{"amount": 5}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "same"})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("same args: %+v %v calls %d", res, err, pay.count())
	}
	// Same id, different arguments: a model-behaviour error, nothing runs.
	p = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`), call("c1", "pay", `{"amount":6}`)}})
	res, err = s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "diff"})
	if err != nil || res.Status != actoviq.StatusFailed || res.Error.Code != "model_behavior" || pay.count() != 1 {
		t.Fatalf("different args: %+v %v calls %d", res, err, pay.count())
	}
	// A call id reused in a later turn gets a ledger-assigned id.
	p = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":2}`)}}, scripted.Turn{Text: "done"})
	res, err = s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "reuse"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("reuse: %+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "reuse")
	if len(info.Ledger) != 2 || info.Ledger[0].IdempotencyKey == info.Ledger[1].IdempotencyKey {
		t.Fatalf("two logical calls share a key: %+v", info.Ledger)
	}
}

func TestResumeRefusals(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	a.Limits.RunTimeout = time.Hour
	s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})

	// The waiting call's tool loses its side-effect status: refused.
	changed := approvalAgent(p, &payTool{name: "pay", effect: tool.IdempotentWrite})
	changed.Limits.RunTimeout = time.Hour
	changed.Instructions = "pay twice"
	if _, err := s.rt.Resume(s.ctx, changed, "r1", nil); !errors.Is(err, actoviq.ErrAgentChanged) || !errors.Is(err, actoviq.ErrDigestMismatch) {
		t.Fatalf("agent change: %v", err)
	}
	// Another live holder.
	if _, err := s.st.ClaimAcquire(s.ctx, &store.ClaimAcquireParams{Tenant: "default", Key: store.RunClaimKey("r1"), Holder: "other", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "x"}}})
	var held *actoviq.RunHeldError
	if !errors.Is(err, actoviq.ErrRunHeld) || !errors.As(err, &held) || held.Claim.Holder != "other" {
		t.Fatalf("held: %v", err)
	}
	// Past the deadline: cancelled, ledger untouched.
	s.clock.Advance(2 * time.Hour)
	before, _ := s.rt.Get(s.ctx, "r1")
	res, err := s.rt.Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusCancelled || res.Error.Code != "deadline" {
		t.Fatalf("deadline: %+v %v", res, err)
	}
	after, _ := s.rt.Get(s.ctx, "r1")
	if after.Ledger[0].Revision != before.Ledger[0].Revision || after.Ledger[0].State != store.LedgerAwaitingApproval || pay.count() != 0 {
		t.Fatalf("ledger touched: %+v", after.Ledger[0])
	}
	if _, err := s.rt.Get(s.ctx, "missing"); !errors.Is(err, actoviq.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
}

func TestRacingResumes(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "x"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
		done <- err
	}()
	<-pay.started
	_, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if !errors.Is(err, actoviq.ErrRunHeld) {
		t.Fatalf("second worker: %v", err)
	}
	close(pay.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pay.count() != 1 {
		t.Fatalf("%d executions", pay.count())
	}
}

func TestStaleEpochCannotCommit(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	done := make(chan error, 1)
	go func() {
		_, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
		done <- err
	}()
	<-pay.started
	// The lease expires (the worker looks dead) and another worker takes over.
	s.clock.Advance(2 * time.Minute)
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	// The old worker's tool returns; its commit is fenced out.
	close(pay.block)
	err = <-done
	if !errors.Is(err, actoviq.ErrFenced) {
		t.Fatalf("stale worker: %v", err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Ledger[0].State != store.LedgerStarted || pay.count() != 1 {
		t.Fatalf("ledger %+v", info.Ledger[0])
	}
}

func TestRecoveryPolicyRerunsReads(t *testing.T) {
	s := newSetup(t)
	look := &payTool{name: "lookup", effect: tool.Read, block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, look)
	a.Recovery = actoviq.RecoveryPolicy{RerunReads: true}
	go s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	first := look.block
	<-look.started
	s.clock.Advance(2 * time.Minute) // the first worker "died" while the read ran
	look.set(func(p *payTool) { p.block = nil })
	defer close(first)
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	look.mu.Lock()
	calls := append([]string(nil), look.calls...)
	look.mu.Unlock()
	if len(calls) != 2 || !strings.HasPrefix(calls[1], "r1:c1#2 ") {
		t.Fatalf("calls %v", calls)
	}
}

func TestRedaction(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5,"api_key":"sk-live-123"}`)}}, scripted.Turn{Text: "done"})
	var seen []string
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) { seen = append(seen, string(ev.Data)) })
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"}, sink)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(pay.calls[0], "sk-live-123") {
		t.Fatalf("the tool must get the real argument: %v", pay.calls)
	}
	run, _ := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r1"})
	led, _ := s.st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: "r1"})
	evs, _ := s.st.EventList(s.ctx, &store.EventListParams{Tenant: "default", RunID: "r1"})
	all := string(run.Checkpoint) + string(led[0].Args) + strings.Join(seen, "")
	for _, it := range run.Log {
		all += string(it)
	}
	for _, ev := range evs {
		all += string(ev.Data)
	}
	if strings.Contains(all, "sk-live-123") || !strings.Contains(string(led[0].Args), "[REDACTED]") {
		t.Fatalf("secret persisted or emitted: %s", all)
	}
	if led[0].ArgsDigest == "" {
		t.Fatal("no digest")
	}
}

// A secret in a tool's arguments that has no secret key of its own, the
// value after a command-line flag, is stored redacted, as are a wallet's
// recovery words; the tool still gets them.
func TestRedactionOfFlagValuesAndRecoveryWords(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	args := `{"amount":5,"cmd":"deploy --token tk-flag-1 --env prod","argv":["login","--password","pw-argv-2"],` +
		`"mnemonic":"abandon ability able","seed_phrase":"zoo zebra zone"}`
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", args)}}, scripted.Turn{Text: "done"})
	var seen []string
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) { seen = append(seen, string(ev.Data)) })
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"}, sink)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	secrets := []string{"tk-flag-1", "pw-argv-2", "abandon ability", "zoo zebra"}
	for _, sec := range secrets {
		if !strings.Contains(pay.calls[0], sec) {
			t.Fatalf("the tool must get the real argument %q: %v", sec, pay.calls)
		}
	}
	info, err := s.rt.Get(s.ctx, "r1")
	if err != nil || len(info.Ledger) != 1 {
		t.Fatalf("Get: %+v %v", info, err)
	}
	stored := string(info.Ledger[0].Args)
	for _, want := range []string{`"deploy --token [REDACTED] --env prod"`, `["login","--password","[REDACTED]"]`, `"mnemonic":"[REDACTED]"`, `"seed_phrase":"[REDACTED]"`} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored arguments %s lack %s", stored, want)
		}
	}
	run, _ := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: store.DefaultTenant, ID: "r1"})
	evs, _ := s.st.EventList(s.ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r1"})
	all := stored + string(run.Checkpoint) + strings.Join(seen, "")
	for _, it := range run.Log {
		all += string(it)
	}
	for _, ev := range evs {
		all += string(ev.Data)
	}
	for _, sec := range secrets {
		if strings.Contains(all, sec) {
			t.Errorf("secret %q persisted or emitted", sec)
		}
	}
}

func TestSessions(t *testing.T) {
	s := newSetup(t)
	p := scripted.New(scripted.Turn{Text: "hello"}, scripted.Turn{Text: "again"})
	a := agent(p)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("hi")}})
	if err != nil || res.Output[0].Text != "hello" {
		t.Fatalf("%+v %v", res, err)
	}
	// The second run sees the history, so the script answers turn 2.
	res, err = s.rt.Run(s.ctx, a, &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("hi again")}})
	if err != nil || res.Output[0].Text != "again" {
		t.Fatalf("%+v %v", res, err)
	}
	st, _ := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s1"})
	if st.Revision != 4 {
		t.Fatalf("session revision %d, want 4", st.Revision)
	}
	// A run that holds the session makes a concurrent one fail, typed.
	block := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p2 := scripted.New(scripted.Turn{}, scripted.Turn{}, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "x"})
	done := make(chan error, 1)
	go func() {
		_, err := s.rt.Run(s.ctx, agent(p2, block), &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("3")}})
		done <- err
	}()
	<-block.started
	_, err = s.rt.Run(s.ctx, a, &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("4")}})
	if !errors.Is(err, actoviq.ErrSessionBusy) {
		t.Fatalf("concurrent session run: %v", err)
	}
	close(block.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestStreamAndCancel(t *testing.T) {
	s := newSetup(t)
	p := scripted.New(scripted.Turn{Text: "one two three"})
	var deltas []string
	var last string
	for ev, err := range s.rt.Stream(s.ctx, agent(p), input("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "model.text_delta" {
			var d struct{ Delta string }
			json.Unmarshal(ev.Data, &d)
			deltas = append(deltas, d.Delta)
		}
		last = ev.Type
	}
	if strings.Join(deltas, "") != "one two three" || last != "run.completed" {
		t.Fatalf("deltas %q last %s", deltas, last)
	}
	// Cancel a run that nobody drives.
	pay := &payTool{name: "pay"}
	p = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}})
	s.rt.Run(s.ctx, approvalAgent(p, pay), &actoviq.Input{RunID: "r1"})
	if err := s.rt.Cancel(s.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Status != actoviq.StatusCancelled {
		t.Fatalf("status %s", info.Status)
	}
}

func TestParallelReadsAreBoundedAndLedgered(t *testing.T) {
	s := newSetup(t)
	var running, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	look := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read}, func(ctx context.Context, in struct{ N int }) (int, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 2 {
			once.Do(func() { close(release) }) // two run at once: let everyone go
		}
		<-release
		running.Add(-1)
		return in.N, nil
	})
	var calls []scripted.ToolCall
	for i := range 6 {
		calls = append(calls, call(fmt.Sprintf("c%d", i), "lookup", fmt.Sprintf(`{"N":%d}`, i)))
	}
	p := scripted.New(scripted.Turn{ToolCalls: calls}, scripted.Turn{Text: "done"})
	a := agent(p, look)
	a.Limits.ReadParallelism = 2
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if peak.Load() != 2 {
		t.Fatalf("peak parallelism %d, want 2", peak.Load())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if len(info.Ledger) != 6 {
		t.Fatalf("%d ledger entries", len(info.Ledger))
	}
	for i, en := range info.Ledger {
		if en.State != store.LedgerCommitted || en.Attempt != 1 || en.CallID != fmt.Sprintf("c%d", i) {
			t.Fatalf("entry %d: %+v", i, en)
		}
	}
}
