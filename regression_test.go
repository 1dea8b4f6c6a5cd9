package actoviq_test

// Regression tests for contract breaks found in review (the rules of docs/design.md).
// Each comment says what used to go wrong.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// A policy is consulted twice per call: once by the engine's Check before
// the started write, once again inside Runner.Run. When the second answer
// is Deny (a time-window or rate-limit policy), the runner refuses before
// invoking; recordOutcome used to move the entry back to prepared, and the
// loop then folded the pending turn although the entry was never committed: the
// transcript gets a made-up "could not be decoded" result while the ledger
// still says prepared (docs/design.md#the-ledger: committed and the transcript append
// are one durable write; docs/design.md#recovery: every path runs the call, records a result, or stops).
func TestPolicyFlipFoldsUncommittedCall(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	var asked atomic.Int32
	flip := tool.PolicyFunc(func(context.Context, tool.Spec, json.RawMessage) tool.Verdict {
		if asked.Add(1) == 1 {
			return tool.Verdict{Permission: tool.Allow}
		}
		return tool.Verdict{Permission: tool.Deny, Reason: "window closed"}
	})
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	a.Approval = actoviq.ApprovalPolicy{Policy: flip, Version: "v1"}
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.rt.Get(s.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	en := info.Ledger[0]
	r, folded := toolResults(t, info)["c1"]
	if folded && en.State != store.LedgerCommitted {
		t.Fatalf("run %s: the transcript has a result for c1 (%q) but its ledger entry is %s (never committed)",
			res.Status, r.Content, en.State)
	}
}

// The run's deadline used to be checked only at the top of the loop, so
// inside one batch a side-effect call was started after the run's deadline passed
// (docs/design.md#effects-and-keys: a tool is never started with an expired deadline;
// docs/design.md#recovery: a run past its deadline ends cancelled).
func TestToolStartedAfterRunDeadline(t *testing.T) {
	s := newSetup(t)
	slow := &clockTool{name: "slow", advance: 2 * time.Hour, clock: s.clock}
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "slow", `{}`), call("c2", "pay", `{"amount":5}`)}},
		scripted.Turn{Text: "done"})
	a := agent(p, slow, pay)
	a.Limits.RunTimeout = time.Hour
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if pay.count() != 0 {
		t.Fatalf("run ended %s; the side effect c2 was started %d time(s) after the run's deadline had passed", res.Status, pay.count())
	}
}

// clockTool advances the fake clock while it runs (a slow side effect).
type clockTool struct {
	name    string
	advance time.Duration
	clock   *fakeClock
}

