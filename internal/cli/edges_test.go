package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// The approvals policy through the command line: a refused approval says
// why; two distinct approvers; runs show says who approved and who is
// still needed; audit export writes the trail as JSON lines.
func TestApprovalsPolicyAndAuditExport(t *testing.T) {
	h := newHarness(t)
	pol := filepath.Join(h.dir, "approvals.json")
	if err := os.WriteFile(pol, []byte(`{"version": "p1", "groups": {"finance": ["alice", "bob"]},
	  "rules": [{"name": "payments", "tools": ["pay_invoice"], "approve": ["group:finance"], "reject": ["group:finance"],
	             "settle": ["group:finance"], "approvers": 2},
	            {"name": "rest", "approve": ["*"], "reject": ["*"], "settle": ["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.envs["ACTOVIQ_APPROVALS"] = pol
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	h.want(ExitUsage, "approve", "r1", "call_pay", "--store", h.store, "--by", "carol")
	if s := h.stderr.String(); !strings.Contains(s, "refused: carol may not approve call call_pay of pay_invoice") || !strings.Contains(s, "nothing was recorded") {
		t.Fatalf("refusal:\n%s", s)
	}
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice", "--note", "invoice checked")
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if s := h.stdout.String(); !strings.Contains(s, "approvals: 1 of 2 distinct approvers (approved by alice); still needed: 1 more from group:finance") {
		t.Fatalf("runs show:\n%s", s)
	}
	h.want(ExitUsage, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "bob")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	if h.bankLines() != 1 {
		t.Fatalf("%d payments", h.bankLines())
	}
	// --approvals names another file than the environment: it wins.
	h.want(ExitUsage, "approve", "r1", "call_pay", "--store", h.store, "--approvals", filepath.Join(h.dir, "missing.json"))

	for _, args := range [][]string{{"--run", "r1"}, {"--since", "1h"}} {
		h.want(ExitCompleted, append([]string{"audit", "export", "--store", h.store}, args...)...)
		lines := strings.Split(strings.TrimSpace(h.stdout.String()), "\n")
		if len(lines) != 1 {
			t.Fatalf("audit export %v: %d lines:\n%s", args, len(lines), h.stdout)
		}
		var rec struct {
			Schema   int    `json:"schema"`
			RunID    string `json:"run_id"`
			CallID   string `json:"call_id"`
			Kind     string `json:"kind"`
			By       string `json:"by"`
			Decision struct {
				Required         int    `json:"required"`
				ApproversVersion string `json:"approvers_version"`
				Approvers        []struct {
					By   string `json:"by"`
					Note string `json:"note"`
					Seen struct {
						Args         json.RawMessage `json:"args"`
						Digest       string          `json:"digest"`
						AgentVersion string          `json:"agent_version"`
					} `json:"seen"`
				} `json:"approvers"`
			} `json:"decision"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
			t.Fatal(err)
		}
		d := rec.Decision
		if rec.Schema != 1 || rec.RunID != "r1" || rec.CallID != "call_pay" || rec.Kind != "approve" || rec.By != "bob" ||
			d.Required != 2 || d.ApproversVersion != "p1" || len(d.Approvers) != 2 || d.Approvers[0].By != "alice" || d.Approvers[0].Note != "invoice checked" {
			t.Fatalf("audit record: %s", lines[0])
		}
		for _, a := range d.Approvers {
			if a.Seen.Digest != actoviq.ArgsRenderingDigest(a.Seen.Args) || len(a.Seen.Args) == 0 || a.Seen.AgentVersion == "" {
				t.Fatalf("what %s saw: %+v", a.By, a.Seen)
			}
		}
	}
	h.want(ExitCompleted, "audit", "export", "--store", h.store, "--since", "2000-01-01T00:00:00Z", "--until", "2000-01-02T00:00:00Z")
	if h.stdout.Len() != 0 {
		t.Fatalf("a window with no decisions: %s", h.stdout)
	}
	h.want(ExitUsage, "audit", "export", "--store", h.store)
}
