package cli

import (
	"strings"
	"testing"
)

// A run overtaken by another run of its session used to stay interrupted
// with nothing to decide, and each resume called the model again. The
// resume ends it failed and prints the way out; a second resume does the
// same without calling the model.
func TestOvertakenRunPrintsWayOut(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "--session", "s", "pay INV-42")...)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r2", "--session", "s", "pay INV-42")...)
	h.want(ExitCompleted, "approve", "r2", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "resume", "r2", "--store", h.store)
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	for range 2 {
		h.want(ExitFailed, "resume", "r1", "--store", h.store)
		out := h.stdout.String()
		for _, s := range []string{"session_conflict", "actoviq runs show r1 --store", "actoviq run --session s --store"} {
			if !strings.Contains(out, s) {
				t.Fatalf("resume output lacks %q:\n%s", s, out)
			}
		}
	}
	if h.bankLines() != 1 {
		t.Fatalf("bank has %d payments, want 1 (the overtaken run's approved payment never runs)", h.bankLines())
	}
}
