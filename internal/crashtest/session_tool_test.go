package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// envSessionTool makes the session child's run call a tool before it
// answers.
const envSessionTool = "CRASHTEST_SESSION_TOOL"

// sessionToolAgent is sessionAgent with a side effect before the answer:
// the earlier run's turn, then call c1 of act, then the answer.
func sessionToolAgent(answer, counter string) (*actoviq.AgentSpec, *scripted.Provider) {
	p := scripted.New(scripted.Turn{Text: "hello"},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: callID, Name: toolName, Arguments: json.RawMessage(`{"n":1}`)}}},
		scripted.Turn{Text: answer})
	a := newAgent(tool.SideEffect, actoviq.RecoveryPolicy{}, counter, nil)
	a.ID, a.Provider = "crashtest-session", p
	return a, p
}

// TestCrashBetweenSessionAppendAndCompletionAfterTool: the crash campaign
// found this one (scripts/crash-campaign, scenario session). The run's
// last tool turn is committed, the model answers, the run folds the tool
// result into its transcript in memory, appends to the session, and is
// SIGKILLed before the completion write. The checkpoint still lists the
// committed call as pending, so the resume did not recognise the run's
// own append and ended the run failed session_conflict ("nothing of this
// run was appended"), while the session held its items. It must complete
// with the session's answer, without asking the model or running the
// tool again.
func TestCrashBetweenSessionAppendAndCompletionAfterTool(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			ctx := context.Background()
			b := setup(t, bk)
			rt := b.parent(t)
			first, _ := sessionAgent("unused")
			if res, err := rt.Run(ctx, first, &actoviq.Input{SessionID: sessionID, Items: []item.Item{item.UserText("hi")}}); err != nil ||
				res.Status != actoviq.StatusCompleted {
				t.Fatalf("the first run: %+v %v", res, err)
			}
			crashChild(t, b, scenario{effect: tool.SideEffect}, modeSession, "", pointSessionAppended, envSessionTool+"=1")
			if got := readEffects(t, b.counter); len(got) != 1 {
				t.Fatalf("%d effects after the kill, want 1: %v", len(got), got)
			}
			info, err := rt.Get(ctx, b.runID)
			if err != nil || info.StoredStatus != actoviq.StatusRunning || len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted {
				t.Fatalf("after the kill: %+v %v, want the run stored running with c1 committed", info, err)
			}
			a, p := sessionToolAgent("second answer", b.counter)
			res, err := resumeWhenFree(ctx, b.parent(t), a, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "first answer" {
				t.Fatalf("resume: status %s error %+v output %+v; want completed with the session's \"first answer\"", res.Status, res.Error, res.Output)
			}
			if p.Calls() != 0 {
				t.Fatalf("the resume asked the model %d times", p.Calls())
			}
			if got := readEffects(t, b.counter); len(got) != 1 {
				t.Fatalf("%d effects after the resume, want 1: %v", len(got), got)
			}
			info, err = rt.Get(ctx, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, it := range info.Transcript {
				kinds = append(kinds, string(it.Type))
			}
			// The session's history (hi, hello), then the run's items.
			if fmt.Sprint(kinds) != "[text text text tool_call tool_result text]" || info.Transcript[len(info.Transcript)-1].Text != "first answer" {
				t.Fatalf("transcript %v: %+v", kinds, info.Transcript)
			}
		})
	}
}
