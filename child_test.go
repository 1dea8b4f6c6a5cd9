package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

func mustAgentTool(t *testing.T, child *actoviq.AgentSpec, opts *actoviq.AgentToolOptions) tool.Tool {
	t.Helper()
	at, err := actoviq.AgentTool(child, opts)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func childAgent(id string, p *scripted.Provider, tools ...tool.Tool) *actoviq.AgentSpec {
	return &actoviq.AgentSpec{ID: id, Instructions: "help", Provider: p, Model: "scripted-1", Tools: tools}
}

func ledgerKeys(t *testing.T, s *setup, runID string) map[string]string {
	t.Helper()
	entries, err := s.st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, en := range entries {
		out[en.CallID] = en.IdempotencyKey
	}
	return out
}

func TestAgentToolRunsChildRun(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	child := childAgent("payments", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":9}`)}},
		scripted.Turn{Text: "paid nine"}), pay)
	at := mustAgentTool(t, child, nil)
	if at.Spec().Effect != tool.SideEffect || at.Spec().Name != "payments" {
		t.Fatalf("agent tool spec %+v: want side-effect (the child's strongest)", at.Spec())
	}
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "payments", `{"input":"pay 9"}`)}},
		scripted.Turn{Text: "all done"}), at)
	var childEvents []string
	sink := actoviq.EventSinkFunc(func(ctx context.Context, ev actoviq.Event) {
		if ev.RunID == "p1.c1" && ev.ParentRunID == "p1" && ev.Seq > 0 {
			childEvents = append(childEvents, ev.Type)
		}
	})
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p1", Items: input("go").Items}, sink)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("parent: %+v %v", res, err)
	}
	if len(childEvents) == 0 || childEvents[0] != actoviq.EvRunStarted || childEvents[len(childEvents)-1] != actoviq.EvRunCompleted {
		t.Fatalf("the parent's sink saw the child's events %v, want run.started … run.completed", childEvents)
	}
	info, err := s.rt.Get(s.ctx, "p1.c1")
	if err != nil {
		t.Fatal(err)
	}
	if info.ParentID != "p1" || info.Status != actoviq.StatusCompleted || info.AgentID != "payments" {
		t.Fatalf("child run %+v", info)
	}
	if k := ledgerKeys(t, s, "p1.c1"); k["k1"] != "p1.c1:k1" {
		t.Fatalf("child keys %v", k)
	}
	pinfo, _ := s.rt.Get(s.ctx, "p1")
	if r := toolResults(t, pinfo)["c1"]; r.Content != "paid nine" || r.IsError {
		t.Fatalf("parent's result of the child call: %+v", r)
	}
	if pay.count() != 1 {
		t.Fatalf("%d payments", pay.count())
	}
}

func TestAgentToolEffectAndRetrySafeChecks(t *testing.T) {
	p := scripted.New(scripted.Turn{Text: "x"})
	reader := childAgent("reader", p, &payTool{name: "look", effect: tool.Read})
	writer := childAgent("writer", p, &payTool{name: "look", effect: tool.Read}, &payTool{name: "put", effect: tool.IdempotentWrite})
	payer := childAgent("payer", p, &payTool{name: "look", effect: tool.Read}, &payTool{name: "pay"})
	if e := mustAgentTool(t, reader, nil).Spec().Effect; e != tool.Read {
		t.Fatalf("reader's agent tool is %s, want read", e)
	}
	if e := mustAgentTool(t, writer, &actoviq.AgentToolOptions{Failure: actoviq.RetrySafe}).Spec().Effect; e != tool.IdempotentWrite {
		t.Fatalf("writer's agent tool is %s, want idempotent-write", e)
	}
	side := tool.SideEffect
	if e := mustAgentTool(t, reader, &actoviq.AgentToolOptions{Effect: &side}).Spec().Effect; e != tool.SideEffect {
		t.Fatalf("a more conservative declared effect was not kept: %s", e)
	}
	read := tool.Read
	if _, err := actoviq.AgentTool(writer, &actoviq.AgentToolOptions{Effect: &read}); err == nil {
		t.Fatal("a declared effect weaker than the child's was accepted")
	}
	_, err := actoviq.AgentTool(payer, &actoviq.AgentToolOptions{Failure: actoviq.RetrySafe})
	var ru *actoviq.RetryUnsafeError
	if !errors.Is(err, actoviq.ErrRetryUnsafe) || !errors.As(err, &ru) || ru.Tool != "pay" {
		t.Fatalf("retry-safe for a side-effect child: %v, want RetryUnsafeError naming pay", err)
	}
	rt, _ := actoviq.New(storemem.New(nil), nil)
	if _, err := rt.Spawn(context.Background(), "nope", payer, nil, &actoviq.SpawnOptions{Failure: actoviq.RetrySafe}); !errors.Is(err, actoviq.ErrRetryUnsafe) {
		t.Fatalf("Spawn retry-safe for a side-effect child: %v", err)
	}
}

