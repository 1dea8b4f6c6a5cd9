package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// runPlan is one run of an episode.
type runPlan struct {
	ID      string `json:"id"`
	Session string `json:"session,omitempty"`
	Input   string `json:"input"`
}

// world is what a drive's agents write to: the episode's directory.
type world struct {
	dir  string // effects.log, requests.log, mcp-pids/
	self string // this binary, for the MCP server
}

func (w world) effects() string  { return filepath.Join(w.dir, "effects.log") }
func (w world) requests() string { return filepath.Join(w.dir, "requests.log") }
func (w world) pids() string     { return filepath.Join(w.dir, "mcp-pids") }

// scenarioDef is one kind of episode.
type scenarioDef struct {
	name string
	// runs lists the episode's runs; ep makes their ids unique.
	runs func(ep string) []runPlan
	// sequential drives the runs one after the other (a session's runs
	// follow each other), otherwise all at once.
	sequential bool
	// agent builds the agent of a run; close releases what it started.
	agent func(w world, rp runPlan) (a *actoviq.AgentSpec, close func(), err error)
	// children lists the child runs a run makes (checked like runs).
	children func(runID string) []string
	// workers: the runs are queued and a pool of drives works them
	// (workers.go), one agent for all.
	workers bool
	// cancel: the coordinator cancels the first run during its first drive
	// (word.go).
	cancel bool
	// takeover: the pool has two versions; v2 takes interrupted runs over
	// (word.go).
	takeover bool
	// closes: a drive's runtime may be closed at a random instant.
	closes bool
}

var scenarios = []scenarioDef{
	{name: "batch", runs: oneRun, agent: batchAgent},
	{name: "approval", runs: oneRun, agent: approvalAgent},
	{name: "probe", runs: oneRun, agent: probeAgent},
	{name: "mcp", runs: oneRun, agent: mcpAgent},
	{name: "session", runs: sessionRuns, sequential: true, agent: sessionAgent},
	{name: "window", runs: windowRuns, sequential: true, agent: windowAgent},
	{name: "concurrent", runs: concurrentRuns, agent: concurrentAgent},
	{name: "workers", runs: workerRuns, agent: workersAgent, workers: true},
	{name: "tree", runs: oneRun, agent: treeAgent, children: func(id string) []string { return []string{actoviq.ChildRunID(id, "c1")} }},
	{name: "cancel", runs: cancelRuns, agent: cancelAgent, cancel: true},
	{name: "takeover", runs: takeoverRuns, agent: takeoverAgent, workers: true, takeover: true},
	{name: "readchild", runs: oneRun, agent: readChildAgent, closes: true,
		children: func(id string) []string { return []string{actoviq.ChildRunID(id, "c1")} }},
}

func scenarioByName(name string) (scenarioDef, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenarioDef{}, false
}

func oneRun(ep string) []runPlan { return []runPlan{{ID: ep + "-r1", Input: "go"}} }

func sessionRuns(ep string) []runPlan {
	s := ep + "-s"
	return []runPlan{{ID: ep + "-r1", Session: s, Input: "first"}, {ID: ep + "-r2", Session: s, Input: "second"}, {ID: ep + "-r3", Session: s, Input: "third"}}
}

func concurrentRuns(ep string) []runPlan {
	var out []runPlan
	for i := 1; i <= 4; i++ {
		out = append(out, runPlan{ID: fmt.Sprintf("%s-r%d", ep, i), Input: "go"})
	}
	return out
}

func call(id, name string, n int) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

func model(w world, agentID string, turns ...scripted.Turn) *recorder {
	return &recorder{Provider: scripted.New(turns...), path: w.requests(), agent: agentID}
}

// batchAgent: one turn of four calls of mixed effects, then a side effect
// alone, then the answer.
func batchAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-batch", Model: "scripted-1",
		Provider: model(w, "campaign-batch",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "lookup", 1), call("c2", "put", 2), call("c3", "pay", 3), call("c4", "lookup", 4)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c5", "notify", 5)}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{
			effectTool(w, "lookup", tool.Read), effectTool(w, "put", tool.IdempotentWrite),
			effectTool(w, "pay", tool.SideEffect), effectTool(w, "notify", tool.SideEffect),
		},
	}, func() {}, nil
}

