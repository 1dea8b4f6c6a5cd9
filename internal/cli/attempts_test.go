package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// runs show lists each real attempt of a call with its holder, epoch and
// end; a call waiting for approval has none yet.
func TestRunsShowAttempts(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if _, tail, _ := strings.Cut(h.stdout.String(), "\nattempts:\n"); regexp.MustCompile(`call_pay\s+1\s`).MatchString(tail) {
		t.Fatalf("an attempt of call_pay shown before it started:\n%s", h.stdout)
	}
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	out := h.stdout.String()
	_, tail, ok := strings.Cut(out, "\nattempts:\n")
	if !ok || !regexp.MustCompile(`call_pay\s+1\s+\S+\s+\S+\s+[1-9]\d*\s+\S+\s+committed`).MatchString(tail) {
		t.Fatalf("runs show has no committed attempt 1 of call_pay:\n%s", out)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store, "--json")
	var v struct {
		Attempts []struct {
			CallID string `json:"call_id"`
			Number int
			Holder string
			Epoch  int64
			End    string
		}
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	pays := 0
	for _, a := range v.Attempts {
		if a.CallID != "call_pay" {
			continue
		}
		pays++
		if a.Number != 1 || a.Holder == "" || a.Epoch == 0 || a.End != "committed" {
			t.Errorf("runs show --json attempt of call_pay: %+v", a)
		}
	}
	if pays != 1 {
		t.Fatalf("runs show --json: %d attempts of call_pay, want 1: %+v", pays, v.Attempts)
	}
}
