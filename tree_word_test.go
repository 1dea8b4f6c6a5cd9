package actoviq_test

// Children, cancellation and workers keep their word (issue 23): each test
// here failed on the code before its fix.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// gateModel answers from its script, but its turn `at` waits until open
// is closed (or the drive's context ends).
type gateModel struct {
	*scripted.Provider
	at      int
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate(at int, turns ...scripted.Turn) *gateModel {
	return &gateModel{Provider: scripted.New(turns...), at: at, entered: make(chan struct{}), open: make(chan struct{})}
}

func (m *gateModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if scripted.TurnIndex(req.Items) == m.at {
		m.once.Do(func() { close(m.entered) })
		select {
		case <-m.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return m.Provider.Generate(ctx, req)
}

func (m *gateModel) Capabilities(model string) llm.Capabilities {
	c := m.Provider.Capabilities(model)
	c.Streaming = false
	return c
}

func (m *gateModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	panic("not streaming")
}

// watchStore tells when a cancel request is recorded and when a run's
// claim is renewed.
type watchStore struct {
	store.Store
	recorded chan struct{}
	once     sync.Once
	renewed  chan string
}

func watch(st store.Store) *watchStore {
	return &watchStore{Store: st, recorded: make(chan struct{}), renewed: make(chan string, 64)}
}

func (w *watchStore) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	c, err := w.Store.ClaimAcquire(ctx, p)
	if err == nil && strings.HasPrefix(p.Key, "cancel:") {
		w.once.Do(func() { close(w.recorded) })
	}
	return c, err
}

func (w *watchStore) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	c, err := w.Store.ClaimRenew(ctx, p)
	if err == nil {
		select {
		case w.renewed <- p.Fence.Key:
		default:
		}
	}
	return c, err
}

func sqliteStore(t *testing.T) store.Store {
	t.Helper()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func eachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, storemem.New(nil)) })
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteStore(t)) })
}

func newRT(t *testing.T, st store.Store, holder string, ttl time.Duration) *actoviq.Runtime {
	t.Helper()
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: ttl, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

type driveOut struct {
	res *actoviq.RunResult
	err error
}

// Break 1: process B cancels a run that process A drives; A's drive stops
// for an approval before its next heartbeat. The cancellation takes effect
// (the run ends cancelled), and a later approval and resume never runs the
// payment.
func TestCancelFromAnotherHolderTakesEffect(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		w := watch(st)
		pay := &payTool{name: "pay"}
		m := newGate(0, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":7}`)}}, scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		driver := newRT(t, w, "A", time.Minute)
		other := newRT(t, w, "B", time.Minute)
		drove := make(chan driveOut, 1)
		go func() {
			res, err := driver.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
			drove <- driveOut{res, err}
		}()
		<-m.entered
		cancelled := make(chan error, 1)
		go func() { cancelled <- other.Cancel(ctx, "r1") }()
		<-w.recorded
		close(m.open) // A's drive goes on and stops for the approval
		d := <-drove
		if err := <-cancelled; err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		info, err := other.Get(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != actoviq.StatusCancelled {
			t.Fatalf("Cancel returned nil, but the run is %s (A's drive ended %+v, %v)", info.Status, d.res, d.err)
		}
		_, err = driver.Resume(ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}}})
		if !errors.Is(err, actoviq.ErrRunFinished) {
			t.Fatalf("approve and resume a cancelled run: %v, want ErrRunFinished", err)
		}
		if pay.count() != 0 {
			t.Fatalf("the payment ran %d times after the run was cancelled", pay.count())
		}
	})
}

