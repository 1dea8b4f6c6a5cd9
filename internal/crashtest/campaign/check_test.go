package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
)

// TestCheckerCounts runs a batch episode in this process without kills
// (every count 0), then plants what the checker must find: a second
// execution of a side effect, and a request holding a call without its
// result.
func TestCheckerCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tg := target{Kind: "sqlite", DSN: filepath.Join(dir, "actoviq.db")}
	s, err := tg.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rt, err := actoviq.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sc, _ := scenarioByName("batch")
	w := world{dir: dir}
	plans := sc.runs("e1")
	a, closeAgent, err := sc.agent(w, plans[0])
	if err != nil {
		t.Fatal(err)
	}
	defer closeAgent()
	if res, err := rt.Run(ctx, a, userInput(plans[0])); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run: %+v %v", res, err)
	}
	check := func() counts {
		c := &cell{scenario: sc}
		env := &episodeEnv{c: c, rt: rt}
		ep := &episode{committed: map[string]json.RawMessage{}, keys: map[string]string{}, reexec: map[string]int{}}
		if err := env.check(ctx, ep, w, "e1", plans, []string{plans[0].ID}); err != nil {
			t.Fatal(err)
		}
		return c.c
	}
	if got := check(); got.any() {
		t.Fatalf("a clean run: %+v", got)
	}
	if err := appendJSON(w.effects(), effectLine{Tool: "pay", Key: "e1-r1:c3", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := appendJSON(w.requests(), requestLine{Agent: "campaign-batch", Calls: []string{"c1", "c2"}, Results: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != (counts{DupEffects: 2, Unanswered: 1}) {
		// Two: the key ran twice with no re-execute decision, and its
		// attempt 1 ran twice.
		t.Fatalf("planted violations: %+v, want DupEffects 2, Unanswered 1", got)
	}
}
