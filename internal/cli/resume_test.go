package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// resume --accept-agent-change takes a refused change over: who and why
// are recorded with the diff; --note is required; --by/--note alone are
// refused rather than ignored.
func TestResumeAcceptAgentChange(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--note", "why")
	if !strings.Contains(h.stderr.String(), "--by and --note go with --accept-agent-change") {
		t.Fatalf("stray --note: %s", h.stderr)
	}
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--approve", "none", "--accept-agent-change")
	if !strings.Contains(h.stderr.String(), "needs --note") {
		t.Fatalf("missing --note: %s", h.stderr)
	}
	// Taken over; the waiting call keeps waiting for its decision.
	h.want(ExitInterrupted, "resume", "r1", "--store", h.store, "--approve", "none", "--accept-agent-change", "--by", "carol", "--note", "approvals move to the bank")
	if !strings.Contains(h.stderr.String(), "--approve side-effect → none") {
		t.Fatalf("the change was not reported: %s", h.stderr)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store, "--json")
	var info struct {
		Meta struct {
			CLI struct {
				Approve string `json:"approve"`
			} `json:"cli"`
		} `json:"meta"`
		AgentChanges []struct {
			By, Note string
			Changes  []struct {
				Tool, Field, From, To, Kind string
			}
		} `json:"agent_changes"`
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if info.Meta.CLI.Approve != "none" || len(info.AgentChanges) != 1 {
		t.Fatalf("meta %+v, agent changes %+v", info.Meta, info.AgentChanges)
	}
	rec := info.AgentChanges[0]
	found := false
	for _, c := range rec.Changes {
		if c.Tool == "pay_invoice" && c.Field == "approval" && c.Kind == "refused" {
			found = true
		}
	}
	if rec.By != "carol" || rec.Note != "approvals move to the bank" || !found {
		t.Fatalf("record = %+v", rec)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	for _, want := range []string{"agent changes:", "accepted by carol: approvals move to the bank", "needed a decision: tool pay_invoice: approval needs approval → no approval"} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Fatalf("runs show lacks %q:\n%s", want, h.stdout)
		}
	}
	// The new settings are the run's own now: a plain resume is not refused.
	h.want(ExitInterrupted, "resume", "r1", "--store", h.store)
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	if h.bankLines() != 1 {
		t.Fatalf("%d payments", h.bankLines())
	}
}
