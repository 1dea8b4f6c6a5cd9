package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// Three scenarios of issue 23 (children, cancellation and workers keep
// their word):
//
//   - cancel: the coordinator, another process, calls Runtime.Cancel on the
//     first of two runs while a child process drives it (and may be
//     killed). When Cancel returns nil the run must end cancelled and no
//     call of it may start after that (cancel_lost); when it returns an
//     error the run may end completed or cancelled. The other run
//     completes.
//   - takeover: three queued runs, driven by pools (Runtime.Work) that have
//     two versions of the agent registered. An interrupted run is taken
//     over by v2 (Runtime.Resume with v2 and the operator's decisions, in
//     the child process, which may be killed); later drives are the
//     pool's. No model request for a run may come from v1 after one came
//     from v2 (downgrade).
//   - readchild: a parent calls a child agent whose only tool reads, and
//     each drive's runtime may be closed (Runtime.Close, a process shutting
//     down) at a random instant, besides the kills. The parent's call must
//     end with the child's own answer, never "outcome unknown" (lost).

func cancelRuns(ep string) []runPlan {
	return []runPlan{{ID: ep + "-r1", Input: "go"}, {ID: ep + "-r2", Input: "go"}}
}

// cancelAgent: side effects wait for approval, as in the approval
// scenario, so a drive often stops interrupted right after a Cancel.
func cancelAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-cancel", Model: "scripted-1",
		Provider: model(w, "campaign-cancel",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", 1), call("c2", "pay", 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "put", 3)}},
			scripted.Turn{Text: "done"}),
		Tools:    []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read), effectTool(w, "put", tool.IdempotentWrite)},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}},
	}, func() {}, nil
}

// cancelOutcome is what the coordinator's Cancel came to.
type cancelOutcome struct {
	run     string
	err     error
	started map[string]int // call → attempt started when Cancel returned nil
	tried   bool
}

// cancelDuring calls Cancel on run from the coordinator's process once the
// run exists, after delay, while a child drives it.
func (e *episodeEnv) cancelDuring(ctx context.Context, run string, delay time.Duration) <-chan cancelOutcome {
	out := make(chan cancelOutcome, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := e.rt.Get(ctx, run); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(delay)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		co := cancelOutcome{run: run, tried: true, err: e.rt.Cancel(cctx, run)}
		if co.err == nil {
			co.started = map[string]int{}
			if info, err := e.rt.Get(ctx, run); err == nil {
				for _, en := range info.Ledger {
					co.started[en.CallID] = en.Attempt
				}
			}
		}
		out <- co
	}()
	return out
}

// checkCancel counts a Cancel that returned nil on a run that did not end
// cancelled, or whose calls started after it.
func (e *episodeEnv) checkCancel(ctx context.Context, name string, co *cancelOutcome) error {
	c := e.c
	if co == nil || !co.tried {
		return nil
	}
	if co.err != nil {
		c.cancelRefused++
		return nil
	}
	c.cancels++
	info, err := e.rt.Get(ctx, co.run)
	if err != nil {
		return err
	}
	if info.Status != actoviq.StatusCancelled {
		c.c.CancelLost++
		c.violation("%s: Cancel(%s) returned nil, but the run ended %s", name, co.run, info.Status)
	}
	for _, en := range info.Ledger {
		if en.Attempt > co.started[en.CallID] {
			c.c.CancelLost++
			c.violation("%s: run %s call %s started attempt %d after Cancel returned nil (attempt %d then)", name, co.run, en.CallID, en.Attempt, co.started[en.CallID])
		}
	}
	return nil
}

func takeoverRuns(ep string) []runPlan {
	var out []runPlan
	for i := 1; i <= 3; i++ {
		id := ep + "-t" + string(rune('0'+i))
		out = append(out, runPlan{ID: id, Input: id}) // the input names the run for the request log
	}
	return out
}

// takeoverVersion builds version v (1 or 2) of the takeover agent: same
// id and tools, other instructions; every side effect waits for approval.
func takeoverVersion(w world, v int) *actoviq.AgentSpec {
	label := "campaign-takeover-v1"
	instr := "pay"
	if v == 2 {
		label, instr = "campaign-takeover-v2", "pay, version 2"
	}
	rec := model(w, label,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", 1), call("c2", "lookup", 2)}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "notify", 3)}},
		scripted.Turn{Text: "done"})
	rec.byInput = true
	return &actoviq.AgentSpec{ID: "campaign-takeover", Instructions: instr, Model: "scripted-1", Provider: rec,
		Tools:    []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read), effectTool(w, "notify", tool.SideEffect)},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}},
	}
}

func takeoverAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return takeoverVersion(w, 1), func() {}, nil
}

// takeoverPool drives the takeover scenario in a child: runs that do not
// exist are queued under v1; an interrupted run still under v1 is taken
// over by v2 with its decisions (a Resume in this process); other decided
// runs are requeued; then a pool with both versions works the queue.
func takeoverPool(ctx context.Context, rt *actoviq.Runtime, w world, sp childSpec) map[string]string {
	v1, v2 := takeoverVersion(w, 1), takeoverVersion(w, 2)
	out := map[string]string{}
	var resumes []chan struct{}
	for _, rp := range sp.Runs {
		var decs []actoviq.Decision
		for _, d := range sp.Decide {
			if d.Run == rp.ID {
				decs = append(decs, d.Decision)
			}
		}
		info, err := rt.Get(ctx, rp.ID)
		switch {
		case errors.Is(err, actoviq.ErrNotFound):
			_, err = rt.Enqueue(ctx, v1, userInput(rp))
		case err == nil && info.Status == actoviq.StatusInterrupted && len(info.AgentChanges) == 0:
			done := make(chan struct{})
			resumes = append(resumes, done)
			go func() { // the takeover: v2 resumes the run
				defer close(done)
				if _, err := rt.Resume(ctx, v2, rp.ID, &actoviq.ResumeOptions{Decisions: decs}); err != nil && !errors.Is(err, actoviq.ErrDecision) {
					out[rp.ID] = "error " + oneLine(err)
				}
			}()
		case err == nil && len(decs) > 0:
			err = rt.Requeue(ctx, rp.ID, decs...)
		}
		if errors.Is(err, actoviq.ErrDecision) {
			out[rp.ID] = "refused " + oneLine(err)
		} else if err != nil {
			out[rp.ID] = "error " + oneLine(err)
		}
	}
	for _, done := range resumes {
		<-done
	}
	st := workPool(ctx, rt, []*actoviq.AgentSpec{v1, v2}, childSpec{Runs: sp.Runs})
	for id, s := range st {
		if _, ok := out[id]; !ok {
			out[id] = s
		}
	}
	return out
}

// checkDowngrades counts model requests of a run by v1 after one by v2.
func (e *episodeEnv) checkDowngrades(name string, w world) error {
	reqs, err := readLines[requestLine](w.requests())
	if err != nil {
		return err
	}
	v2 := map[string]bool{}
	for i, r := range reqs {
		switch r.Agent {
		case "campaign-takeover-v2":
			v2[r.Run] = true
		case "campaign-takeover-v1":
			if v2[r.Run] {
				e.c.c.Downgrades++
				e.c.violation("%s: request %d for run %s came from v1 after v2 took the run over", name, i+1, r.Run)
			}
		}
	}
	for range v2 {
		e.c.takeovers++
	}
	return nil
}

// readChildAgent: the parent's helper is a child agent whose only tool
// reads.
func readChildAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	child := &actoviq.AgentSpec{ID: "campaign-readchild-child", Model: "scripted-1",
		Provider: model(w, "campaign-readchild-child",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "lookup", 1), call("k2", "lookup", 2)}},
			scripted.Turn{Text: "child answer"}),
		Tools: []tool.Tool{effectTool(w, "lookup", tool.Read)},
	}
	helper, err := actoviq.AgentTool(child, &actoviq.AgentToolOptions{Name: "helper"})
	if err != nil {
		return nil, nil, err
	}
	return &actoviq.AgentSpec{ID: "campaign-readchild", Model: "scripted-1",
		Provider: model(w, "campaign-readchild",
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "helper", Arguments: json.RawMessage(`{"input":"look"}`)}}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{helper},
	}, func() {}, nil
}

// checkChildAnswer counts a parent's call that does not hold its child's
// own answer.
func (e *episodeEnv) checkChildAnswer(ctx context.Context, name string, plans []runPlan) error {
	for _, p := range plans {
		info, err := e.rt.Get(ctx, p.ID)
		if err != nil {
			return err
		}
		for _, en := range info.Ledger {
			if en.CallID != "c1" || en.State != "committed" {
				continue
			}
			if !strings.Contains(string(en.Result), "child answer") {
				e.c.c.Lost++
				e.c.violation("%s: run %s: the call of its read-only child was answered %s, not with the child's answer", name, p.ID, en.Result)
			}
		}
	}
	return nil
}
