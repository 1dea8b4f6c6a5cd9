package main

import (
	"context"
	"errors"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// The workers scenario: six queued runs driven by a pool of three drives
// (Runtime.Work) in each child process. A killed child's runs are taken
// over by the next child's pool once their lease (workerTTL) runs out;
// the operator's decisions go in with Runtime.Requeue.

const workerTTL = 300 * time.Millisecond

func workerRuns(ep string) []runPlan {
	var out []runPlan
	for i := 1; i <= 6; i++ {
		out = append(out, runPlan{ID: ep + "-w" + string(rune('0'+i)), Input: "go"})
	}
	return out
}

func workersAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-workers", Model: "scripted-1",
		Provider: model(w, "campaign-workers",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", 1), call("c2", "lookup", 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "notify", 3)}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read), effectTool(w, "notify", tool.SideEffect)},
	}, func() {}, nil
}

// workPool enqueues the runs that do not exist yet, requeues the decided
// ones, and works the queue until every run is completed, failed,
// cancelled or interrupted.
func workPool(ctx context.Context, rt *actoviq.Runtime, agents []*actoviq.AgentSpec, sp childSpec) map[string]string {
	out := map[string]string{}
	a := agents[0]
	if err := rt.Register(agents...); err != nil {
		for _, rp := range sp.Runs {
			out[rp.ID] = "error " + oneLine(err)
		}
		return out
	}
	for _, rp := range sp.Runs {
		_, err := rt.Get(ctx, rp.ID)
		if errors.Is(err, actoviq.ErrNotFound) {
			_, err = rt.Enqueue(ctx, a, userInput(rp))
		} else if err == nil {
			var decs []actoviq.Decision
			for _, d := range sp.Decide {
				if d.Run == rp.ID {
					decs = append(decs, d.Decision)
				}
			}
			if len(decs) > 0 {
				err = rt.Requeue(ctx, rp.ID, decs...)
			}
		}
		if errors.Is(err, actoviq.ErrDecision) {
			out[rp.ID] = "refused " + oneLine(err)
		} else if err != nil {
			out[rp.ID] = "error " + oneLine(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- rt.Work(wctx, &actoviq.WorkOptions{Concurrency: 3, PollInterval: 20 * time.Millisecond, Grace: time.Minute})
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		settled := 0
		for _, rp := range sp.Runs {
			info, err := rt.Get(ctx, rp.ID)
			if err != nil {
				continue
			}
			switch info.Status {
			case actoviq.StatusCompleted, actoviq.StatusFailed, actoviq.StatusCancelled, actoviq.StatusInterrupted:
				settled++
				if !strings.HasPrefix(out[rp.ID], "error ") && !strings.HasPrefix(out[rp.ID], "refused ") {
					out[rp.ID] = string(info.Status)
				}
			}
		}
		if settled == len(sp.Runs) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		for _, rp := range sp.Runs {
			if _, ok := out[rp.ID]; !ok {
				out[rp.ID] = "error " + oneLine(err)
			}
		}
	}
	for _, rp := range sp.Runs {
		if _, ok := out[rp.ID]; !ok {
			out[rp.ID] = "error \"not settled within 2 minutes\""
		}
	}
	return out
}
