package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// The same kill points, with the whole runtime: a child process runs an
// agent (scripted model) on a SQLite file; its call's handles go to the
// run's ledger through the engine; an event sink stops the child dead right
// after the tool.handle event it is told to stop at was stored (or the test
// kills it while it polls). A new runtime on the same file then resumes the
// run: recovery hands the call to Tool.Resume, which polls the stored task
// or sends the continuation, and the run completes. The server counts the
// executions per key.

const runtimeHelperEnv = "ACTOVIQ_MCPTOOL_RUNTIME_HELPER"

const killLease = 300 * time.Millisecond

func killAgent(src *mcptool.Source, toolName string) (*actoviq.AgentSpec, error) {
	tools, err := src.Tools(context.Background())
	if err != nil {
		return nil, err
	}
	return &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: tools, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "v__"+toolName, `{}`)}},
		scripted.Turn{Text: "done"})}, nil
}

// sqliteRuntime is a runtime over a new SQLite file and the kill agent
// calling toolName on the server at url (no elicitation handler), closed
// when the test ends.
func sqliteRuntime(t *testing.T, url, toolName string) (*actoviq.Runtime, *actoviq.AgentSpec) {
	t.Helper()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	src, err := killSource(url, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	agent, err := killAgent(src, toolName)
	if err != nil {
		t.Fatal(err)
	}
	return rt, agent
}

func killSource(url string, elicit bool) (*mcptool.Source, error) {
	opts := &mcptool.Options{TaskPoll: 5 * time.Millisecond, TaskPollMax: 20 * time.Millisecond}
	if elicit {
		opts.Elicit = func(context.Context, *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
			return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		}
	}
	return mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"v": {URL: url}}}, opts)
}

// TestRuntimeKillHelper is the child process.
func TestRuntimeKillHelper(t *testing.T) {
	if os.Getenv(runtimeHelperEnv) == "" {
		t.Skip("the child process of the runtime SIGKILL tests")
	}
	stopAt := os.Getenv("HELPER_STOP_AT")
	st, err := storesqlite.Open(os.Getenv("HELPER_DB"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		if ev.Type != actoviq.EvToolHandle {
			return
		}
		var d actoviq.ToolHandleData
		_ = json.Unmarshal(ev.Data, &d)
		at := d.Kind
		var step struct {
			Step string `json:"step"`
		}
		if json.Unmarshal(d.Data, &step) == nil && step.Step != "" {
			at += "/" + step.Step
		}
		fmt.Printf("RECORDED %s\n", at)
		if at == stopAt {
			fmt.Println("STOPPED")
			select {} // stored; wait for the SIGKILL
		}
	})
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: killLease, Sinks: []actoviq.EventSink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := killSource(os.Getenv("HELPER_URL"), os.Getenv("HELPER_ELICIT") == "1")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := killAgent(src, os.Getenv("HELPER_TOOL"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("RUNNING")
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("go")}})
	fmt.Printf("ENDED %v %v\n", res != nil, err)
}

func startRuntimeChild(t *testing.T, s *v26Server, db, toolName, stopAt string, elicit bool) *child {
	t.Helper()
	c := startChildEnv(t, "^TestRuntimeKillHelper$", runtimeHelperEnv+"=1", "HELPER_URL="+s.url(), "HELPER_TOOL="+toolName,
		"HELPER_DB="+db, "HELPER_STOP_AT="+stopAt, fmt.Sprintf("HELPER_ELICIT=%v", map[bool]int{true: 1, false: 0}[elicit]))
	return c
}

// resumeRun opens the file with a new runtime and resumes r1 once the dead
// child's lease has expired.
func resumeRun(t *testing.T, s *v26Server, db, toolName string, elicit bool) (*actoviq.RunResult, *actoviq.RunInfo) {
	t.Helper()
	st, err := storesqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: killLease})
	if err != nil {
		t.Fatal(err)
	}
	src, err := killSource(s.url(), elicit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		src.Close()
		rt.Close()
		st.Close()
	})
	agent, err := killAgent(src, toolName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var res *actoviq.RunResult
	for {
		res, err = rt.Resume(ctx, agent, "r1", nil)
		var held *actoviq.RunHeldError
		if !errors.As(err, &held) {
			break
		}
		// The dead child's claim lives until its lease expires.
		timer := time.NewTimer(killLease / 3)
		<-timer.C
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := rt.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	return res, info
}

func toolResult(info *actoviq.RunInfo) *item.ToolResult {
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			return it.ToolResult
		}
	}
	return nil
}

func TestRuntimeSIGKILLAfterTaskHandleStored(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	c := startRuntimeChild(t, s, db, "slow_task", mcptool.HandleTask, false)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("after the kill: posts %d, executions %d; want 1, 1", p, e)
	}
	s.complete("r1:c1")
	res, info := resumeRun(t, s, db, "slow_task", false)
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("resumed run: %+v", res)
	}
	if r := toolResult(info); r == nil || r.Content != "report for r1:c1" || r.IsError {
		t.Fatalf("tool result %+v", r)
	}
	en := info.Ledger[0]
	if en.State != store.LedgerCommitted || en.Attempt != 1 {
		t.Fatalf("ledger entry %+v", en)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("after the resume: posts %d, executions %d; want 1, 1", p, e)
	}
}

func TestRuntimeSIGKILLDuringTaskPolling(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	polled := make(chan struct{})
	var once sync.Once
	s.setOnGet(func(_ string, n int) {
		if n == 3 {
			once.Do(func() { close(polled) })
		}
	})
	c := startRuntimeChild(t, s, db, "slow_task", "", false)
	<-polled
	c.kill(t)
	s.complete("r1:c1")
	res, info := resumeRun(t, s, db, "slow_task", false)
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("resumed run: %+v", res)
	}
	if r := toolResult(info); r == nil || r.Content != "report for r1:c1" {
		t.Fatalf("tool result %+v", r)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}

