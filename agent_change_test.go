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

// schemaTool is a payTool with a settable spec.
type schemaTool struct {
	*payTool
	spec tool.Spec
}

func (s *schemaTool) Spec() tool.Spec { return s.spec }

func variant(p *payTool, fn func(*tool.Spec)) *schemaTool {
	spec := p.Spec()
	fn(&spec)
	return &schemaTool{payTool: p, spec: spec}
}

// TestAgentUpgradeWhileAwaitingApproval: a new version of the agent (other
// instructions, model, provider, descriptions, an added tool, narrower
// limits) takes over a run that waits for approval, without an override.
func TestAgentUpgradeWhileAwaitingApproval(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}})
	v1 := approvalAgent(p, pay)
	res, err := s.rt.Run(s.ctx, v1, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %+v %v", res, err)
	}

	// The deploy: version 2.
	p2 := scripted.New(scripted.Turn{Text: "(turn 1 is in the transcript)"}, scripted.Turn{Text: "paid"})
	v2 := approvalAgent(p2, variant(pay, func(s *tool.Spec) { s.Description = "Pays an invoice, in cents." }),
		&payTool{name: "refund", effect: tool.SideEffect})
	v2.Instructions = "You pay invoices. Be brief."
	v2.Model = "scripted-2"
	v2.Limits.MaxTurns = 8
	var changed []actoviq.Event
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		if ev.Type == actoviq.EvAgentChanged {
			changed = append(changed, ev)
		}
	})
	res, err = s.rt.Resume(s.ctx, v2, "r1", &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{sink},
		Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("after the upgrade: %s %v, pay ran %d times", res.Status, res.Error, pay.count())
	}
	info, err := s.rt.Get(s.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.AgentChanges) != 1 || info.AgentDigest != v2.Digest() || info.AgentChanges[0].By != "" {
		t.Fatalf("agent changes = %+v, digest %s", info.AgentChanges, info.AgentDigest)
	}
	fields := map[string]actoviq.AgentChangeKind{}
	for _, c := range info.AgentChanges[0].Changes {
		fields[c.Tool+"/"+c.Field] = c.Kind
	}
	for _, f := range []string{"/instructions", "/model", "/limits.max_turns", "refund/added", "pay/description"} {
		if fields[f] != actoviq.ChangeFree {
			t.Errorf("change %s: kind %q, want free (all: %v)", f, fields[f], fields)
		}
	}
	if len(changed) != 1 {
		t.Fatalf("%d agent.changed events, want 1", len(changed))
	}
	pl, err := changed[0].Payload()
	if d, ok := pl.(*actoviq.AgentChangedData); err != nil || !ok || d.To != v2.Digest() {
		t.Fatalf("payload %T %+v %v", pl, pl, err)
	}
}