// Break 1, the other half: a Cancel that cannot take effect (its context
// ends while another holder drives the run) says so, and its request
// never acts on a later drive.
func TestCancelThatGivesUpNeverActsLater(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		w := watch(st)
		pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
		m := newGate(0, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":7}`)}}, scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		// A's lease is long, so its heartbeat does not read the request
		// before it is withdrawn; the later drive is another process's,
		// with a short lease, whose heartbeats run while it pays.
		driver := newRT(t, w, "A", time.Minute)
		other := newRT(t, w, "B", time.Minute)
		later := newRT(t, w, "C", 900*time.Millisecond)
		drove := make(chan driveOut, 1)
		go func() {
			res, err := driver.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
			drove <- driveOut{res, err}
		}()
		<-m.entered
		cctx, giveUp := context.WithCancel(ctx)
		cancelled := make(chan error, 1)
		go func() { cancelled <- other.Cancel(cctx, "r1") }()
		<-w.recorded
		giveUp()
		if err := <-cancelled; err == nil {
			t.Fatal("a Cancel whose context ended before the run's holder acted returned nil")
		}
		close(m.open)
		if d := <-drove; d.err != nil || d.res.Status != actoviq.StatusInterrupted {
			t.Fatalf("A's drive: %+v %v, want interrupted for the approval", d.res, d.err)
		}
		// The operator approves and resumes; the payment runs across
		// heartbeats, and the run completes.
		resumed := make(chan driveOut, 1)
		go func() {
			res, err := later.Resume(ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}}})
			resumed <- driveOut{res, err}
		}()
		<-pay.started
		for n := 0; n < 3; {
			if k := <-w.renewed; k == "run:r1" {
				n++
			}
		}
		close(pay.block)
		r := <-resumed
		if r.err != nil || r.res.Status != actoviq.StatusCompleted {
			t.Fatalf("the resume after a withdrawn Cancel: %+v %v, want completed", r.res, r.err)
		}
		if pay.count() != 1 {
			t.Fatalf("%d payments", pay.count())
		}
	})
}

// Break 2: a parent cancelled through the context of Run applies its
// parent-close policy to the child it spawned.
func TestParentCancelledByContextClosesChildren(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		child := childAgent("bg", scripted.New(scripted.Turn{Text: "x"}))
		spawn, err := actoviq.SpawnTool(child, "spawn", nil)
		if err != nil {
			t.Fatal(err)
		}
		m := newGate(1, scripted.Turn{ToolCalls: []scripted.ToolCall{call("s1", "spawn", `{"input":"work"}`)}}, scripted.Turn{Text: "done"})
		parent := &actoviq.AgentSpec{ID: "lead", Provider: m, Model: "scripted-1", Tools: []toolT{spawn}}
		rctx, cancel := context.WithCancel(ctx)
		drove := make(chan driveOut, 1)
		go func() {
			res, err := rt.Run(rctx, parent, &actoviq.Input{RunID: "p", Items: input("go").Items})
			drove <- driveOut{res, err}
		}()
		<-m.entered
		cancel()
		d := <-drove
		if d.err != nil || d.res.Status != actoviq.StatusCancelled {
			t.Fatalf("parent: %+v %v", d.res, d.err)
		}
		info, err := rt.Get(ctx, actoviq.ChildRunID("p", "s1"))
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != actoviq.StatusCancelled {
			t.Fatalf("the parent ended cancelled; its spawned child is %s, want cancelled (parent-close cancel)", info.Status)
		}
		// Spawn refuses a parent that ended cancelled.
		if _, err := rt.Spawn(ctx, "p", child, nil, nil); !errors.Is(err, actoviq.ErrRunFinished) {
			t.Fatalf("Spawn on a cancelled parent: %v, want ErrRunFinished", err)
		}
	})
}

// Break 2: a child written after its parent's close listed the children
// (a Spawn racing the cancellation) is cancelled by the first drive that
// takes it, before anything runs.
func TestChildOfCancelledParentNeverRuns(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		m := newGate(0, scripted.Turn{Text: "never"})
		parent := &actoviq.AgentSpec{ID: "lead", Provider: m, Model: "scripted-1"}
		rctx, cancel := context.WithCancel(ctx)
		go func() { <-m.entered; cancel() }()
		if res, err := rt.Run(rctx, parent, &actoviq.Input{RunID: "p", Items: input("go").Items}); err != nil || res.Status != actoviq.StatusCancelled {
			t.Fatalf("parent: %+v %v", res, err)
		}
		pay := &payTool{name: "pay"}
		child := childAgent("bg", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "paid"}), pay)
		cp := `{"v":1,"items":[],"turn":0,"usage":{},"trace_id":"t","policy_version":"","child":{"root":"p","depth":1,"mode":"background","parent_close":"cancel","failure":"fail-fast","max_attempts":3}}`
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "default", ID: "p.late", ParentID: "p", AgentID: child.ID,
			AgentDigest: child.Digest(), Status: store.RunQueued, Checkpoint: []byte(cp)}}); err != nil {
			t.Fatal(err)
		}
		startWorkers(t, []store.Store{st}, 1, child, actoviq.WorkOptions{})
		wctx, stop := context.WithTimeout(ctx, time.Minute)
		defer stop()
		res, err := rt.Wait(wctx, "p.late")
		if err != nil || res.Status != actoviq.StatusCancelled {
			t.Fatalf("a queued child of a cancelled parent: %+v %v, want cancelled", res, err)
		}
		if pay.count() != 0 {
			t.Fatalf("the child of a cancelled parent paid %d times", pay.count())
		}
	})
}

