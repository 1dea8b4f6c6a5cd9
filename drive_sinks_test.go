package actoviq_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// recordSink keeps the events it receives.
type recordSink struct {
	mu  sync.Mutex
	evs []actoviq.Event
}

func (r *recordSink) Emit(_ context.Context, ev actoviq.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

// stored returns "seq type" of the persisted events the sink got for run.
func (r *recordSink) stored(run string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		if ev.RunID == run && ev.Seq > 0 {
			out = append(out, fmt.Sprintf("%d %s", ev.Seq, ev.Type))
		}
	}
	return out
}

func storedEvents(t *testing.T, s *setup, run string) []string {
	t.Helper()
	evs, err := s.st.EventList(s.ctx, &store.EventListParams{Tenant: "default", RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%d %s", ev.Seq, ev.Type))
	}
	return out
}

// Config.Sinks used to miss the events written by Decide and by Cancel on a
// run nobody drives: those drives were built without the runtime's sinks.
func TestEveryStoredEventReachesEverySink(t *testing.T) {
	s := newSetup(t)
	a, b := &recordSink{}, &recordSink{}
	rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, Sinks: []actoviq.EventSink{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	ag := approvalAgent(p, pay)
	if res, err := rt.Run(s.ctx, ag, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if err := rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Resume(s.ctx, ag, "r1", nil); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	p2 := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":6}`)}})
	if res, err := rt.Run(s.ctx, approvalAgent(p2, pay), &actoviq.Input{RunID: "r2"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if err := rt.Cancel(s.ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"r1", "r2"} {
		want := storedEvents(t, s, run)
		for i, sink := range []*recordSink{a, b} {
			if got := sink.stored(run); !slices.Equal(got, want) {
				t.Errorf("sink %d, run %s:\n got %v\nwant %v", i, run, got, want)
			}
		}
	}
	if !slices.Contains(a.stored("r1"), "6 tool.approved") || !slices.Contains(a.stored("r2"), "6 run.cancelled") {
		t.Fatalf("the decision and the cancellation are not among the events: %v / %v", a.stored("r1"), a.stored("r2"))
	}
}

// panicSink panics on every event of one type.
type panicSink struct{ on string }

func (p panicSink) Emit(_ context.Context, ev actoviq.Event) {
	if ev.Type == p.on {
		panic("sink bug on " + ev.Type)
	}
}

// A panicking sink used to take the process down. It is recovered: the
// other sinks get every event, and the panic is recorded as an event.
func TestSinkPanicRecovered(t *testing.T) {
	s := newSetup(t)
	good := &recordSink{}
	rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, Sinks: []actoviq.EventSink{panicSink{on: "tool.committed"}, good}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	res, err := rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("%+v %v, %d calls", res, err, pay.count())
	}
	stored := storedEvents(t, s, "r1")
	if got := good.stored("r1"); !slices.Equal(got, stored) {
		t.Fatalf("the other sink:\n got %v\nwant %v", got, stored)
	}
	evs, _ := s.st.EventList(s.ctx, &store.EventListParams{Tenant: "default", RunID: "r1"})
	var rec *store.EventRecord
	for _, ev := range evs {
		if ev.Type == actoviq.EvSinkPanicked {
			rec = ev
		}
	}
	if rec == nil || !strings.Contains(string(rec.Data), "sink bug on tool.committed") || !strings.Contains(string(rec.Data), "panicSink") {
		t.Fatalf("no sink.panicked event recording the panic: %v", stored)
	}
}

// Requeue writes on a run nobody drives too: its events reach the sinks.
func TestRequeueEventsReachSinks(t *testing.T) {
	s := newSetup(t)
	sink := &recordSink{}
	rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, Sinks: []actoviq.EventSink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	if res, err := rt.Run(s.ctx, approvalAgent(p, pay), &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if err := rt.Requeue(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.stored("r1"), storedEvents(t, s, "r1"); !slices.Equal(got, want) {
		t.Fatalf("sink:\n got %v\nwant %v", got, want)
	}
}
