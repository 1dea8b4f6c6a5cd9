package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

type invoiceQ struct {
	Invoice string `json:"invoice"`
}

// An agent offered to another agent as a tool runs as a child run of its
// own: id "<parent run>.<call>", its own ledger, its own keys. The tool's
// effect is the strongest among the child's tools (here: read).
func ExampleAgentTool() {
	ctx := context.Background()
	lookup := tool.Func(tool.Spec{Name: "lookup", Description: "Read an invoice", Effect: tool.Read},
		func(ctx context.Context, q invoiceQ) (string, error) { return q.Invoice + ": 1250 EUR to ACME", nil })
	researcher := &actoviq.AgentSpec{ID: "researcher", Model: "scripted", Tools: []tool.Tool{lookup}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "l1", Name: "lookup", Arguments: json.RawMessage(`{"invoice":"INV-42"}`)}}},
		scripted.Turn{Text: "INV-42 is 1250 EUR to ACME."})}
	ask, err := actoviq.AgentTool(researcher, &actoviq.AgentToolOptions{Failure: actoviq.Collect})
	if err != nil {
		panic(err)
	}
	lead := &actoviq.AgentSpec{ID: "lead", Model: "scripted", Tools: []tool.Tool{ask}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "researcher", Arguments: json.RawMessage(`{"input":"What is INV-42?"}`)}}},
		scripted.Turn{Text: "Answered."})}

	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	res, err := rt.Run(ctx, lead, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("look INV-42 up")}})
	if err != nil {
		panic(err)
	}
	child, _ := rt.Get(ctx, actoviq.ChildRunID("r1", "c1"))
	fmt.Println(res.Status, "tool effect:", ask.Spec().Effect)
	fmt.Println(child.ID, "parent", child.ParentID, child.Status, "key", child.Ledger[0].IdempotencyKey)
	// Output:
	// completed tool effect: read
	// r1.c1 parent r1 completed key r1.c1:l1
}

// Spawn writes a background child, queued, and returns its id at once; a
// worker drives it, and the parent waits for (or polls) its result.
func ExampleRuntime_Spawn() {
	ctx := context.Background()
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	lead := &actoviq.AgentSpec{ID: "lead", Model: "scripted", Provider: scripted.New(scripted.Turn{Text: "started"})}
	if _, err := rt.Run(ctx, lead, &actoviq.Input{RunID: "lead-1"}); err != nil {
		panic(err)
	}
	summarizer := &actoviq.AgentSpec{ID: "summarizer", Model: "scripted", Provider: scripted.New(scripted.Turn{Text: "Summary: all paid."})}
	_ = rt.Register(summarizer)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = rt.Work(wctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond}) }()

	id, err := rt.Spawn(ctx, "lead-1", summarizer, &actoviq.Input{RunID: "lead-1.summary",
		Items: []item.Item{item.UserText("summarize the month")}}, nil)
	if err != nil {
		panic(err)
	}
	res, err := rt.Wait(ctx, id)
	if err != nil {
		panic(err)
	}
	stop()
	wg.Wait()
	info, _ := rt.Get(ctx, id)
	fmt.Println(id, "child of", info.ParentID, res.Status, res.Output[0].Text)
	// Output:
	// lead-1.summary child of lead-1 completed Summary: all paid.
}

// A worker claims queued runs of the agents registered with it and drives
// them, a few at a time, until its context ends. Any number of workers, in
// any number of processes, may share one store.
func ExampleRuntime_Work() {
	ctx := context.Background()
	st := storemem.New(nil)
	client, _ := actoviq.New(st, nil)
	agent := &actoviq.AgentSpec{ID: "greeter", Model: "scripted", Provider: scripted.New(scripted.Turn{Text: "hello"})}
	for _, id := range []string{"q1", "q2", "q3"} {
		if _, err := client.Enqueue(ctx, agent, &actoviq.Input{RunID: id}); err != nil {
			panic(err)
		}
	}

	worker, _ := actoviq.New(st, nil)
	defer worker.Close()
	_ = worker.Register(agent)
	wctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var done []string
	err := worker.Work(wctx, &actoviq.WorkOptions{Concurrency: 2, PollInterval: 10 * time.Millisecond,
		OnDrive: func(runID string, res *actoviq.RunResult, err error) {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, runID+" "+string(res.Status))
			if len(done) == 3 {
				stop() // drains: no new claims, in-flight drives finish
			}
		}})
	if err != nil {
		panic(err)
	}
	sort.Strings(done)
	fmt.Println(done)
	// Output:
	// [q1 completed q2 completed q3 completed]
}