// A child that stops for an approval stops its parent, which shows the
// child's interruption with the child's run id. The operator decides on
// the parent; resuming the parent resumes the child; keys never change.
func TestChildApprovalSurfacesOnParent(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	child := childAgent("payments", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
		scripted.Turn{Text: "paid"}), pay)
	child.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "payments", `{"input":"pay 3"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p2", Items: input("go").Items})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
		t.Fatalf("parent %+v", res)
	}
	in := res.Interruptions[0]
	if in.RunID != "p2.c1" || in.CallID != "k1" || in.Kind != actoviq.InterruptApproval || in.IdempotencyKey != "p2.c1:k1" {
		t.Fatalf("parent's interruption %+v: want the child's call k1 of run p2.c1", in)
	}
	info, _ := s.rt.Get(s.ctx, "p2")
	if len(info.Interruptions) != 1 || info.Interruptions[0].RunID != "p2.c1" {
		t.Fatalf("Get shows %+v", info.Interruptions)
	}
	keysBefore := ledgerKeys(t, s, "p2.c1")
	// Decide on the parent, with the child's call id.
	res, err = s.rt.Resume(s.ctx, parent, "p2", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume parent: %+v %v", res, err)
	}
	if pay.count() != 1 || !strings.HasPrefix(pay.calls[0], "p2.c1:k1#1") {
		t.Fatalf("payments %v", pay.calls)
	}
	if after := ledgerKeys(t, s, "p2.c1"); after["k1"] != keysBefore["k1"] {
		t.Fatalf("child keys changed: %v → %v", keysBefore, after)
	}
	if k := ledgerKeys(t, s, "p2"); k["c1"] != "p2:c1" {
		t.Fatalf("parent keys %v", k)
	}
}

func TestChildFailurePolicies(t *testing.T) {
	for _, pol := range []actoviq.ChildFailure{actoviq.FailFast, actoviq.Collect} {
		t.Run(string(pol), func(t *testing.T) {
			s := newSetup(t)
			// The child's script is empty: its first model call fails for good.
			child := childAgent("broken", scripted.New())
			parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "broken", `{"input":"x"}`)}},
				scripted.Turn{Text: "carried on"}), mustAgentTool(t, child, &actoviq.AgentToolOptions{Failure: pol}))
			res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p3", Items: input("go").Items})
			if err != nil {
				t.Fatal(err)
			}
			cinfo, _ := s.rt.Get(s.ctx, "p3.c1")
			if cinfo.Status != actoviq.StatusFailed {
				t.Fatalf("child %s", cinfo.Status)
			}
			switch pol {
			case actoviq.FailFast:
				if res.Status != actoviq.StatusFailed || res.Error == nil || res.Error.Code != "child_failed" {
					t.Fatalf("fail-fast parent: %+v", res)
				}
				// A resume of the failed parent does not go on.
				again, err := s.rt.Resume(s.ctx, parent, "p3", nil)
				if err != nil || again.Status != actoviq.StatusFailed {
					t.Fatalf("resume after fail-fast: %+v %v", again, err)
				}
			case actoviq.Collect:
				info, _ := s.rt.Get(s.ctx, "p3")
				r := toolResults(t, info)["c1"]
				if res.Status != actoviq.StatusCompleted || !r.IsError || !strings.Contains(r.Content, "p3.c1 failed") {
					t.Fatalf("collect parent: %+v, result %+v", res, r)
				}
			}
		})
	}
}

// flakyWrite is an idempotent write whose first execution loses its outcome.
type flakyWrite struct{ *payTool }

func (f flakyWrite) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	res, _ := f.payTool.Call(ctx, args)
	if f.count() == 1 {
		return tool.Result{}, tool.ErrOutcomeUnknown
	}
	return res, nil
}

// retry-safe resumes the child's own checkpoint: same child run id, same
// call id, same key, a new attempt.
func TestChildRetrySafeResumesSameCheckpoint(t *testing.T) {
	s := newSetup(t)
	put := &payTool{name: "put", effect: tool.IdempotentWrite}
	child := childAgent("writer", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("w1", "put", `{"amount":1}`)}},
		scripted.Turn{Text: "written"}), flakyWrite{put})
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "writer", `{"input":"write"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, &actoviq.AgentToolOptions{Failure: actoviq.RetrySafe, Backoff: time.Millisecond}))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p4", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("parent %+v %v", res, err)
	}
	put.mu.Lock()
	calls := append([]string(nil), put.calls...)
	put.mu.Unlock()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "p4.c1:w1#1") || !strings.HasPrefix(calls[1], "p4.c1:w1#2") {
		t.Fatalf("executions %v: want the same key, attempts 1 and 2", calls)
	}
	runs, _ := s.st.RunList(s.ctx, &store.RunListParams{Tenant: "default", ParentID: "p4"})
	if len(runs) != 1 || runs[0].ID != "p4.c1" {
		t.Fatalf("children of p4: %d, want one (a retry is not a new child)", len(runs))
	}
}