// approvalAgent: every side effect waits for approval.
func approvalAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-approval", Model: "scripted-1",
		Provider: model(w, "campaign-approval",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", 1), call("c2", "lookup", 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "pay", 3)}},
			scripted.Turn{Text: "done"}),
		Tools:    []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read)},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}},
	}, func() {}, nil
}

// probeAgent: side effects with probes; refund's reads its own log and
// answers committed or not_executed, mail's always answers unknown.
func probeAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-probe", Model: "scripted-1",
		Provider: model(w, "campaign-probe",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "refund", 1), call("c2", "mail", 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "refund", 3)}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{
			&probed{Tool: effectTool(w, "refund", tool.SideEffect), log: w.effects()},
			&probed{Tool: effectTool(w, "mail", tool.SideEffect), log: w.effects(), unknown: true},
		},
	}, func() {}, nil
}

// mcpAgent: tools of a real stdio MCP server process (this binary with
// -mcp-server): balance (read, by configuration) and charge (side effect:
// the server is not trusted).
func mcpAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	read := tool.Read
	src, err := mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"bank": {
		Command: w.self, Args: []string{"-mcp-server", "-log", w.effects(), "-pids", w.pids()},
		Tools: map[string]mcptool.ToolOverride{"balance": {Effect: &read}},
	}}}, &mcptool.Options{Stderr: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	tools, err := src.Tools(context.Background())
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	balance, charge := mcptool.QualifiedName("bank", "balance"), mcptool.QualifiedName("bank", "charge")
	return &actoviq.AgentSpec{ID: "campaign-mcp", Model: "scripted-1",
		Provider: model(w, "campaign-mcp",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", balance, 1), call("c2", charge, 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", charge, 3)}},
			scripted.Turn{Text: "done"}),
		Tools: tools,
	}, func() { src.Close() }, nil
}

// sessionAgent: three runs in one session, each a side effect then an
// answer. The script is indexed by the assistant turns of the whole
// transcript, the session's history included, so run k starts at turn
// 2(k-1).
func sessionAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	var turns []scripted.Turn
	for k := 1; k <= 3; k++ {
		turns = append(turns,
			scripted.Turn{ToolCalls: []scripted.ToolCall{call(fmt.Sprintf("n%d", k), "note", k)}},
			scripted.Turn{Text: fmt.Sprintf("answer %d", k)})
	}
	return &actoviq.AgentSpec{ID: "campaign-session", Model: "scripted-1",
		Provider: model(w, "campaign-session", turns...),
		Tools:    []tool.Tool{effectTool(w, "note", tool.SideEffect)},
	}, func() {}, nil
}

// concurrentAgent: four runs at once in one process on one store.
func concurrentAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	return &actoviq.AgentSpec{ID: "campaign-concurrent", Model: "scripted-1",
		Provider: model(w, "campaign-concurrent",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", 1), call("c2", "lookup", 2)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c3", "put", 3)}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read), effectTool(w, "put", tool.IdempotentWrite)},
	}, func() {}, nil
}

// treeAgent: the parent calls a child agent as a tool (a child run); the
// child makes a side effect and a read.
func treeAgent(w world, _ runPlan) (*actoviq.AgentSpec, func(), error) {
	child := &actoviq.AgentSpec{ID: "campaign-tree-child", Model: "scripted-1",
		Provider: model(w, "campaign-tree-child",
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", 1), call("k2", "lookup", 2)}},
			scripted.Turn{Text: "child done"}),
		Tools: []tool.Tool{effectTool(w, "pay", tool.SideEffect), effectTool(w, "lookup", tool.Read)},
	}
	helper, err := actoviq.AgentTool(child, &actoviq.AgentToolOptions{Name: "helper"})
	if err != nil {
		return nil, nil, err
	}
	return &actoviq.AgentSpec{ID: "campaign-tree", Model: "scripted-1",
		Provider: model(w, "campaign-tree",
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "helper", Arguments: json.RawMessage(`{"input":"pay once"}`)}}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c2", "notify", 2)}},
			scripted.Turn{Text: "done"}),
		Tools: []tool.Tool{helper, effectTool(w, "notify", tool.SideEffect)},
	}, func() {}, nil
}

// userInput is a run's input.
func userInput(rp runPlan) *actoviq.Input {
	return &actoviq.Input{RunID: rp.ID, SessionID: rp.Session, Items: []item.Item{item.UserText(rp.Input)}}
}
