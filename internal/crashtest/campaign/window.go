package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// Scenario window: four runs continue one session, each longer than the
// session window of the runs after it, so that the window cuts
// (AgentSpec.SessionWindow; DefaultSessionWindow is 1,000 items, these
// windows are a few). Each run makes two calls and a side effect among
// them, then answers: 8 items (its input, two assistant turns of calls,
// three results, the answer). Run 3 takes a window of 10 items of a
// session of 16: cut at its first user message, the 8 items of run 2, 8
// left out. Run 4 takes a window of 5 of 24: no user message among them,
// so the window starts after the results whose calls it cut off (3 items,
// 21 left out).
//
// Besides the campaign's counts, the checker (checkWindow) counts as lost
// a completed run whose own items (its transcript after the session's
// part) are not exactly the items the session holds for it, and a
// transcript whose session part is not the window of the session as of
// the run's revision (recomputed here from the journal), or whose
// RunInfo.SessionOmitted does not count what the window left out.

func windowRuns(ep string) []runPlan {
	s := ep + "-s"
	var out []runPlan
	for k := 1; k <= 4; k++ {
		out = append(out, runPlan{ID: fmt.Sprintf("%s-r%d", ep, k), Session: s, Input: fmt.Sprintf("run %d", k)})
	}
	return out
}

// windowOf is the session window of a run of the scenario.
func windowOf(rp runPlan) int {
	if strings.HasSuffix(rp.ID, "-r4") {
		return 5
	}
	return 10
}

// windowAgent: the run's model answers from its own items only (the
// script is indexed by the assistant turns after the run's input), since
// what the window shows of the session varies from run to run.
func windowAgent(w world, rp runPlan) (*actoviq.AgentSpec, func(), error) {
	k := 0
	if i := strings.LastIndex(rp.ID, "-r"); i >= 0 {
		k, _ = strconv.Atoi(rp.ID[i+2:])
	}
	id := func(s string) string { return fmt.Sprintf("w%d%s", k, s) }
	m := &ownTurns{recorder: model(w, "campaign-window",
		scripted.Turn{ToolCalls: []scripted.ToolCall{call(id("a"), "pay", 10*k+1), call(id("l"), "lookup", 10*k+2)}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call(id("b"), "put", 10*k+3)}},
		scripted.Turn{Text: fmt.Sprintf("answer %d", k)})}
	return &actoviq.AgentSpec{ID: "campaign-window", Model: "scripted-1", Provider: m, SessionWindow: windowOf(rp),
		Tools: []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read), effectTool(w, "put", tool.IdempotentWrite)},
	}, func() {}, nil
}

// ownTurns records the whole request (requests.log), then answers from the
// items from the request's last user text on: the run's own turns.
type ownTurns struct{ *recorder }

func (o *ownTurns) own(req *llm.Request) *llm.Request {
	r := *req
	for i := len(r.Items) - 1; i >= 0; i-- {
		if it := r.Items[i]; it.Role == item.RoleUser && it.Type == item.TypeText {
			r.Items = r.Items[i:]
			break
		}
	}
	return &r
}

func (o *ownTurns) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := o.record(req); err != nil {
		return nil, err
	}
	return o.Provider.Generate(ctx, o.own(req))
}

func (o *ownTurns) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if err := o.record(req); err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return o.Provider.Stream(ctx, o.own(req))
}

// expectWindow is the window a run with window n takes of the session's
// items as of its revision, by the rule of AgentSpec.SessionWindow
// written out again: the last n items, from the first user message among
// them when the session is longer; without one, after every result whose
// call was cut off (the scenario reuses no call id).
func expectWindow(items []item.Item, n int) []item.Item {
	if len(items) <= n {
		return items
	}
	items = items[len(items)-n:]
	for i, it := range items {
		if it.Role == item.RoleUser && it.Type == item.TypeText {
			return items[i:]
		}
	}
	calls := map[string]bool{}
	start := 0
	for i, it := range items {
		switch {
		case it.Type == item.TypeToolCall:
			calls[it.ToolCall.ID] = true
		case it.Type == item.TypeToolResult && !calls[it.ToolResult.CallID]:
			start = i + 1
		}
	}
	return items[start:]
}

// sameItems compares items by their JSON.
func sameItems(a, b []item.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, err1 := json.Marshal(a[i])
		y, err2 := json.Marshal(b[i])
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// checkWindow counts, for each completed run of the episode's session, a
// transcript that is not its window of the session followed by exactly
// the items the session holds for it, and a SessionOmitted that does not
// count what its window left out.
func (e *episodeEnv) checkWindow(ctx context.Context, name string, plans []runPlan) error {
	c := e.c
	st, err := e.rt.Store().SessionLoad(ctx, &store.SessionLoadParams{Tenant: e.rt.Tenant(), SessionID: plans[0].Session})
	if err != nil {
		return fmt.Errorf("load session %s: %w", plans[0].Session, err)
	}
	var all []item.Item
	perRun := map[string][]item.Item{}
	for _, en := range st.Entries {
		var it item.Item
		if err := json.Unmarshal(en.Item, &it); err != nil {
			return fmt.Errorf("session %s#%d: %w", plans[0].Session, en.Seq, err)
		}
		if en.Seq != int64(len(all))+1 {
			c.c.Lost++
			c.violation("%s: session %s: entry %d follows %d", name, plans[0].Session, en.Seq, len(all))
		}
		all = append(all, it)
		perRun[en.RunID] = append(perRun[en.RunID], it)
	}
	cut, done := 0, 0 // runs whose window left items out; completed runs
	for _, p := range plans {
		info, err := e.rt.Get(ctx, p.ID)
		if err != nil {
			return fmt.Errorf("get %s: %w", p.ID, err)
		}
		if info.Status != actoviq.StatusCompleted {
			continue // counted by check
		}
		done++
		if info.SessionError != "" || info.SessionItems > len(info.Transcript) || info.SessionRevision > int64(len(all)) {
			c.c.Lost++
			c.violation("%s: run %s: session part unreadable (%q), %d items of a transcript of %d, revision %d of %d",
				name, p.ID, info.SessionError, info.SessionItems, len(info.Transcript), info.SessionRevision, len(all))
			continue
		}
		own := info.Transcript[info.SessionItems:]
		if !sameItems(own, perRun[p.ID]) {
			c.c.Lost++
			c.violation("%s: run %s: its %d own items are not the %d the session holds for it", name, p.ID, len(own), len(perRun[p.ID]))
		}
		if len(own) != 8 {
			c.c.Lost++
			c.violation("%s: run %s has %d items of its own, want 8", name, p.ID, len(own))
		}
		want := expectWindow(all[:info.SessionRevision], windowOf(p))
		if !sameItems(info.Transcript[:info.SessionItems], want) {
			c.c.Lost++
			c.violation("%s: run %s (window %d, revision %d): its %d session items are not the window's %d",
				name, p.ID, windowOf(p), info.SessionRevision, info.SessionItems, len(want))
		}
		if omitted := info.SessionRevision - int64(len(want)); info.SessionOmitted != omitted {
			c.c.Lost++
			c.violation("%s: run %s: SessionOmitted %d, the window left out %d", name, p.ID, info.SessionOmitted, omitted)
		}
		if info.SessionOmitted > 0 {
			cut++
		}
	}
	if done == len(plans) && cut != 2 {
		c.c.Lost++
		c.violation("%s: the windows of %d runs cut the session, want 2 (runs 3 and 4)", name, cut)
	}
	return nil
}