// Break 5: two provider call ids that differ only in characters a run id
// would not keep get two children.
func TestChildRunIDsAreInjective(t *testing.T) {
	pairs := [][2]string{{"x y", "x_y"}, {"a.b", "a_b"}, {"x~20y", "x y"}, {"é", "_"}}
	for _, p := range pairs {
		if a, b := actoviq.ChildRunID("p", p[0]), actoviq.ChildRunID("p", p[1]); a == b {
			t.Fatalf("calls %q and %q share the child run %q", p[0], p[1], a)
		}
	}
	if a, b := actoviq.ChildRunID("p", "b.c"), actoviq.ChildRunID("p.b", "c"); a == b {
		t.Fatalf("call b.c of p and call c of p.b share the child run %q", a)
	}
	for _, id := range []string{"call_abc123", "toolu_01A-b"} {
		if got := actoviq.ChildRunID("p", id); got != "p."+id {
			t.Fatalf("ChildRunID(p, %q) = %q: a provider's usual id keeps its child run id", id, got)
		}
	}
	s := newSetup(t)
	child := childAgent("helper", scripted.New(scripted.Turn{Text: "answer"}))
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("x y", "helper", `{"input":"one"}`), call("x_y", "helper", `{"input":"two"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p5", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("parent: %+v %v", res, err)
	}
	runs, _ := s.st.RunList(s.ctx, &store.RunListParams{Tenant: "default", ParentID: "p5"})
	if len(runs) != 2 {
		t.Fatalf("%d child runs for two calls, want 2", len(runs))
	}
}

// Break 7: concurrent Spawns keep MaxChildren, also through separate store
// handles (processes) on one SQLite file.
func TestChildBudgetHoldsUnderConcurrency(t *testing.T) {
	run := func(t *testing.T, rts []*actoviq.Runtime) {
		ctx := context.Background()
		if _, err := rts[0].Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		child := childAgent("bg", scripted.New(scripted.Turn{Text: "x"}))
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = rts[i%len(rts)].Spawn(ctx, "root", child, &actoviq.Input{RunID: fmt.Sprintf("root.k%d", i)},
					&actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 1}})
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		kids, err := rts[0].Get(ctx, "root")
		if err != nil {
			t.Fatal(err)
		}
		_ = kids
		if ok != 1 {
			t.Fatalf("%d of 8 concurrent Spawns with MaxChildren 1 succeeded: %v", ok, errs)
		}
	}
	t.Run("memory", func(t *testing.T) {
		st := storemem.New(nil)
		run(t, []*actoviq.Runtime{newRT(t, st, "A", time.Minute)})
	})
	t.Run("sqlite-two-handles", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.db")
		var rts []*actoviq.Runtime
		for i := range 2 {
			st, err := storesqlite.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			rts = append(rts, newRT(t, st, fmt.Sprintf("h%d", i), time.Minute))
		}
		run(t, rts)
	})
}

// Break 9: Requeue on the parent routes a decision for its child's call,
// as Decide and Resume do.
func TestRequeueRoutesChildDecisions(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	child := childAgent("payments", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
		scripted.Turn{Text: "paid"}), pay)
	child.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "payments", `{"input":"pay 3"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p9", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("parent %+v %v", res, err)
	}
	if err := s.rt.Requeue(s.ctx, "p9", actoviq.Decision{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}); err != nil {
		t.Fatalf("Requeue with a decision for the child's call: %v", err)
	}
	entries, _ := s.st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: "p9.c1"})
	if len(entries) != 1 || entries[0].Approval == nil || entries[0].Approval.By != "op" {
		t.Fatalf("the child's call after Requeue on the parent: %+v", entries)
	}
	info, _ := s.rt.Get(s.ctx, "p9")
	if info.Status != actoviq.StatusQueued {
		t.Fatalf("parent after Requeue: %s, want queued", info.Status)
	}
}

