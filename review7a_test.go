package actoviq_test

// review7A: the cause of a stop (Close, a worker's release, a lost claim,
// Cancel from this or another process, the caller's cancellation, the
// run's deadline, an agent tool's timeout) reaches every drive of a run
// tree, and the tree ends the way docs/design.md says: closed or released,
// resumable; cancelled (caller, Cancel, deadline), cancelled for good.

import (
	"context"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// r7tree is root → mid → leaf, each child through a fail-fast agent tool
// (opts); leaf answers from m.
func r7tree(t *testing.T, m *gateModel, opts *actoviq.AgentToolOptions) *actoviq.AgentSpec {
	t.Helper()
	leaf := &actoviq.AgentSpec{ID: "leaf", Instructions: "leaf", Provider: m, Model: "scripted-1"}
	mid := childAgent("mid", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("m1", "leaf", `{"input":"x"}`)}}, scripted.Turn{Text: "mid done"}),
		mustAgentTool(t, leaf, opts))
	return agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("r1", "mid", `{"input":"y"}`)}}, scripted.Turn{Text: "root done"}),
		mustAgentTool(t, mid, opts))
}

// A run cancelled while its foreground child runs ends cancelled, with
// every run of the tree below it; it does not end failed because the
// child it cancelled is "not a success" (fail-fast). The same for the
// run's deadline (cancelled, code deadline). On main the root and the
// middle run ended failed (child_failed: ... cancelled), and Cancel
// reported "it ended before the cancellation took effect; nothing was
// cancelled" although it had cancelled the leaf.
func TestReview7StopOfParentEndsTreeCancelled(t *testing.T) {
	kinds := []string{"caller", "cancel", "cancel-other-process", "deadline"}
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, kind := range kinds {
			t.Run(kind, func(t *testing.T) {
				ctx := context.Background()
				g := newGate(0, scripted.Turn{Text: "leaf answer"})
				a := r7tree(t, g, nil)
				ttl := time.Minute
				if kind == "cancel-other-process" {
					ttl = 1500 * time.Millisecond // the heartbeat (every ttl/3) reads the request; shorter leases expire under -race and load
				}
				if kind == "deadline" {
					a.Limits.RunTimeout = 300 * time.Millisecond
				}
				rt := newRT(t, st, "A", ttl)
				id := "p-" + kind
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				out := make(chan driveOut, 1)
				go func() {
					res, err := rt.Run(rctx, a, &actoviq.Input{RunID: id, Items: input("go").Items})
					out <- driveOut{res, err}
				}()
				<-g.entered
				var cerr error
				switch kind {
				case "caller":
					cancel()
				case "cancel":
					cerr = rt.Cancel(ctx, id)
				case "cancel-other-process":
					cerr = newRT(t, st, "B", time.Minute).Cancel(ctx, id)
				}
				d := <-out
				code := actoviq.CodeCancelled
				if kind == "deadline" {
					code = actoviq.CodeDeadline
				}
				if cerr != nil {
					t.Errorf("Cancel: %v, want nil (the run ended cancelled)", cerr)
				}
				if d.err != nil || d.res.Status != actoviq.StatusCancelled || d.res.Error == nil || d.res.Error.Code != code {
					t.Fatalf("root's drive: %+v %v, want cancelled with code %s", d.res, d.err, code)
				}
				mid, leaf := actoviq.ChildRunID(id, "r1"), actoviq.ChildRunID(actoviq.ChildRunID(id, "r1"), "m1")
				for _, rid := range []string{id, mid, leaf} {
					info, err := rt.Get(ctx, rid)
					if err != nil {
						t.Fatal(err)
					}
					if info.Status != actoviq.StatusCancelled || info.Error == nil || info.Error.Code != code {
						t.Errorf("run %s: %s %+v, want cancelled with code %s", rid, info.Status, info.Error, code)
					}
					evs := strings.Join(eventTypes(t, rt, rid), " ")
					if !strings.HasSuffix(evs, actoviq.EvRunCancelled) || strings.Contains(evs, actoviq.EvRunFailed) {
						t.Errorf("run %s events: %s, want run.cancelled last and no run.failed", rid, evs)
					}
				}
			})
		}
	})
}
