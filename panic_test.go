package actoviq_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

type panicPolicy struct{}

func (panicPolicy) Decide(context.Context, tool.Spec, json.RawMessage) tool.Verdict {
	panic("policy bug")
}

type panicTool struct{ effect tool.Effect }

func (p panicTool) Spec() tool.Spec {
	return tool.Spec{Name: "boom", Description: "panics", Effect: p.effect}
}
func (panicTool) Call(context.Context, json.RawMessage) (tool.Result, error) { panic("tool bug") }

type panicProbe struct{ *payTool }

func (panicProbe) Reconcile(context.Context, string, json.RawMessage) (tool.Probe, error) {
	panic("probe bug")
}

// A panic in a user's approval policy used to take the process down. It is
// a denial now: nothing ran, the model is told, the ledger keeps why.
func TestPolicyPanicIsRecordedDenial(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	a.Approval = actoviq.ApprovalPolicy{Policy: panicPolicy{}, Version: "v1"}
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 0 {
		t.Fatalf("%+v %v, %d calls", res, err, pay.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	r := toolResults(t, info)["c1"]
	if !r.IsError || !strings.Contains(r.Content, "policy panicked: policy bug") || !strings.Contains(string(info.Ledger[0].Error), "policy bug") {
		t.Fatalf("result %+v ledger error %s", r, info.Ledger[0].Error)
	}
}

// A side-effect tool that panics may have acted: it is outcome-unknown and
// goes to reconciliation, as after a crash; a read that panics gets an
// error result.
func TestToolPanicIsOutcomeUnknown(t *testing.T) {
	s := newSetup(t)
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "boom", `{}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, panicTool{effect: tool.SideEffect}), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 ||
		res.Interruptions[0].Kind != actoviq.InterruptReconciliation || res.Interruptions[0].State != store.LedgerUnknown ||
		!strings.Contains(res.Interruptions[0].Reason, "panic: tool bug") {
		t.Fatalf("%+v %v", res, err)
	}
	p = scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "boom", `{}`)}}, scripted.Turn{Text: "done"})
	res, err = s.rt.Run(s.ctx, agent(p, panicTool{effect: tool.Read}), &actoviq.Input{RunID: "r2"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r2")
	if r := toolResults(t, info)["c1"]; !r.IsError || !strings.Contains(r.Content, "unknown") {
		t.Fatalf("read result %+v", r)
	}
}

// A probe that panics used to take the process down. The call goes to the
// operator with the panic as the probe's evidence.
func TestProbePanicEscalates(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	tl := panicProbe{pay}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, tl)
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	in := res.Interruptions[0]
	if in.Kind != actoviq.InterruptReconciliation || in.Probe == nil || in.Probe.Outcome != tool.ProbeUnknown ||
		!strings.Contains(in.Probe.Error, "probe panicked: probe bug") || pay.count() != 1 {
		t.Fatalf("interruption %+v probe %+v, %d calls", in, in.Probe, pay.count())
	}
}

// panicProvider panics in every model call.
type panicProvider struct{ *scripted.Provider }

func (panicProvider) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	panic("provider bug")
}
func (panicProvider) Stream(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	panic("provider bug")
}

// A provider is user code too: its panic used to take the process down.
// The run ends with the panic as its model error; nothing was committed.
func TestProviderPanicRecovered(t *testing.T) {
	s := newSetup(t)
	a := agent(nil)
	a.Provider = panicProvider{scripted.New()}
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status == actoviq.StatusRunning || res.Status == actoviq.StatusCompleted || res.Error == nil ||
		!strings.Contains(res.Error.Message, "provider panicked: provider bug") {
		t.Fatalf("%+v %v", res, err)
	}
}