// Break 10: an operator who settles the parent's agent call closes the
// child for the record: it is cancelled and cannot be resumed on its own.
func TestSettlingParentCallClosesChild(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	child := childAgent("payments", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
		scripted.Turn{Text: "paid"}), pay)
	child.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "payments", `{"input":"pay 3"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "p10", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("parent %+v %v", res, err)
	}
	res, err = s.rt.Resume(s.ctx, parent, "p10", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", RunID: "p10", Kind: actoviq.DecideFailed, By: "op",
		Message: "not needed any more"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("parent after its call was settled: %+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "p10.c1")
	if info.Status != actoviq.StatusCancelled {
		t.Fatalf("the child of a settled call is %s, want cancelled", info.Status)
	}
	if _, err := s.rt.Resume(s.ctx, child, "p10.c1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}}}); !errors.Is(err, actoviq.ErrRunFinished) {
		t.Fatalf("resume of the closed child: %v, want ErrRunFinished", err)
	}
	if pay.count() != 0 {
		t.Fatalf("%d payments", pay.count())
	}
}

// SpawnTool refuses retry-safe for a child that can reach a side effect
// when it is built, as AgentTool does.
func TestSpawnToolRefusesRetrySafeSideEffect(t *testing.T) {
	payer := childAgent("payer", scripted.New(scripted.Turn{Text: "x"}), &payTool{name: "pay"})
	if _, err := actoviq.SpawnTool(payer, "", &actoviq.SpawnOptions{Failure: actoviq.RetrySafe}); !errors.Is(err, actoviq.ErrRetryUnsafe) {
		t.Fatalf("SpawnTool retry-safe for a side-effect child: %v, want ErrRetryUnsafe", err)
	}
}

// Break 3: a child with no side-effect tool whose drive the parent's
// runtime closes is re-entered when the parent resumes: its answer is the
// call's result, never "outcome unknown".
func TestReadOnlyChildSurvivesClose(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		gate := newGate(0, scripted.Turn{Text: "child answer"})
		mk := func(p llm.Provider) *actoviq.AgentSpec {
			child := &actoviq.AgentSpec{ID: "reader", Instructions: "read", Provider: p, Model: "scripted-1"}
			return agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "reader", `{"input":"look"}`)}},
				scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
		}
		rt1 := newRT(t, st, "A", time.Minute)
		drove := make(chan driveOut, 1)
		go func() {
			res, err := rt1.Run(ctx, mk(gate), &actoviq.Input{RunID: "p3", Items: input("go").Items})
			drove <- driveOut{res, err}
		}()
		<-gate.entered
		rt1.Close()
		if d := <-drove; !errors.Is(d.err, actoviq.ErrClosed) {
			t.Fatalf("parent's drive after Close: %+v %v, want ErrClosed", d.res, d.err)
		}
		rt2 := newRT(t, st, "B", time.Minute)
		res, err := rt2.Resume(ctx, mk(scripted.New(scripted.Turn{Text: "child answer"})), "p3", nil)
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("resume parent: %+v %v", res, err)
		}
		info, _ := rt2.Get(ctx, "p3")
		if r := toolResults(t, info)["c1"]; r.Content != "child answer" || r.IsError {
			t.Fatalf("the parent's result for its child call: %+v, want the child's answer", r)
		}
		if c, _ := rt2.Get(ctx, "p3.c1"); c.Status != actoviq.StatusCompleted {
			t.Fatalf("child %s, want completed", c.Status)
		}
	})
}

// Break 3: a child that outlives its agent tool's timeout is not reported
// as "outcome unknown": it ends cancelled, and fail-fast fails the parent.
func TestChildTimeoutAppliesPolicy(t *testing.T) {
	s := newSetup(t)
	gate := newGate(0, scripted.Turn{Text: "never"})
	child := &actoviq.AgentSpec{ID: "reader", Instructions: "read", Provider: gate, Model: "scripted-1"}
	parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "reader", `{"input":"look"}`)}},
		scripted.Turn{Text: "done"}), mustAgentTool(t, child, &actoviq.AgentToolOptions{Timeout: 30 * time.Millisecond}))
	res, err := s.rt.Run(s.ctx, parent, &actoviq.Input{RunID: "pt", Items: input("go").Items})
	if err != nil || res.Status != actoviq.StatusFailed || res.Error == nil || res.Error.Code != "child_failed" {
		t.Fatalf("fail-fast parent whose child timed out: %+v %v, want failed with code child_failed", res, err)
	}
	if c, _ := s.rt.Get(s.ctx, "pt.c1"); c.Status != actoviq.StatusCancelled {
		t.Fatalf("the timed-out child is %s, want cancelled", c.Status)
	}
}

// Break 4: with v1 and v2 registered, a worker drives a run that v2 took
// over with v2, once; it never goes back to v1.
func TestWorkerKeepsTakeoverVersion(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		turns := func(last string) []scripted.Turn {
			return []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":4}`)}},
				{ToolCalls: []scripted.ToolCall{call("c2", "pay", `{"amount":5}`)}}, {Text: last}}
		}
		v1 := approvalAgent(scripted.New(turns("v1 done")...), pay)
		v2 := approvalAgent(scripted.New(turns("v2 done")...), pay)
		v2.Instructions = "pay, politely"
		rt1 := newRT(t, st, "A", time.Minute)
		if res, err := rt1.Run(ctx, v1, &actoviq.Input{RunID: "rv", Items: input("pay").Items}); err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("v1: %+v %v", res, err)
		}
		// v2 takes the run over, pays c1 and stops for c2's approval; the
		// operator approves c2 and hands the run to the workers.
		if res, err := rt1.Resume(ctx, v2, "rv", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}}}); err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("v2: %+v %v", res, err)
		}
		if err := rt1.Requeue(ctx, "rv", actoviq.Decision{CallID: "c2", Kind: actoviq.DecideApprove, By: "op"}); err != nil {
			t.Fatal(err)
		}
		w := newRT(t, st, "W", time.Minute)
		if err := w.Register(v1, v2); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		drives := 0
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = w.Work(wctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond, OnDrive: func(string, *actoviq.RunResult, error) {
				mu.Lock()
				drives++
				mu.Unlock()
			}})
		}()
		client := newRT(t, st, "C", time.Minute)
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := client.Wait(tctx, "rv")
		stop()
		<-done
		if err != nil || res.Status != actoviq.StatusCompleted || len(res.Output) == 0 || res.Output[0].Text != "v2 done" {
			t.Fatalf("the run v2 took over: %+v %v, want completed by v2", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if drives != 1 || pay.count() != 2 {
			t.Fatalf("%d worker drives, %d payments; want 1 and 2", drives, pay.count())
		}
	})
}