func (c *clockTool) Spec() tool.Spec {
	return tool.Spec{Name: c.name, Description: "slow", Effect: tool.SideEffect, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (c *clockTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	c.clock.Advance(c.advance)
	return tool.Result{Content: "ok"}, nil
}

// Resume with decisions used to record them before the deadline check, so
// a run past its deadline ended cancelled with its ledger changed (docs/design.md#recovery:
// that run ends cancelled, ledger untouched).
func TestResumePastDeadlineRecordsDecisions(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	a.Limits.RunTimeout = time.Hour
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	s.clock.Advance(2 * time.Hour)
	before, _ := s.rt.Get(s.ctx, "r1")
	// The decisions are refused, typed, not dropped silently (issue 10).
	_, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops"}}})
	var fin *actoviq.RunFinishedError
	if !errors.As(err, &fin) || !errors.Is(err, actoviq.ErrRunFinished) || fin.Status != actoviq.StatusCancelled {
		t.Fatalf("resume with decisions past the deadline: %v, want a RunFinishedError (cancelled)", err)
	}
	after, _ := s.rt.Get(s.ctx, "r1")
	if after.Status != actoviq.StatusCancelled || after.Ledger[0].Revision != before.Ledger[0].Revision || after.Ledger[0].State != before.Ledger[0].State {
		t.Fatalf("run past its deadline ended %s but its ledger changed: %s rev %d -> %s rev %d",
			after.Status, before.Ledger[0].State, before.Ledger[0].Revision, after.Ledger[0].State, after.Ledger[0].Revision)
	}
}

// secretTool has a pattern on its secret field, so a wrong-format secret
// fails input validation with a message that quotes the value.
type secretTool struct{ calls atomic.Int32 }

func (s *secretTool) Spec() tool.Spec {
	return tool.Spec{Name: "charge", Description: "charges", Effect: tool.SideEffect,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"api_key":{"type":"string","pattern":"^sk-"}},"required":["amount"]}`)}
}

func (s *secretTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	s.calls.Add(1)
	return tool.Result{Content: "charged"}, nil
}

// The arguments are redacted before they are persisted, but an input
// validation failure quotes the secret value, and that text used to be
// persisted unredacted in the ledger entry's Error and Result and in the checkpoint's
// transcript (docs/design.md#events-and-redaction: redaction runs before anything is persisted,
// including checkpoints and ledger entries).
func TestValidationErrorPersistsRedactedSecret(t *testing.T) {
	s := newSetup(t)
	const secret = "pk-live-SECRET-42"
	ch := &secretTool{}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "charge", `{"amount":5,"api_key":"`+secret+`"}`)}},
		scripted.Turn{Text: "done"})
	if _, err := s.rt.Run(s.ctx, agent(p, ch), &actoviq.Input{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	run, _ := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r1"})
	led, _ := s.st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: "r1"})
	if !strings.Contains(string(led[0].Args), "[REDACTED]") {
		t.Fatalf("args not redacted: %s", led[0].Args)
	}
	var leaks []string
	if strings.Contains(string(led[0].Error), secret) {
		leaks = append(leaks, "ledger Error: "+string(led[0].Error))
	}
	if strings.Contains(string(led[0].Result), secret) {
		leaks = append(leaks, "ledger Result: "+string(led[0].Result))
	}
	if strings.Contains(string(run.Checkpoint), secret) {
		leaks = append(leaks, "checkpoint")
	}
	for i, it := range run.Log {
		if strings.Contains(string(it), secret) {
			leaks = append(leaks, fmt.Sprintf("log item %d", i))
		}
	}
	if len(leaks) > 0 {
		t.Fatalf("a redacted secret was persisted:\n%s", strings.Join(leaks, "\n"))
	}
}

// gate is a provider that blocks every model call until released; it
// answers like scripted (same Name, so the agent digest is the same).
type gate struct {
	*scripted.Provider
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Provider.Generate(ctx, req)
}

func (g *gate) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		g.entered <- struct{}{}
		<-g.release
		for ev, err := range g.Provider.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// SessionAppend used to be unfenced. A worker whose run lease was taken
// over (its every run write is fenced out) still appended its items to the
// session journal, durably, before its own completion write is refused
// (docs/design.md#promises rule 1, docs/design.md#children-and-workers: a worker that lost its
// lease cannot commit anything).
// The run then ended with the new worker's output while the session held
// the fenced-out worker's, which appendSession's "appendedBy" check accepted
// as its own.
func TestFencedOutWorkerAppendsToSession(t *testing.T) {
	s := newSetup(t)
	gA := &gate{Provider: scripted.New(scripted.Turn{Text: "answer from the fenced-out worker A"}),
		entered: make(chan struct{}, 1), release: make(chan struct{})}
	gB := &gate{Provider: scripted.New(scripted.Turn{Text: "answer from worker B"}),
		entered: make(chan struct{}, 1), release: make(chan struct{})}
	aA, aB := agent(nil), agent(nil)
	aA.Provider, aB.Provider = gA, gB
	done := make(chan error, 1)
	go func() {
		_, err := s.rt.Run(s.ctx, aA, &actoviq.Input{RunID: "r1", SessionID: "s1", Items: []item.Item{item.UserText("hi")}})
		done <- err
	}()
	<-gA.entered // A is in its model call
	// A's leases expire (it looks dead) and worker B takes the run over.
	s.clock.Advance(2 * time.Minute)
	bDone := make(chan struct{})
	var bRes *actoviq.RunResult
	var bErr error
	go func() {
		defer close(bDone)
		bRes, bErr = s.runtime(t).Resume(s.ctx, aB, "r1", nil)
	}()
	<-gB.entered // B holds the run and the session, and is in its model call
	close(gA.release)
	errA := <-done
	if !errors.Is(errA, actoviq.ErrFenced) {
		t.Fatalf("worker A: want fenced, got %v", errA)
	}
	st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var journal []string
	for _, en := range st.Entries {
		journal = append(journal, string(en.Item))
	}
	close(gB.release)
	<-bDone
	msg := fmt.Sprintf("B: %v %v", bRes, bErr)
	if bRes != nil && len(bRes.Output) > 0 {
		msg = fmt.Sprintf("B ended %s with output %q", bRes.Status, bRes.Output[0].Text)
	}
	if st.Revision != 0 {
		t.Fatalf("fenced-out worker A appended to the session (revision %d): %s\n%s", st.Revision, strings.Join(journal, "\n"), msg)
	}
}

// A decision that does not fit used to take the run's claim (a new holder
// and epoch in the store) before it was refused. A reject's note used to
// reach the model; only its reason does now.
func TestRefusedDecisionLeavesClaimAndNoteStaysPrivate(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	key := store.RunClaimKey("r1")
	before, err := s.st.ClaimGet(s.ctx, &store.ClaimGetParams{Tenant: "default", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	err = s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "nope", Kind: actoviq.DecideApprove, By: "x"})
	if !errors.Is(err, actoviq.ErrDecision) {
		t.Fatalf("decision on a missing call: %v", err)
	}
	after, _ := s.st.ClaimGet(s.ctx, &store.ClaimGetParams{Tenant: "default", Key: key})
	if after.Epoch != before.Epoch || after.Holder != before.Holder {
		t.Fatalf("a refused decision took the claim: %+v → %+v", before, after)
	}
	res, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReject, By: "bob",
		Reason: "wrong payee", Note: "internal ticket OPS-7"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	r := toolResults(t, info)["c1"]
	if !strings.Contains(r.Content, "wrong payee") || strings.Contains(r.Content, "OPS-7") {
		t.Fatalf("model sees %q", r.Content)
	}
	if info.Ledger[0].Approval.Note != "internal ticket OPS-7" {
		t.Fatalf("note not recorded: %+v", info.Ledger[0].Approval)
	}
}

// A side effect that succeeded with output that misses its schema used to
// be shown to the model as an error, inviting it to do it again. Now the
// model gets the output with a note, and the violation is recorded.
func TestOutputSchemaMismatchIsNotAnError(t *testing.T) {
	s := newSetup(t)
	type out struct {
		ID string `json:"id"`
	}
	var calls int
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","minLength":3}},"required":["id"]}`)},
		func(ctx context.Context, in struct{ Amount int }) (out, error) { calls++; return out{ID: "p"}, nil })
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"Amount":5}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted || calls != 1 {
		t.Fatalf("%+v %v calls %d", res, err, calls)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	r := toolResults(t, info)["c1"]
	if r.IsError || !strings.Contains(r.Content, "did not match") || len(info.Ledger[0].Error) == 0 {
		t.Fatalf("result %+v, ledger error %s", r, info.Ledger[0].Error)
	}
}

// A NewID that returns short ids used to make every drive panic (the
// drive's holder took the first eight bytes of a new id).
func TestShortIDsFromNewID(t *testing.T) {
	var n atomic.Int64
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{NewID: func() string { return fmt.Sprint(n.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	p := scripted.New(scripted.Turn{Text: "ok"})
	res, err := rt.Run(context.Background(), agent(p), &actoviq.Input{Items: []item.Item{item.UserText("hi")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
}
