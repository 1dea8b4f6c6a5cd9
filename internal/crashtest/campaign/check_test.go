package main

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
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

// TestWindowCheckerCounts runs a window episode in this process without
// kills (the windows of runs 3 and 4 cut the session; every count 0), then
// plants an item in the session under run 2's id: its own items are no
// longer what the session holds for it, and the windows of runs 3 and 4,
// read again as of their revisions, still match (the planted item comes
// after them).
func TestWindowCheckerCounts(t *testing.T) {
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
	sc, _ := scenarioByName("window")
	w := world{dir: dir}
	plans := sc.runs("e1")
	var ids []string
	for _, p := range plans {
		a, closeAgent, err := sc.agent(w, p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Run(ctx, a, userInput(p))
		closeAgent()
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run %s: %+v %v", p.ID, res, err)
		}
		ids = append(ids, p.ID)
	}
	omitted := map[string]int64{}
	for _, p := range plans {
		info, err := rt.Get(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		omitted[p.ID] = info.SessionOmitted
	}
	if want := map[string]int64{"e1-r1": 0, "e1-r2": 0, "e1-r3": 8, "e1-r4": 21}; !maps.Equal(omitted, want) {
		t.Fatalf("SessionOmitted %v, want %v", omitted, want)
	}
	check := func() counts {
		c := &cell{scenario: sc}
		env := &episodeEnv{c: c, rt: rt}
		ep := &episode{committed: map[string]json.RawMessage{}, keys: map[string]string{}, reexec: map[string]int{}}
		if err := env.check(ctx, ep, w, "e1", plans, ids); err != nil {
			t.Fatal(err)
		}
		if err := env.checkWindow(ctx, "e1", plans); err != nil {
			t.Fatal(err)
		}
		if c.c.any() {
			t.Log(c.details)
		}
		return c.c
	}
	if got := check(); got.any() {
		t.Fatalf("a clean episode: %+v", got)
	}
	if _, err := s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: rt.Tenant(), SessionID: plans[0].Session, ExpectedRevision: 32,
		RunID: "e1-r2", Items: []json.RawMessage{json.RawMessage(`{"type":"text","role":"user","text":"planted"}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != (counts{Lost: 1}) {
		t.Fatalf("a planted session item: %+v, want Lost 1", got)
	}
}
