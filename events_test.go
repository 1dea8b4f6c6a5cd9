package actoviq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// Stream a run and follow it with a type switch over the typed payloads:
// no string matching, no hand decoding.
func ExampleEvent_Payload() {
	ctx := context.Background()
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read},
		func(ctx context.Context, q struct {
			Q string `json:"q"`
		}) (string, error) {
			return "42", nil
		})
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"answer"}`)}}},
		scripted.Turn{Text: "The answer is 42."},
	)
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "a", Provider: model, Model: "scripted", Tools: []tool.Tool{lookup}}
	for ev, err := range rt.Stream(ctx, agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("?")}}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		data, err := ev.Payload()
		if err != nil {
			fmt.Println("bad event:", err)
			continue
		}
		switch d := data.(type) {
		case *actoviq.TextDeltaData:
			fmt.Printf("text %q\n", d.Delta)
		case *actoviq.ToolCallData:
			fmt.Println("tool", d.Tool, d.CallID, d.State, "key", d.IdempotencyKey)
		case *actoviq.RunEndedData:
			fmt.Println("run", d.Status)
		}
	}
	// Output:
	// tool lookup c1 prepared key r1:c1
	// tool lookup c1 started key r1:c1
	// tool lookup c1 committed key r1:c1
	// text "The "
	// text "answer "
	// text "is "
	// text "42."
	// run completed
}

// collector records every event a sink receives.
type collector struct {
	mu  sync.Mutex
	evs []actoviq.Event
}

func (c *collector) Emit(_ context.Context, ev actoviq.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

type probedBank struct{ paid map[string]bool }

func (b *probedBank) Spec() tool.Spec {
	return tool.Spec{Name: "pay", Effect: tool.SideEffect, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (b *probedBank) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	b.paid[tool.IdempotencyKey(ctx)] = true
	return tool.Result{}, fmt.Errorf("reset: %w", tool.ErrOutcomeUnknown)
}
func (b *probedBank) Reconcile(_ context.Context, key string, _ json.RawMessage) (tool.Probe, error) {
	return tool.Probe{Outcome: tool.ProbeNotExecuted, Evidence: "no payment " + key}, nil
}

// Every event the runtime emits, stored or ephemeral, decodes strictly
// (no unknown field, no missing payload type) into the payload its type
// names, and the payload's EventTypes lists that type. A new event type or
// field added without its payload fails here.
func TestEventPayloadsAreTyped(t *testing.T) {
	ctx := context.Background()
	col := &collector{}
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{Sinks: []actoviq.EventSink{col}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	b := &probedBank{paid: map[string]bool{}}
	model := scripted.New(
		scripted.Turn{Text: "thinking", ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada"}`)}}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "pay", Arguments: json.RawMessage(`{"to":"bob"}`)}}},
		scripted.Turn{Text: "done"},
	)
	agent := &actoviq.AgentSpec{ID: "a", Provider: model, Model: "scripted", Tools: []tool.Tool{b},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
	in := &actoviq.Input{RunID: "r", Items: []item.Item{item.UserText("pay")}}
	res, err := rt.Run(ctx, agent, in)
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	// approve → unknown outcome → probe (not_executed) → reconciliation.
	res, err = rt.Resume(ctx, agent, "r", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "t"}}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("resume 1: %v %+v", err, res)
	}
	res, err = rt.Resume(ctx, agent, "r", nil) // the probe is asked, answers not_executed: still a question
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("resume probe: %v %+v", err, res)
	}
	res, err = rt.Resume(ctx, agent, "r", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideCommitted, By: "t", Result: "paid"}}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("resume 2: %v %+v", err, res)
	}
	res, err = rt.Resume(ctx, agent, "r", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c2", Kind: actoviq.DecideReject, By: "t", Reason: "no"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume 3: %v %+v", err, res)
	}

	seen := map[string]bool{}
	for _, ev := range col.evs {
		data, err := ev.Payload()
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		if raw, ok := data.(*actoviq.RawEventData); ok {
			t.Errorf("event type %q has no typed payload (data %s)", raw.Type, raw.Data)
			continue
		}
		if !contains(data.EventTypes(), ev.Type) {
			t.Errorf("%s decoded to %T, whose EventTypes %v do not list it", ev.Type, data, data.EventTypes())
		}
		if len(ev.Data) > 0 {
			strict := reflect.New(reflect.TypeOf(data).Elem()).Interface()
			dec := json.NewDecoder(bytes.NewReader(ev.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(strict); err != nil {
				t.Errorf("%s: data %s has fields %T does not know: %v", ev.Type, ev.Data, data, err)
			}
		}
		seen[ev.Type] = true
	}
	for _, typ := range []string{actoviq.EvRunStarted, actoviq.EvRunResumed, actoviq.EvRunInterrupted, actoviq.EvRunCompleted,
		actoviq.EvModelRequest, actoviq.EvModelResponse, actoviq.EvToolPrepared, actoviq.EvToolAwaiting, actoviq.EvToolApproved,
		actoviq.EvToolStarted, actoviq.EvToolUnknown, actoviq.EvToolProbed, actoviq.EvToolSettled, actoviq.EvToolRejected} {
		if !seen[typ] {
			t.Errorf("the scenario emitted no %s event; seen %v", typ, seen)
		}
	}
	for _, ev := range col.evs {
		if ev.Type != actoviq.EvToolProbed {
			continue
		}
		d, _ := ev.Payload()
		if p := d.(*actoviq.ToolProbedData); p.CallID != "c1" || p.Outcome != tool.ProbeNotExecuted {
			t.Errorf("probed payload %+v, want call c1 not_executed", p)
		}
	}
}

// Events stored by an earlier build (maps, before the payload types
// existed) still decode; unknown types come back raw; broken data is a
// typed data error.
func TestEventPayloadCompat(t *testing.T) {
	old := actoviq.Event{Type: actoviq.EvToolStarted, ID: "e1", Data: json.RawMessage(
		`{"args":{"to":"ada"},"attempt":1,"call_id":"c1","effect":"side-effect","idempotency_key":"r:c1","state":"started","tool":"pay"}`)}
	d, err := old.Payload()
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := d.(*actoviq.ToolCallData)
	if !ok || tc.Effect != tool.SideEffect || tc.Attempt != 1 || tc.IdempotencyKey != "r:c1" || tc.State != "started" {
		t.Fatalf("old tool.started decoded to %#v", d)
	}
	ended := actoviq.Event{Type: actoviq.EvRunFailed, Data: json.RawMessage(
		`{"status":"failed","usage":{"input_tokens":3},"error":{"code":"model_behavior","message":"m"}}`)}
	d, err = ended.Payload()
	if re, ok := d.(*actoviq.RunEndedData); err != nil || !ok || re.Status != actoviq.StatusFailed || re.Error.Code != "model_behavior" {
		t.Fatalf("old run.failed decoded to %#v, %v", d, err)
	}
	future := actoviq.Event{Type: "child.spawned.v9", Data: json.RawMessage(`{"x":1}`)}
	d, err = future.Payload()
	if raw, ok := d.(*actoviq.RawEventData); err != nil || !ok || string(raw.Data) != `{"x":1}` || raw.EventTypes()[0] != "child.spawned.v9" {
		t.Fatalf("unknown type decoded to %#v, %v", d, err)
	}
	bad := actoviq.Event{Type: actoviq.EvToolStarted, ID: "e9", Data: json.RawMessage(`{"effect":"teleport"}`)}
	if _, err := bad.Payload(); !errors.Is(err, actoviq.ErrData) {
		t.Fatalf("bad payload: %v, want ErrData", err)
	}
}

// A model response's items are stored once, in the run's log: the stored
// model.response event says where they are (ItemsAt) and does not hold
// them, while sinks and Runtime.Events receive the event with its items
// (the same bytes), a secret-looking value in the model's text redacted
// as in any event data.
func TestModelResponseItemsStoredOnce(t *testing.T) {
	ctx := context.Background()
	col := &collector{}
	st := storemem.New(nil)
	rt, err := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{col}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read},
		func(ctx context.Context, q struct {
			Q string `json:"q"`
		}) (string, error) {
			return "42", nil
		})
	model := scripted.New(
		scripted.Turn{Text: "looking up, password=hunter2", ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"answer-one"}`)}}},
		scripted.Turn{Text: "final answer-two"},
	)
	agent := &actoviq.AgentSpec{ID: "a", Provider: model, Model: "scripted", Tools: []tool.Tool{lookup}}
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "r", Items: []item.Item{item.UserText("?")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	stored, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var storedResp []*store.EventRecord
	for _, ev := range stored {
		if ev.Type == actoviq.EvModelResponse {
			storedResp = append(storedResp, ev)
			for _, word := range []string{"answer-one", "answer-two", "hunter2"} {
				if bytes.Contains(ev.Data, []byte(word)) {
					t.Errorf("stored model.response %s holds %q: its items are stored twice", ev.Data, word)
				}
			}
		}
	}
	if len(storedResp) != 2 {
		t.Fatalf("stored %d model.response events, want 2", len(storedResp))
	}
	read, err := rt.Events(ctx, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	var fromEvents, fromSinks []actoviq.Event
	for _, ev := range read {
		if ev.Type == actoviq.EvModelResponse {
			fromEvents = append(fromEvents, ev)
		}
	}
	for _, ev := range col.evs {
		if ev.Type == actoviq.EvModelResponse {
			fromSinks = append(fromSinks, ev)
		}
	}
	if len(fromEvents) != 2 || len(fromSinks) != 2 {
		t.Fatalf("model.response events: %d read, %d emitted; want 2 and 2", len(fromEvents), len(fromSinks))
	}
	wantText := []string{"looking up, password=[REDACTED]", "final answer-two"}
	for i := range 2 {
		if !bytes.Equal(fromEvents[i].Data, fromSinks[i].Data) {
			t.Errorf("response %d: Events gave %s, the sink got %s", i+1, fromEvents[i].Data, fromSinks[i].Data)
		}
		if bytes.Contains(fromEvents[i].Data, []byte("hunter2")) {
			t.Errorf("response %d: %s shows the secret", i+1, fromEvents[i].Data)
		}
		p, err := fromEvents[i].Payload()
		if err != nil {
			t.Fatal(err)
		}
		d := p.(*actoviq.ModelResponseData)
		if d.Turn != i+1 || len(d.Items) == 0 || d.Items[0].Text != wantText[i] {
			t.Errorf("response %d: %+v, want turn %d with first item %q", i+1, d, i+1, wantText[i])
		}
		if i == 0 && (len(d.Items) != 2 || d.Items[1].ToolCall == nil || d.Items[1].ToolCall.ID != "c1") {
			t.Errorf("response 1 items %+v, want the text and call c1", d.Items)
		}
	}
}