// Break 6: Wait returns for a retry-safe background child that stopped
// interrupted when nothing will queue it again (it was driven by Resume,
// not by a worker).
func TestWaitReturnsForInterruptedRetrySafeChild(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt := newRT(t, st, "A", time.Minute)
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
	res, err := rt.Resume(ctx, child, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Status
	if want == actoviq.StatusQueued { // the retry was queued by the drive itself: a worker finishes it
		startWorkers(t, []store.Store{st}, 1, child, actoviq.WorkOptions{})
		want = actoviq.StatusCompleted
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got, err := rt.Wait(wctx, id)
	if err != nil || got.Status != want {
		t.Fatalf("Wait for a child whose drive ended %s: %+v %v, want %s", res.Status, got, err, want)
	}
}

// Break 8: a process with no codec, or the wrong key, never records a
// pending sealed call as "not run": the call stops with an interruption,
// and a process with the key runs it.
func TestSealedCallWithoutKeyStops(t *testing.T) {
	for _, other := range []string{"no-codec", "wrong-key"} {
		t.Run(other, func(t *testing.T) {
			s := newSetup(t)
			codec := sealCodec(t, 1)
			pay := &payTool{name: "pay", effect: tool.IdempotentWrite}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "slow", `{"amount":1}`), call("c2", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
			slow := &payTool{name: "slow", effect: tool.Read, block: make(chan struct{}), started: make(chan struct{})}
			a := agent(p, slow, pay)
			a.Recovery = actoviq.RecoveryPolicy{RerunReads: true}
			go s.codecRuntime(t, codec).Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
			<-slow.started
			first := slow.block
			slow.set(func(p *payTool) { p.block = nil })
			defer close(first)
			s.clock.Advance(2 * time.Minute) // the first process "died" during c1; c2 never started
			var oc actoviq.Codec
			if other == "wrong-key" {
				oc = sealCodec(t, 2)
			}
			res, err := s.codecRuntime(t, oc).Resume(s.ctx, a, "r1", nil)
			if err != nil || res.Status != actoviq.StatusInterrupted || pay.count() != 0 || len(res.Interruptions) != 1 || res.Interruptions[0].CallID != "c2" {
				t.Fatalf("a process that cannot open the sealed call: %+v %v, %d payments; want interrupted on c2", res, err, pay.count())
			}
			res, err = s.codecRuntime(t, codec).Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c2", Kind: actoviq.DecideApprove, By: "op"}}})
			if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 || !strings.Contains(pay.calls[0], "sk-live-123") {
				t.Fatalf("the keyed process: %+v %v, calls %v", res, err, pay.calls)
			}
		})
	}
}

// Found by the takeover scenario of the crash campaign: a queued run (and
// a child) recorded no per-field agent record, so a new version could not
// take it over at all (every change was refused as "definition").
func TestQueuedRunCanBeTakenOver(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt := newRT(t, st, "A", time.Minute)
	pay := &payTool{name: "pay"}
	turns := []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":4}`)}}, {Text: "done"}}
	v1 := approvalAgent(scripted.New(turns...), pay)
	v2 := approvalAgent(scripted.New(turns...), pay)
	v2.Instructions = "pay, version 2"
	id, err := rt.Enqueue(ctx, v1, &actoviq.Input{RunID: "q1", Items: input("pay").Items})
	if err != nil {
		t.Fatal(err)
	}
	stop := startWorkers(t, []store.Store{st}, 1, v1, actoviq.WorkOptions{})
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if res, err := rt.Wait(wctx, id); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("v1 under a worker: %+v %v", res, err)
	}
	stop()
	res, err := rt.Resume(ctx, v2, id, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "op"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("v2 taking over a queued run that waits for approval (instructions changed only): %+v %v", res, err)
	}
}

// Break 3, the drain: a worker whose grace ends while a read-only child
// runs hands the parent back to the queue with its call started; the next
// worker re-enters the child, and the parent's call gets the child's
// answer, never "outcome unknown".
func TestReadOnlyChildSurvivesDrain(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		gate := newGate(0, scripted.Turn{Text: "child answer"})
		child := &actoviq.AgentSpec{ID: "reader", Instructions: "read", Provider: gate, Model: "scripted-1"}
		parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "reader", `{"input":"look"}`)}},
			scripted.Turn{Text: "done"}), mustAgentTool(t, child, nil))
		client := newRT(t, st, "C", time.Minute)
		if _, err := client.Enqueue(ctx, parent, &actoviq.Input{RunID: "pd", Items: input("go").Items}); err != nil {
			t.Fatal(err)
		}
		w1 := newRT(t, st, "W1", time.Minute)
		if err := w1.Register(parent); err != nil {
			t.Fatal(err)
		}
		wctx, drain := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w1.Work(wctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond, Grace: -1}) }()
		<-gate.entered
		drain() // no grace: the drives are released at once
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		close(gate.open)
		startWorkers(t, []store.Store{st}, 1, parent, actoviq.WorkOptions{})
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := client.Wait(tctx, "pd")
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("parent after the drain: %+v %v", res, err)
		}
		info, _ := client.Get(ctx, "pd")
		if r := toolResults(t, info)["c1"]; r.Content != "child answer" || r.IsError {
			t.Fatalf("the parent's result for its child call after a drain: %+v, want the child's answer", r)
		}
	})
}
