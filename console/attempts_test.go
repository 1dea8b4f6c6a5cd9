package console_test

import (
	"context"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
)

// The run page and its JSON show each real attempt of a call: the worker
// and epoch that started it, and how it ended.
func TestRunPageAttempts(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-a")
	b, _ := f.login("bob", tokenAnon)
	if page := f.callWith(b.c, "GET", "/runs/run-a", "", ""); strings.Contains(string(page.body), `id="attempts-h"`) {
		t.Error("attempts shown for a call that never started")
	}
	if _, err := f.rt.Resume(context.Background(), f.agent, "run-a", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "call_1", Kind: actoviq.DecideApprove, By: "t"}}}); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Attempts []actoviq.CallAttempt `json:"attempts"`
	}
	f.callWith(b.c, "GET", "/api/v1/runs/run-a", "", "").json(t, &v)
	if len(v.Attempts) != 1 {
		t.Fatalf("attempts %+v", v.Attempts)
	}
	a := v.Attempts[0]
	if a.CallID != "call_1" || a.Number != 1 || a.Holder == "" || a.Epoch == 0 || a.End != actoviq.AttemptCommitted || a.EndedAt.IsZero() {
		t.Errorf("attempt %+v", a)
	}
	page := string(f.callWith(b.c, "GET", "/runs/run-a", "", "").body)
	for _, want := range []string{`id="attempts-h"`, `id="attempt-call_1-1"`, a.Holder, "st-committed"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
}