func TestChildBudget(t *testing.T) {
	s := newSetup(t)
	child := childAgent("helper", scripted.New(scripted.Turn{Text: "ok"}))
	parent := agent(scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "helper", `{"input":"a"}`)}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c2", "helper", `{"input":"b"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, &actoviq.AgentToolOptions{Budget: actoviq.Budget{MaxChildren: 1}}))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p5", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("parent %+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "p5")
	r := toolResults(t, info)
	if r["c1"].IsError || !r["c2"].IsError || !strings.Contains(r["c2"].Content, "not started") {
		t.Fatalf("results %+v: want the second child refused by the budget", r)
	}
	if _, err := s.rt.Get(s.ctx, "p5.c2"); !errors.Is(err, actoviq.ErrNotFound) {
		t.Fatalf("a refused child has a run: %v", err)
	}
}

// Spawn queues a background child; a worker drives it; the parent waits.
// Cancelling a parent cancels its children unless they are abandoned.
func TestSpawnWaitAndParentClose(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, _ := actoviq.New(st, nil)
	root := agent(scripted.New(scripted.Turn{Text: "root"}))
	if _, err := rt.Run(ctx, root, &actoviq.Input{RunID: "root", Items: input("x").Items}); err != nil {
		t.Fatal(err)
	}
	child := childAgent("bg", scripted.New(scripted.Turn{Text: "background answer"}))
	id, err := rt.Spawn(ctx, "root", child, &actoviq.Input{Items: input("work").Items}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := rt.Get(ctx, id)
	if info.Status != actoviq.StatusQueued || info.ParentID != "root" || info.Revision != 1 {
		t.Fatalf("spawned %+v", info)
	}
	startWorkers(t, []store.Store{st}, 1, child, actoviq.WorkOptions{})
	res, err := rt.Wait(ctx, id)
	if err != nil || res.Status != actoviq.StatusCompleted || res.Output[0].Text != "background answer" {
		t.Fatalf("wait: %+v %v", res, err)
	}

	// Parent-close: a second parent, still going, with two queued children.
	if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "default", ID: "p6", AgentID: "payer",
		Status: store.RunInterrupted, Checkpoint: []byte(`{"v":1,"items":[],"turn":0,"usage":{},"trace_id":"t","policy_version":""}`)}}); err != nil {
		t.Fatal(err)
	}
	other := childAgent("nobody-runs-me", scripted.New(scripted.Turn{Text: "x"}))
	cancelled, _ := rt.Spawn(ctx, "p6", other, &actoviq.Input{RunID: "p6-a"}, nil)
	abandoned, _ := rt.Spawn(ctx, "p6", other, &actoviq.Input{RunID: "p6-b"}, &actoviq.SpawnOptions{ParentClose: actoviq.ParentCloseAbandon})
	if err := rt.Cancel(ctx, "p6"); err != nil {
		t.Fatal(err)
	}
	a, _ := rt.Get(ctx, cancelled)
	b, _ := rt.Get(ctx, abandoned)
	if a.Status != actoviq.StatusCancelled || b.Status != actoviq.StatusQueued {
		t.Fatalf("after cancelling the parent: cancel-policy child %s, abandon-policy child %s", a.Status, b.Status)
	}
}

