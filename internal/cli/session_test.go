package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
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

// A cancelled run's call whose outcome is unknown is shown as unsettled
// with the commands that record what happened, and resolve records it
// without telling to resume a run that will not continue.
func TestCancelledRunUnsettledCallResolvable(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	st, err := storesqlite.Open(strings.TrimPrefix(h.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(context.Context, struct{}) (string, error) {
		return "", fmt.Errorf("bank timed out: %w", tool.ErrOutcomeUnknown)
	})
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{}`)}}})
	a := &actoviq.AgentSpec{ID: "a", Provider: p, Model: "m", Tools: []tool.Tool{pay}}
	if res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if err := rt.Cancel(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	st.Close()
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	for _, s := range []string{"unsettled calls (the run is cancelled", "actoviq resolve r1 c1 --committed --result JSON --store"} {
		if !strings.Contains(h.stdout.String(), s) {
			t.Fatalf("runs show lacks %q:\n%s", s, h.stdout)
		}
	}
	h.want(ExitUsage, "resolve", "r1", "c1", "--reexecute", "--store", h.store)
	h.want(ExitCompleted, "resolve", "r1", "c1", "--committed", "--result", `"paid"`, "--store", h.store)
	if out := h.stdout.String(); !strings.Contains(out, "does not continue") || strings.Contains(out, "actoviq resume") {
		t.Fatalf("resolve output:\n%s", out)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if strings.Contains(h.stdout.String(), "unsettled calls") {
		t.Fatalf("still unsettled after resolve:\n%s", h.stdout)
	}
}

// A run id that would make idempotency keys ambiguous is a usage error
// that names the flag; nothing is stored.
func TestRunIDWithSeparatorIsUsageError(t *testing.T) {
	h := newHarness(t)
	h.want(ExitUsage, h.runArgs("--run-id", "acct:7", "pay INV-42")...)
	if out := h.stderr.String() + h.stdout.String(); !strings.Contains(out, `--run-id "acct:7"`) || strings.Contains(out, "Input.RunID") {
		t.Fatalf("output:\n%s", out)
	}
	h.want(ExitCompleted, "runs", "list", "--store", h.store)
	if strings.Contains(h.stdout.String(), "acct") {
		t.Fatalf("a refused run was stored:\n%s", h.stdout)
	}
}

// run --session-window: the run takes only the session's last items, and
// runs show says which revision of the session it started from, how many
// of its transcript's items came from it and how many earlier ones the
// window left out. --session-window all takes the whole session.
func TestSessionWindowFlag(t *testing.T) {
	h := newHarness(t)
	for _, w := range []string{"-1", "0", "x", "4x"} {
		h.want(ExitUsage, h.runArgs("--session", "s", "--session-window", w, "pay INV-42")...)
	}
	h.want(ExitUsage, h.runArgs("--session-window", "4", "pay INV-42")...)
	h.want(ExitUsage, h.runArgs("--session-window", "all", "pay INV-42")...)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "--session", "s", "pay INV-42")...)
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store) // the session holds r1's 8 items
	// The last 4: r1's paying turn, its result and its answer. The
	// scripted model, seeing two turns, answers with its third.
	h.want(ExitCompleted, h.runArgs("--run-id", "r2", "--session", "s", "--session-window", "4", "and now?")...)
	if out := h.stdout.String(); !strings.Contains(out, "session s from revision 8: 4 items of it; the session window left out 4 earlier items (--session-window all sends them)") {
		t.Fatalf("run r2:\n%s", out)
	}
	h.want(ExitCompleted, "runs", "show", "r2", "--store", h.store)
	out := h.stdout.String()
	if !strings.Contains(out, "session s (from revision 8: the transcript's first 4 items; the session window left out 4 earlier items)") ||
		strings.Contains(out, "pay INV-42") || !strings.Contains(out, "and now?") {
		t.Fatalf("runs show r2:\n%s", out)
	}
	// The whole session: nothing left out, and runs show says no more.
	h.stdout.Reset()
	// (The scripted model has no answer for a fifth turn: the run fails,
	// after the model was asked with the whole session.)
	h.want(ExitFailed, h.runArgs("--run-id", "r3", "--session", "s", "--session-window", "all", "and then?")...)
	h.want(ExitCompleted, "runs", "show", "r3", "--store", h.store)
	out = h.stdout.String()
	if !strings.Contains(out, "session s (from revision 10: the transcript's first 10 items)") ||
		!strings.Contains(out, "pay INV-42") || !strings.Contains(out, "and then?") {
		t.Fatalf("runs show r3:\n%s", out)
	}
	if h.bankLines() != 1 {
		t.Fatalf("bank has %d payments, want 1", h.bankLines())
	}
}