// TestAgentUpgradeRefusedWithDiff: a version that changes the waiting
// call's effect (down) and input schema is refused field by field, and
// nothing is written.
func TestAgentUpgradeRefusedWithDiff(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	v1 := approvalAgent(p, pay)
	if _, err := s.rt.Run(s.ctx, v1, &actoviq.Input{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.rt.Get(s.ctx, "r1")
	v2 := approvalAgent(p, variant(pay, func(s *tool.Spec) {
		s.Effect = tool.IdempotentWrite
		s.InputSchema = json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`)
	}))
	v2.Limits.MaxTurns = 64
	_, err := s.rt.Resume(s.ctx, v2, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	var ce *actoviq.AgentChangeError
	if !errors.As(err, &ce) || !errors.Is(err, actoviq.ErrAgentChanged) {
		t.Fatalf("resume: %v, want an *AgentChangeError", err)
	}
	got := map[string]actoviq.AgentChange{}
	for _, c := range ce.Refused {
		got[c.Tool+"/"+c.Field] = c
	}
	if c := got["pay/effect"]; c.From != "side-effect" || c.To != "idempotent-write" || len(c.Calls) != 1 || c.Calls[0] != "c1 (awaiting_approval)" {
		t.Errorf("effect change = %+v", c)
	}
	if c := got["pay/input_schema"]; c.From == "" || c.From == c.To {
		t.Errorf("input schema change = %+v", c)
	}
	if c, ok := got["/limits.max_turns (limits may only narrow while a run waits)"]; !ok || c.From != "16" || c.To != "64" {
		t.Errorf("widened limit = %+v (refused: %+v)", c, ce.Refused)
	}
	// As an idempotent write the call would no longer need approval.
	if c := got["pay/approval"]; c.From != "needs approval" || c.To != "no approval" {
		t.Errorf("approval change = %+v", c)
	}
	if len(ce.Refused) != 4 {
		t.Errorf("refused = %+v, want 4 changes", ce.Refused)
	}
	msg := err.Error()
	for _, want := range []string{"tool pay: effect side-effect → idempotent-write (unsettled call c1 (awaiting_approval))", "AcceptAgentChange"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	after, _ := s.rt.Get(s.ctx, "r1")
	if after.Revision != before.Revision || after.Ledger[0].Revision != before.Ledger[0].Revision || pay.count() != 0 {
		t.Fatalf("a refused resume wrote something: run rev %d→%d, entry %+v", before.Revision, after.Revision, after.Ledger[0])
	}
}

// TestAgentChangeOverrideVoidsApproval: an approved call whose input
// schema changes; the operator accepts the change. Who/when/why/diff are
// recorded, the approval is void, and the call asks again.
func TestAgentChangeOverrideVoidsApproval(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	v1 := approvalAgent(p, pay)
	if _, err := s.rt.Run(s.ctx, v1, &actoviq.Input{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	v2 := approvalAgent(p, variant(pay, func(s *tool.Spec) {
		s.InputSchema = json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer","maximum":100}},"required":["amount"]}`)
	}))
	if _, err := s.rt.Resume(s.ctx, v2, "r1", nil); !errors.Is(err, actoviq.ErrAgentChanged) {
		t.Fatalf("without override: %v", err)
	}
	if _, err := s.rt.Resume(s.ctx, v2, "r1", &actoviq.ResumeOptions{AcceptAgentChange: &actoviq.AcceptAgentChange{}}); err == nil {
		t.Fatal("an override without By was taken")
	}
	res, err := s.rt.Resume(s.ctx, v2, "r1", &actoviq.ResumeOptions{
		AcceptAgentChange: &actoviq.AcceptAgentChange{By: "bob", Note: "schema now caps the amount"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptApproval || pay.count() != 0 {
		t.Fatalf("after override: %+v, pay ran %d times; want the call to ask again", res, pay.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	rec := info.AgentChanges[len(info.AgentChanges)-1]
	if rec.By != "bob" || rec.Note != "schema now caps the amount" || rec.At.IsZero() || len(rec.Voided) != 1 || rec.Voided[0] != "c1" {
		t.Fatalf("record = %+v", rec)
	}
	if en := info.Ledger[0]; en.State != store.LedgerAwaitingApproval || en.Approval == nil || en.Approval.Kind != "void" || en.Approval.By != "bob" {
		t.Fatalf("entry = %+v approval %+v", en, en.Approval)
	}
	// A new approval, bound to the new version, lets it run.
	res, err = s.rt.Resume(s.ctx, v2, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("second approval: %+v %v, %d runs", res, err, pay.count())
	}
}

// TestConservativeEffectChangeIsTaken: turning an idempotent write into a
// side effect while its call's outcome is unknown is taken without an
// override, and the call then follows the side-effect rules: the recovery
// policy that would re-run an idempotent write no longer applies; it goes
// to reconciliation.
func TestConservativeEffectChangeIsTaken(t *testing.T) {
	s := newSetup(t)
	note := &payTool{name: "note", effect: tool.IdempotentWrite, fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "note", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
	v1 := agent(p, note)
	v1.Recovery = actoviq.RecoveryPolicy{RerunIdempotentWrites: true}
	res, err := s.rt.Run(s.ctx, v1, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptRecovery {
		t.Fatalf("run: %+v %v", res, err)
	}
	note.set(func(p *payTool) { p.fail = nil })
	v2 := agent(p, variant(note, func(s *tool.Spec) { s.Effect = tool.SideEffect }))
	v2.Recovery = v1.Recovery
	res, err = s.rt.Resume(s.ctx, v2, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptReconciliation || note.count() != 1 {
		t.Fatalf("after the change: %+v, ran %d times; want reconciliation and no re-run", res, note.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Ledger[0].Effect != "side-effect" {
		t.Fatalf("ledger effect = %s", info.Ledger[0].Effect)
	}
	rec := info.AgentChanges[0]
	if rec.By != "" || len(rec.Effects) != 1 || rec.Effects[0] != "c1: idempotent-write → side-effect" {
		t.Fatalf("record = %+v", rec)
	}
	// Under the old version (effect down again) the resume is refused.
	if _, err := s.rt.Resume(s.ctx, v1, "r1", nil); !errors.Is(err, actoviq.ErrAgentChanged) {
		t.Fatalf("effect lowered again: %v", err)
	}
}

// A run that a new version took over is driven by a worker that has only
// that version: the worker matches the version the run was driven by last.
func TestWorkerDrivesRunTakenOverByNewVersion(t *testing.T) {
	ctx := context.Background()
	shared := storemem.New(nil)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	v1 := approvalAgent(p, pay)
	v2 := approvalAgent(p, pay)
	v2.Instructions = "pay carefully"
	rt, err := actoviq.New(shared, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(ctx, v1, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %+v %v", res, err)
	}
	// v2 takes it over (a free change) and it still waits for approval.
	if res, err = rt.Resume(ctx, v2, "r1", nil); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	if err := rt.Requeue(ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, []store.Store{shared}, 1, v2, actoviq.WorkOptions{})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err = rt.Wait(wctx, "r1")
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("worker with v2: %+v %v, pay ran %d times", res, err, pay.count())
	}
}

// ResumeOptions.Meta replaces the run's Meta, secret-looking keys
// redacted, and records the change in a run.meta_changed event.
func TestResumeReplacesMeta(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	if _, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1", Meta: json.RawMessage(`{"base_url":"http://old"}`)}); err != nil {
		t.Fatal(err)
	}
	var got []actoviq.Event
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		if ev.Type == actoviq.EvRunMetaChanged {
			got = append(got, ev)
		}
	})
	if _, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Meta: json.RawMessage(`{`)}); err == nil {
		t.Fatal("invalid Meta taken")
	}
	_, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{sink},
		Meta: json.RawMessage(`{"base_url":"http://new","api_key":"sk-live-123456789"}`)})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if !strings.Contains(string(info.Meta), "http://new") || strings.Contains(string(info.Meta), "sk-live-123456789") {
		t.Fatalf("meta = %s", info.Meta)
	}
	if len(got) != 1 {
		t.Fatalf("%d run.meta_changed events", len(got))
	}
	pl, err := got[0].Payload()
	d, ok := pl.(*actoviq.MetaChangedData)
	if err != nil || !ok || !strings.Contains(string(d.From), "http://old") || strings.Contains(string(d.To), "sk-live") {
		t.Fatalf("payload %+v %v", pl, err)
	}
}
