package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// effectLine is one line of an episode's effects.log: one invocation of a
// tool, written (fsynced) before the tool returns, so the file counts the
// effects that really happened, across processes. MCP calls carry no
// attempt (0): the server sees only the key.
type effectLine struct {
	Tool    string `json:"tool"`
	Key     string `json:"key"`
	Attempt int    `json:"attempt"`
}

// appendJSON appends v as one line and makes it durable. One write of a
// small buffer with O_APPEND: concurrent writers, in this process or
// others, never interleave.
func appendJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readLines decodes every line of a JSON-lines file; a missing file is
// empty.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// effectTool records each invocation in the episode's effects.log with its
// idempotency key and attempt.
func effectTool(w world, name string, effect tool.Effect) tool.Tool {
	log := w.effects()
	return tool.Func(tool.Spec{Name: name, Description: "Campaign tool " + name + ": logs each invocation.", Effect: effect},
		func(ctx context.Context, in struct {
			N int `json:"n"`
		}) (string, error) {
			key := tool.IdempotencyKey(ctx)
			if err := appendJSON(log, effectLine{Tool: name, Key: key, Attempt: tool.Attempt(ctx)}); err != nil {
				return "", fmt.Errorf("append %s: %w (%w)", log, err, tool.ErrOutcomeUnknown)
			}
			return fmt.Sprintf("%s n=%d done", name, in.N), nil
		})
}

// probed adds a probe to a tool. The honest probe reads the tool's log:
// committed when the key is there, not_executed when it is not. With
// unknown set it never knows.
type probed struct {
	tool.Tool
	log     string
	unknown bool
}

func (p *probed) Reconcile(_ context.Context, key string, _ json.RawMessage) (tool.Probe, error) {
	if p.unknown {
		return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: "this probe cannot tell"}, nil
	}
	lines, err := readLines[effectLine](p.log)
	if err != nil {
		return tool.Probe{}, err
	}
	for _, l := range lines {
		if l.Key == key {
			return tool.Probe{Outcome: tool.ProbeCommitted, Result: &tool.Result{Content: "found in the log"}, Evidence: "log line for " + key}, nil
		}
	}
	return tool.Probe{Outcome: tool.ProbeNotExecuted, Evidence: "no log line for " + key}, nil
}

// requestLine is one line of requests.log: the tool calls and results of
// one request the scripted model received, recorded (fsynced) before it
// answers.
type requestLine struct {
	Agent   string   `json:"agent"`
	Run     string   `json:"run,omitempty"` // the first user text, when the recorder names runs by input
	Calls   []string `json:"calls"`
	Results []string `json:"results"`
}

// recorder is the scripted provider recording every request it gets.
type recorder struct {
	*scripted.Provider
	path    string
	agent   string
	byInput bool // the first user text names the run (takeover scenario)
}

func (r *recorder) record(req *llm.Request) error {
	rl := requestLine{Agent: r.agent}
	for _, it := range req.Items {
		switch {
		case r.byInput && rl.Run == "" && it.Type == item.TypeText && it.Role == item.RoleUser:
			rl.Run = it.Text
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			rl.Calls = append(rl.Calls, it.ToolCall.ID)
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			rl.Results = append(rl.Results, it.ToolResult.CallID)
		}
	}
	return appendJSON(r.path, rl)
}

func (r *recorder) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := r.record(req); err != nil {
		return nil, err
	}
	return r.Provider.Generate(ctx, req)
}

func (r *recorder) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if err := r.record(req); err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return r.Provider.Stream(ctx, req)
}
