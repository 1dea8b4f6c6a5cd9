package actoviq_test

import (
	"errors"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// A tool call whose arguments were a JSON array left the run in running
// with an untyped "encode checkpoint" error, and each resume called the
// model again (issue 10, break 5). Such a call is recorded, never
// executed, and answered with an error result the model sees.
func TestMalformedArgumentsGetAnErrorResult(t *testing.T) {
	for name, args := range map[string]string{"array": `[1,2]`, "string": `"amount=5"`, "not JSON": `{"amount":5,"api_key":"sk-trunc`} {
		t.Run(name, func(t *testing.T) {
			s := newSetup(t)
			look := &payTool{name: "lookup", effect: tool.Read}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", args)}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("c2", "lookup", `{"amount":1}`)}}, scripted.Turn{Text: "done"})
			res, err := s.rt.Run(s.ctx, agent(p, look), &actoviq.Input{RunID: "r1"})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			info, _ := s.rt.Get(s.ctx, "r1")
			r := toolResults(t, info)["c1"]
			if !r.IsError || !strings.Contains(r.Content, "not a JSON object") || look.count() != 1 {
				t.Fatalf("result %+v, %d executions", r, look.count())
			}
			en := info.Ledger[0]
			if en.State != store.LedgerCommitted || en.Attempt != 0 || !strings.Contains(string(en.Error), "malformed_arguments") {
				t.Fatalf("entry %+v", en)
			}
			if strings.Contains(storeText(t, s, "r1"), "sk-trunc") {
				t.Fatal("the secret in the malformed arguments reached the store")
			}
		})
	}
}

// The per-run bound: one malformed call more than Limits.MaxMalformedCalls
// ends the run failed with model_behavior, persisted and typed; a resume
// does not call the model again.
func TestMalformedArgumentsAreBounded(t *testing.T) {
	s := newSetup(t)
	look := &payTool{name: "lookup", effect: tool.Read}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", `[1]`)}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c2", "lookup", `[2]`)}}, scripted.Turn{Text: "done"})
	a := agent(p, look)
	a.Limits.MaxMalformedCalls = 1
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusFailed || !errors.Is(res.Error, actoviq.ErrModelBehavior) {
		t.Fatalf("%+v %v", res, err)
	}
	checkFailedForGood(t, s, a, p, "r1")
}

// Any other invalid item (here a tool call without a name) ends the run
// failed with model_behavior, with the response kept as evidence.
func TestInvalidResponseItemFailsTheRun(t *testing.T) {
	s := newSetup(t)
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Arguments: []byte(`{"client_secret":"cs-1"}`)}}}, scripted.Turn{Text: "done"})
	a := agent(p, &payTool{name: "pay"})
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusFailed || !errors.Is(res.Error, actoviq.ErrModelBehavior) || res.Error.Code != "model_behavior" {
		t.Fatalf("%+v %v", res, err)
	}
	txt := storeText(t, s, "r1")
	if !strings.Contains(txt, "actoviq.rejected") || strings.Contains(txt, "cs-1") {
		t.Fatal("want the refused item kept as redacted evidence")
	}
	checkFailedForGood(t, s, a, p, "r1")
}

func checkFailedForGood(t *testing.T, s *setup, a *actoviq.AgentSpec, p *scripted.Provider, runID string) {
	t.Helper()
	run, err := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: runID})
	if err != nil || run.Status != store.RunFailed {
		t.Fatalf("stored status %v %v, want failed", run.Status, err)
	}
	calls := p.Calls()
	res, err := s.runtime(t).Resume(s.ctx, a, runID, nil)
	if errors.Is(err, actoviq.ErrRunFinished) {
		res, err = &actoviq.RunResult{Status: actoviq.StatusFailed}, nil
	}
	if err != nil || res.Status != actoviq.StatusFailed || p.Calls() != calls {
		t.Fatalf("resume: %+v %v; model calls %d → %d", res, err, calls, p.Calls())
	}
}
