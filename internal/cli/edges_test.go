package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// goStartedRun makes, in the harness's store, an interrupted run the way a
// Go program does: no CLI settings in its meta.
func goStartedRun(t *testing.T, h *harness, runID string) { goStartedRunWith(t, h, runID, true) }

// goStartedRunWith: with approve false, the payment's outcome is unknown
// instead (the tool says it cannot tell), so the run waits for
// reconciliation.
func goStartedRunWith(t *testing.T, h *harness, runID string, approve bool) {
	t.Helper()
	st, err := storesqlite.Open(filepath.Join(h.dir, "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect}, func(ctx context.Context, in struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}) (string, error) {
		if !approve {
			return "", fmt.Errorf("bank timed out: %w", tool.ErrOutcomeUnknown)
		}
		return "sent", nil
	})
	a := &actoviq.AgentSpec{ID: "billing", Model: "scripted", Tools: []tool.Tool{pay},
		Provider: scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_pay", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":42}`)}}}),
	}
	if approve {
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	}
	res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: runID, Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
}

// approve on a run a Go program started does not send the operator to
// actoviq resume, which would refuse: it says the program resumes it.
func TestApproveGoStartedRunSaysWhoResumes(t *testing.T) {
	h := newHarness(t)
	goStartedRun(t, h, "g1")
	h.want(ExitCompleted, "approve", "g1", "call_pay", "--store", h.store, "--by", "alice")
	out := h.stdout.String()
	if strings.Contains(out, "continue with: actoviq resume") || !strings.Contains(out, "started by a Go program with agent billing") ||
		!strings.Contains(out, "Runtime.Resume") {
		t.Fatalf("approve output:\n%s", out)
	}
	// The command it would have named indeed refuses.
	h.want(ExitUsage, "resume", "g1", "--store", h.store)

	// A run the command started keeps its actoviq resume line.
	h.want(ExitInterrupted, h.runArgs("--run-id", "c1", "pay INV-42")...)
	h.want(ExitCompleted, "approve", "c1", "call_pay", "--store", h.store, "--by", "alice")
	if !strings.Contains(h.stdout.String(), "continue with: actoviq resume c1 --store") {
		t.Fatalf("approve output:\n%s", h.stdout)
	}
}

// runs list shows no holder for a run nobody should be driving, although
// its claim names the process that recorded a decision (gone by now).
func TestRunsListNoHolderForWaitingRuns(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "runs", "list", "--store", h.store)
	lines := strings.Split(strings.TrimSpace(h.stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "r1 ") {
		t.Fatalf("runs list:\n%s", h.stdout)
	}
	if f := strings.Fields(lines[1]); f[1] != "interrupted" || f[len(f)-1] != "-" || strings.Contains(lines[1], "gone") || strings.Contains(lines[1], "expired") {
		t.Fatalf("runs list row: %q", lines[1])
	}
}

// resolve --committed takes plain text as the result's text.
func TestResolveCommittedPlainText(t *testing.T) {
	h := newHarness(t)
	goStartedRunWith(t, h, "g2", false)
	h.want(ExitCompleted, "resolve", "g2", "call_pay", "--store", h.store, "--committed", "--result", "payment p-77 sent", "--by", "bob")
	h.want(ExitCompleted, "runs", "show", "g2", "--store", h.store, "--json")
	var v struct {
		Ledger []struct {
			Result json.RawMessage `json:"result"`
		} `json:"ledger"`
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &v); err != nil || len(v.Ledger) != 1 {
		t.Fatalf("%v\n%s", err, h.stdout)
	}
	var r tool.Result
	if err := json.Unmarshal(v.Ledger[0].Result, &r); err != nil || r.Content != "payment p-77 sent" || r.Data != nil {
		t.Fatalf("result %s (%v)", v.Ledger[0].Result, err)
	}
}
