package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// rawTool returns a fixed result: the escape hatch a tool owner may fill
// with anything.
type rawTool struct {
	name   string
	effect tool.Effect
	res    tool.Result
	calls  int
}

func (r *rawTool) Spec() tool.Spec {
	return tool.Spec{Name: r.name, Description: "raw", Effect: r.effect}
}
func (r *rawTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	r.calls++
	return r.res, nil
}

func outputNotice(t *testing.T, en *store.LedgerEntry) map[string]any {
	t.Helper()
	var e struct {
		Output map[string]any `json:"output"`
	}
	if err := json.Unmarshal(en.Error, &e); err != nil || e.Output == nil {
		t.Fatalf("ledger entry error %s: no output notice (%v)", en.Error, err)
	}
	return e.Output
}

// Tool output had no size bound: a 2 MiB result went whole into the
// ledger row, the checkpoint and the next model request (issue 10,
// break 12). Beyond the limit (default 1 MiB) it is truncated with a note
// the model sees; the full size is in the ledger evidence.
func TestToolOutputIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{{"default", 0, actoviq.DefaultMaxToolOutput}, {"configured", 4096, 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t)
			big := strings.Repeat("é", 1<<20) // 2 MiB of two-byte runes
			rt := &rawTool{name: "dump", effect: tool.Read, res: tool.Result{Content: big, Data: json.RawMessage(`{"rows":[1,2,3]}`)}}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "dump", `{}`)}}, scripted.Turn{Text: "done"})
			a := agent(p, rt)
			a.Limits.MaxToolOutput = tc.limit
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			info, _ := s.rt.Get(s.ctx, "r1")
			r := toolResults(t, info)["c1"]
			if len(r.Content)+len(r.Data) > tc.want || !strings.Contains(r.Content, "truncated") || !strings.Contains(r.Content, "2097168 bytes") {
				t.Fatalf("result of %d bytes (limit %d), note: %q", len(r.Content)+len(r.Data), tc.want, r.Content[max(0, len(r.Content)-200):])
			}
			if !strings.HasPrefix(r.Content, "éé") || !strings.Contains(r.Content, "é\n[actoviq") {
				t.Fatal("the kept part is not the start of the output, cut at a rune boundary")
			}
			en := info.Ledger[0]
			if len(en.Result) > tc.want+1024 {
				t.Fatalf("ledger row holds %d bytes", len(en.Result))
			}
			n := outputNotice(t, en)
			if n["truncated"] != true || n["size"] != float64(2097168) || n["limit"] != float64(tc.want) || n["data_dropped"] != true {
				t.Fatalf("notice %v", n)
			}
		})
	}
}

// A tool whose Result.Data was not JSON left the run running with an
// "encode result" error and the call started (issue 10, break 5). The
// call gets a typed error result the model sees; the run goes on.
func TestToolDataNotJSONIsAnErrorResult(t *testing.T) {
	s := newSetup(t)
	rt := &rawTool{name: "broken", effect: tool.SideEffect, res: tool.Result{Content: "charged", Data: json.RawMessage(`{"id":`)}}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "broken", `{}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, rt), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	r := toolResults(t, info)["c1"]
	if !r.IsError || r.Data != nil || !strings.Contains(r.Content, "charged") || !strings.Contains(r.Content, "not valid JSON") {
		t.Fatalf("result %+v", r)
	}
	en := info.Ledger[0]
	if n := outputNotice(t, en); en.State != store.LedgerCommitted || n["invalid_data"] == nil || rt.calls != 1 {
		t.Fatalf("entry %+v notice %v calls %d", en, n, rt.calls)
	}
}

// Siblings of the output bound and of redaction: an operator's committed
// result is bounded like a tool's, also in the decision's record, and a
// run's Meta loses secret-looking keys.
func TestOperatorResultBoundedAndMetaRedacted(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1", Meta: json.RawMessage(`{"ticket":"T-1","api_key":"sk-meta-1"}`)})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	big := strings.Repeat("x", 3<<20)
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops", Result: big}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	en := info.Ledger[0]
	if len(en.Result) > actoviq.DefaultMaxToolOutput+1024 || en.Resolution == nil || len(en.Resolution.Result) > 1024 {
		t.Fatalf("result %d bytes, resolution result %d bytes", len(en.Result), len(en.Resolution.Result))
	}
	if strings.Contains(string(info.Meta), "sk-meta-1") || !strings.Contains(string(info.Meta), "T-1") {
		t.Fatalf("meta %s", info.Meta)
	}
}

// The output bound is a limit like the others: a new agent version may
// narrow it while a run waits, not widen it.
func TestOutputLimitsMayOnlyNarrow(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	if _, err := s.rt.Run(s.ctx, approvalAgent(p, pay), &actoviq.Input{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	wide := approvalAgent(p, pay)
	wide.Limits.MaxToolOutput, wide.Limits.MaxMalformedCalls = 2*actoviq.DefaultMaxToolOutput, 10
	_, err := s.rt.Resume(s.ctx, wide, "r1", nil)
	var ce *actoviq.AgentChangeError
	if !errors.As(err, &ce) || len(ce.Refused) != 2 || !strings.Contains(err.Error(), "limits.max_tool_output") || !strings.Contains(err.Error(), "limits.max_malformed_calls") {
		t.Fatalf("widened: %v", err)
	}
	narrow := approvalAgent(p, pay)
	narrow.Limits.MaxToolOutput = 1024
	res, err := s.rt.Resume(s.ctx, narrow, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("narrowed: %+v %v", res, err)
	}
}

// Sibling of the output bound: a tool error with a huge message no longer
// makes an unbounded ledger row (its persisted error) or interruption.
func TestHugeToolErrorIsBounded(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: fmt.Errorf("upstream said %s: %w", strings.Repeat("x", 4<<20), tool.ErrOutcomeUnknown)}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	in := res.Interruptions[0]
	info, _ := s.rt.Get(s.ctx, "r1")
	if len(in.Reason) > 32<<10 || len(in.LastError) > 128<<10 || len(info.Ledger[0].Error) > 128<<10 || !strings.Contains(in.Reason, "truncated") {
		t.Fatalf("reason %d bytes, last error %d, entry error %d", len(in.Reason), len(in.LastError), len(info.Ledger[0].Error))
	}
	run, _ := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r1"})
	size := len(run.Checkpoint)
	for _, it := range run.Log {
		size += len(it)
	}
	if size > 512<<10 {
		t.Fatalf("checkpoint and log %d bytes", size)
	}
}
