package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// bufTool reuses one buffer for the structured data of every call, as a
// tool that encodes into a kept bytes.Buffer does.
type bufTool struct {
	buf []byte
	n   int
}

func (b *bufTool) Spec() tool.Spec {
	return tool.Spec{Name: "buf", Description: "reuses its buffer", Effect: tool.SideEffect}
}

func (b *bufTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	b.n++
	b.buf = append(b.buf[:0], fmt.Sprintf(`{"n":%d}`, b.n)...)
	return tool.Result{Content: fmt.Sprintf("call %d", b.n), Data: b.buf}, nil
}

// The transcript holds each call's own structured result, as its ledger
// entry does, even when the tool reuses the buffer it returned once the
// call is over (the result was recorded: the engine must not read the
// tool's memory again).
func TestReview6ToolReusesDataBuffer(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		a := &actoviq.AgentSpec{ID: "buf", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "buf", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "buf", Arguments: json.RawMessage(`{"x":1}`)}}},
			scripted.Turn{Text: "done"}),
			Tools: []tool.Tool{&bufTool{buf: make([]byte, 0, 64)}}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "u1", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		info, err := rt.Get(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		ledger := map[string]string{}
		for _, en := range info.Ledger {
			ledger[en.CallID] = string(en.Result)
		}
		got := map[string]string{}
		for _, it := range info.Transcript {
			if it.Type == item.TypeToolResult {
				got[it.ToolResult.CallID] = string(it.ToolResult.Data)
			}
		}
		if got["c1"] != `{"n":1}` || got["c2"] != `{"n":2}` {
			t.Fatalf("transcript data %v, want c1 {\"n\":1} and c2 {\"n\":2}; ledger %v", got, ledger)
		}
	})
}

// cancelAfterStop cancels the caller's context when the drive, its run
// already stored interrupted, sets the run's escalation timer the second
// time (finish sets it before and after the write), and returns the
// store's bare context error, as a store whose call is cancelled does.
type cancelAfterStop struct {
	store.Store
	cancel      context.CancelFunc
	interrupted atomic.Bool
	fired       atomic.Bool
}

func (s *cancelAfterStop) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	res, err := s.Store.RunWrite(ctx, p)
	if err == nil && p.Run != nil && p.Run.Status == store.RunInterrupted {
		s.interrupted.Store(true)
	}
	return res, err
}

func (s *cancelAfterStop) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if p.Key == store.EscalationKey("e1") && s.interrupted.Load() && s.fired.CompareAndSwap(false, true) {
		s.cancel()
		return nil, fmt.Errorf("teststore: claim %s: %w", p.Key, ctx.Err())
	}
	return s.Store.ClaimAcquire(ctx, p)
}

// A drive that has stopped interrupted (stored, its claim given up) and is
// then told its caller's context ended must not write the run again: the
// run waits for a person and stays interrupted. claimAndDrive's deferred
// mapping (b38b574) sends any bare context error through stopCheck, which
// ends the interrupted run cancelled for good, a second end.
func TestReview6CancelAfterInterruptedWriteKeepsRunWaiting(t *testing.T) {
	pol, err := approvals.Parse([]byte(`{"version": "v1", "rules": [
	  {"name": "payments", "tools": ["pay"], "approve": ["*"], "reject": ["*"], "settle": ["*"], "escalate_after": "30m"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &cancelAfterStop{Store: storemem.New(nil), cancel: cancel}
	rt, err := actoviq.New(st, &actoviq.Config{Approvers: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
		scripted.Turn{Text: "paid"}), pay)
	a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "e1", Items: []item.Item{item.UserText("pay")}})
	if !st.fired.Load() {
		t.Fatalf("the escalation timer was not set after the interrupted write: %+v %v", res, err)
	}
	t.Logf("Run: %+v %v", res, err)
	info, gerr := rt.Get(context.Background(), "e1")
	if gerr != nil {
		t.Fatal(gerr)
	}
	var types []string
	evs, _ := rt.Events(context.Background(), "e1", nil)
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if info.Status != actoviq.StatusInterrupted {
		t.Fatalf("run stored %s after it stopped interrupted, want interrupted (waiting for approval); events %v", info.Status, types)
	}
}

// A model's tool call whose name holds a NUL (JSON's \u0000 decodes to one:
// any provider can make it) is recorded alike on every store, the NUL
// replaced by U+FFFD: no tool has that name, the call is answered as
// unknown and the run goes on. On main PostgreSQL refused the response's
// write ("invalid byte sequence for encoding UTF8: 0x00", untyped) while
// memory and SQLite stored it.
func TestReview6ModelToolNameNUL(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		var name string
		if err := json.Unmarshal([]byte(`"pay\u0000"`), &name); err != nil {
			t.Fatal(err)
		}
		pay := &payTool{name: "pay"}
		a := agent(scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c0", name, `{}`)}},
			scripted.Turn{Text: "done"}), pay)
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "u1", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		info, err := rt.Get(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Ledger) != 1 || info.Ledger[0].Tool != "pay\uFFFD" || info.Ledger[0].State != store.LedgerCommitted {
			t.Fatalf("ledger %+v", info.Ledger)
		}
		if len(pay.calls) != 0 {
			t.Fatalf("pay ran for a call named %q", name)
		}
	})
}

// An agent id or a session id with a NUL (valid UTF-8, but PostgreSQL's
// text cannot hold one) is refused alike by every store, with an
// *store.InvalidError before anything is stored. On main memory and SQLite
// stored it and PostgreSQL refused it (since 732ce00 typed, "text that is
// not UTF-8").
func TestReview6NULInIDsRefusedAlike(t *testing.T) {
	for _, c := range []struct{ name, agent, session string }{
		{"agent", "a\x00", ""},
		{"session", "a", "s\x00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st store.Store) {
				ctx := context.Background()
				rt, err := actoviq.New(st, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c0", "pay", `{}`)}}, scripted.Turn{Text: "done"}), pay)
				a.ID = c.agent
				_, err = rt.Run(ctx, a, &actoviq.Input{RunID: "u1", SessionID: c.session, Items: []item.Item{item.UserText("go")}})
				var ie *store.InvalidError
				if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "NUL") {
					t.Fatalf("Run: %v, want an *store.InvalidError about the NUL", err)
				}
				if _, err := rt.Get(ctx, "u1"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("the refused run: %v", err)
				}
				if len(pay.calls) != 0 {
					t.Fatalf("pay ran")
				}
			})
		})
	}
}