func TestRuntimeSIGKILLBetweenInputRequiredAndContinuation(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	c := startRuntimeChild(t, s, db, "pay", mcptool.HandleInput+"/"+mcptool.StepAsked, true)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	if p, e := s.counts("r1:c1"); p != 1 || e != 0 {
		t.Fatalf("after the kill: posts %d, executions %d; want 1, 0", p, e)
	}
	res, info := resumeRun(t, s, db, "pay", true)
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("resumed run: %+v", res)
	}
	if r := toolResult(info); r == nil || r.Content != "paid" {
		t.Fatalf("tool result %+v", r)
	}
	if p, e := s.counts("r1:c1"); p != 2 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 2, 1 (the continuation, same key)", p, e)
	}
}

func TestRuntimeSIGKILLDuringContinuationSend(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	c := startRuntimeChild(t, s, db, "pay", mcptool.HandleInput+"/"+mcptool.StepSending, true)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	res, _ := resumeRun(t, s, db, "pay", true)
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 ||
		res.Interruptions[0].Kind != actoviq.InterruptReconciliation || !strings.Contains(res.Interruptions[0].Reason, "may have been sent") {
		t.Fatalf("resumed run: %+v", res)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 0 {
		t.Fatalf("posts %d, executions %d; want 1, 0 (never re-sent)", p, e)
	}
}

// A task the server no longer knows after the crash (expired, lost) is an
// unknown outcome with the task id as evidence: the run stops for
// reconciliation and the tool is not called again.
func TestRuntimeSIGKILLTaskForgotten(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	c := startRuntimeChild(t, s, db, "slow_task", mcptool.HandleTask, false)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	s.forget()
	res, info := resumeRun(t, s, db, "slow_task", false)
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
		t.Fatalf("resumed run: %+v", res)
	}
	in := res.Interruptions[0]
	if in.Kind != actoviq.InterruptReconciliation || !strings.Contains(in.Reason, "no longer knows task task-1") {
		t.Fatalf("interruption %+v", in)
	}
	if en := info.Ledger[0]; en.State != store.LedgerUnknown {
		t.Fatalf("ledger entry %+v", en)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}

// Cancelling a run whose call waits on a task sends tasks/cancel for it,
// once.
func TestRuntimeCancelSendsTaskCancel(t *testing.T) {
	s := newV26Server(t, false)
	rt, agent := sqliteRuntime(t, s.url(), "slow_task")
	cancelled := make(chan struct{})
	var once sync.Once
	s.setOnGet(func(_ string, n int) {
		if n == 2 {
			once.Do(func() {
				go func() {
					defer close(cancelled)
					if err := rt.Cancel(context.Background(), "r1"); err != nil {
						t.Error(err)
					}
				}()
			})
		}
	})
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("go")}})
	<-cancelled
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if res != nil && res.Status != actoviq.StatusCancelled {
		t.Fatalf("run %+v", res)
	}
	// The tool sends tasks/cancel on its own goroutine as its context
	// ends; the run may have ended first.
	select {
	case id := <-s.cancelled:
		if id != "task-1" {
			t.Fatalf("tasks/cancel of %s", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no tasks/cancel reached the server")
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}

// Without an elicitation handler, a multi-round-trip question stops the
// run with an input interruption (the call stays started, its round
// recorded); a person's answer continues the call with the same key.
func TestRuntimeInputInterruptionAnswered(t *testing.T) {
	s := newV26Server(t, false)
	rt, agent := sqliteRuntime(t, s.url(), "pay")
	ctx := context.Background()
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
		t.Fatalf("run %+v", res)
	}
	in := res.Interruptions[0]
	if in.Kind != actoviq.InterruptInput || in.Input == nil || !strings.Contains(in.Input.Prompt, "Pay 40 EUR to ACME?") ||
		!strings.Contains(string(in.Input.Schema), `"ok"`) || in.State != store.LedgerStarted {
		t.Fatalf("interruption %+v (input %+v)", in, in.Input)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 0 {
		t.Fatalf("posts %d, executions %d; want 1, 0", p, e)
	}
	// An answer must be a JSON object; another decision kind than answer
	// or failed does not fit a question.
	if _, err := rt.Resume(ctx, agent, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideAnswer, By: "alice", Answer: json.RawMessage(`true`)}}}); err == nil {
		t.Fatal("a non-object answer was accepted")
	}
	res, err = rt.Resume(ctx, agent, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideAnswer, By: "alice", Answer: json.RawMessage(`{"ok":true}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("resumed run %+v", res)
	}
	info, err := rt.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r := toolResult(info); r == nil || r.Content != "paid" {
		t.Fatalf("tool result %+v", r)
	}
	if p, e := s.counts("r1:c1"); p != 2 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 2, 1", p, e)
	}
	s.mu.Lock()
	pays := append([]string(nil), s.pays...)
	s.mu.Unlock()
	if len(pays) != 1 || pays[0] != "accept true" {
		t.Fatalf("the server got %q", pays)
	}
	evs, err := rt.Events(ctx, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var answered bool
	for _, ev := range evs {
		if ev.Type == actoviq.EvToolAnswer && strings.Contains(string(ev.Data), `"by":"alice"`) {
			answered = true
		}
	}
	if !answered {
		t.Fatal("no tool.answer event names who answered")
	}
}