// A retry-safe background child that stops for a started idempotent write
// is queued again by its worker with a re-execute (same key), and
// completes.
func TestSpawnRetrySafeBackground(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, _ := actoviq.New(st, nil)
	if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
		t.Fatal(err)
	}
	put := &payTool{name: "put", effect: tool.IdempotentWrite}
	child := childAgent("writer", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("w1", "put", `{"amount":1}`)}},
		scripted.Turn{Text: "written"}), flakyWrite{put})
	id, err := rt.Spawn(ctx, "root", child, &actoviq.Input{RunID: "root.bg"}, &actoviq.SpawnOptions{Failure: actoviq.RetrySafe})
	if err != nil {
		t.Fatal(err)
	}
	startWorkers(t, []store.Store{st}, 1, child, actoviq.WorkOptions{})
	res, err := rt.Wait(ctx, id)
	for err == nil && res.Status == actoviq.StatusInterrupted {
		t.Fatalf("the retry-safe child stopped: %+v", res.Interruptions)
	}
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("child: %+v %v", res, err)
	}
	put.mu.Lock()
	defer put.mu.Unlock()
	if len(put.calls) != 2 || !strings.HasPrefix(put.calls[0], "root.bg:w1#1") || !strings.HasPrefix(put.calls[1], "root.bg:w1#2") {
		t.Fatalf("executions %v: want the same key, attempts 1 and 2", put.calls)
	}
}

// A background child a worker drives keeps to its tree's budget: the
// parent spent 2 of the tree's 3 turns, so the child's second model call
// is refused and it fails with code budget.
func TestSpawnedChildKeepsTreeBudget(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, _ := actoviq.New(st, nil)
	root := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "root"}), &payTool{name: "pay"})
	if _, err := rt.Run(ctx, root, &actoviq.Input{RunID: "root"}); err != nil { // 2 turns
		t.Fatal(err)
	}
	put := &payTool{name: "put", effect: tool.IdempotentWrite}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("w1", "put", `{"amount":1}`)}}, scripted.Turn{Text: "never"})
	child := childAgent("bg", p, put)
	id, err := rt.Spawn(ctx, "root", child, nil, &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxTurns: 3}})
	if err != nil {
		t.Fatal(err)
	}
	startWorkers(t, []store.Store{st}, 1, child, actoviq.WorkOptions{})
	res, err := rt.Wait(ctx, id)
	if err != nil || res.Status != actoviq.StatusFailed || res.Error == nil || res.Error.Code != "budget" || p.Calls() != 1 {
		t.Fatalf("child: %+v %v, %d model calls; want failed with code budget after one model call", res, err, p.Calls())
	}
	if _, err := rt.Spawn(ctx, "root", child, nil, &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxTurns: 3}}); err == nil {
		t.Fatal("Spawn into a tree whose budget is spent was accepted")
	}
}
