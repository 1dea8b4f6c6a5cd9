package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// returnTool notes each call whose tool returned, just before it returns.
type returnTool struct {
	mu       sync.Mutex
	returned []string // call ids
}

func (r *returnTool) Spec() tool.Spec {
	return tool.Spec{Name: "pay", Description: "pays", Effect: tool.SideEffect,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)}
}

func (r *returnTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	key := tool.IdempotencyKey(ctx)
	r.mu.Lock()
	r.returned = append(r.returned, key[strings.LastIndexByte(key, ':')+1:])
	r.mu.Unlock()
	return tool.Result{Content: "paid"}, nil
}

func (r *returnTool) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.returned...)
}

// checkSink reads the store each time it gets an event, ephemeral or
// stored: every call whose tool returned must be committed there by then.
type checkSink struct {
	t    *testing.T
	st   store.Store
	run  string
	pay  *returnTool
	mu   sync.Mutex
	n    int
	errs []string
}

func (c *checkSink) Emit(_ context.Context, ev actoviq.Event) {
	states := storedStates(c.t, c.st, c.run)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	for _, id := range c.pay.calls() {
		if states[id] != store.LedgerCommitted && len(c.errs) < 8 {
			c.errs = append(c.errs, fmt.Sprintf("event %s (seq %d): call %s returned, the store has it %s", ev.Type, ev.Seq, id, states[id]))
		}
	}
}

// A lone call's committed record is held for the next call's first write
// (drive_carry.go). No sink, of a stored event or of an ephemeral one
// (model.request, text deltas), is called while a record is held: a sink
// is the caller's code and may block or run long, and a process that dies
// in it would lose a result the runtime had (the call left started, for
// reconciliation). Each time any sink is called, every call whose tool
// returned is committed in the store. The calls include a skipped one (an
// unknown tool) and one whose arguments the schema refuses, after a held
// commit, and the sinks are both Config.Sinks and a drive's.
func TestCarriedCommitNeverWaitsForASink(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &returnTool{}
		cfg := &checkSink{t: t, st: st, run: "cs", pay: pay}
		drv := &checkSink{t: t, st: st, run: "cs", pay: pay}
		m := scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay", `{"amount":2}`),
				call("c3", "nope", `{}`), call("c4", "pay", `{"amount":4}`)}},
			scripted.Turn{Text: "paid twice, and more", ToolCalls: []scripted.ToolCall{call("c5", "pay", `{"amount":5}`),
				call("c6", "pay", `{"amount":"six"}`), call("c7", "pay", `{"amount":7}`)}},
			scripted.Turn{Text: "all done now"})
		rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "A", Sinks: []actoviq.EventSink{cfg}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ag := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay}}
		res, err := rt.Run(ctx, ag, &actoviq.Input{RunID: "cs", Items: input("pay").Items}, drv)
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		if got := pay.calls(); strings.Join(got, ",") != "c1,c2,c4,c5,c7" {
			t.Fatalf("the tool ran for %v", got)
		}
		for name, s := range map[string]*checkSink{"Config.Sinks": cfg, "the drive's sink": drv} {
			if s.n < 20 {
				t.Errorf("%s got %d events", name, s.n)
			}
			for _, e := range s.errs {
				t.Errorf("%s: %s", name, e)
			}
		}
	})
}
