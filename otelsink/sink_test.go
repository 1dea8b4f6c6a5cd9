package otelsink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/otelsink"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

type bundle struct {
	sink *otelsink.Sink
	rec  *tracetest.SpanRecorder
	tp   *sdktrace.TracerProvider
}

func setup(t *testing.T, cfg *otelsink.Config) *bundle {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &bundle{sink: otelsink.New(tp, cfg), rec: rec, tp: tp}
}

// emitter builds events of one run with increasing times; seq 0 marks an
// ephemeral event.
type emitter struct {
	t     *testing.T
	sink  actoviq.EventSink
	run   string
	paren string
	n     int
}

func (e *emitter) emit(ctx context.Context, seq int64, typ string, data map[string]any) {
	e.t.Helper()
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = b
	}
	e.n++
	e.sink.Emit(ctx, actoviq.Event{Schema: 1, ID: fmt.Sprintf("%s-ev%d", e.run, e.n), Seq: seq, RunID: e.run,
		ParentRunID: e.paren, Type: typ, Time: t0.Add(time.Duration(e.n) * time.Second), Data: raw})
}

func entry(callID, state string, attempt int) map[string]any {
	return map[string]any{"call_id": callID, "tool": "lookup", "effect": "read", "state": state,
		"idempotency_key": "r1:" + callID, "attempt": attempt, "args": map[string]any{"q": "TOPSECRET-ARG"}}
}

// happyPath is the synthetic sequence of one run with one tool call.
func happyPath(ctx context.Context, e *emitter) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 3}
	e.emit(ctx, 1, "run.started", map[string]any{"agent_id": "a", "model": "m", "holder": "h", "epoch": 1})
	e.emit(ctx, 0, "model.request", map[string]any{"turn": 1, "model": "m", "items": 1})
	e.emit(ctx, 2, "model.response", map[string]any{"turn": 1, "usage": usage, "items": []any{"TOPSECRET-TEXT"}})
	e.emit(ctx, 3, "tool.prepared", entry("c1", "prepared", 0))
	e.emit(ctx, 4, "tool.started", entry("c1", "started", 1))
	e.emit(ctx, 5, "tool.committed", entry("c1", "committed", 1))
	e.emit(ctx, 0, "model.request", map[string]any{"turn": 2, "model": "m", "items": 3})
	e.emit(ctx, 6, "model.response", map[string]any{"turn": 2, "usage": usage})
	e.emit(ctx, 7, "run.completed", map[string]any{"status": "completed",
		"usage": map[string]any{"input_tokens": 20, "output_tokens": 6}})
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := byName(spans, name)
	if len(got) != 1 {
		t.Fatalf("want one %q span, got %d", name, len(got))
	}
	return got[0]
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key attribute.Key, want any) {
	t.Helper()
	v, ok := attrs(s)[key]
	if !ok {
		t.Errorf("%s: missing attribute %s", s.Name(), key)
		return
	}
	if got := v.AsInterface(); got != want {
		t.Errorf("%s: %s = %v (%T), want %v (%T)", s.Name(), key, got, got, want, want)
	}
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

func TestSpanTree(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	happyPath(t.Context(), &emitter{t: t, sink: b.sink, run: "r1"})

	spans := b.rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("want 4 spans, got %d", len(spans))
	}
	if n := len(b.rec.Started()); n != 4 {
		t.Fatalf("started %d spans, want 4", n)
	}
	run := one(t, spans, otelsink.SpanRun)
	tool := one(t, spans, otelsink.SpanTool+" lookup")
	turns := byName(spans, otelsink.SpanTurn)
	if len(turns) != 2 {
		t.Fatalf("want 2 turn spans, got %d", len(turns))
	}

	if run.Parent().IsValid() {
		t.Errorf("run span has a parent: %v", run.Parent())
	}
	for _, s := range append([]sdktrace.ReadOnlySpan{tool}, turns...) {
		if s.Parent().SpanID() != run.SpanContext().SpanID() || s.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Errorf("%s is not a child of the run span", s.Name())
		}
		wantAttr(t, s, otelsink.AttrRunID, "r1")
		if s.Status().Code != codes.Unset {
			t.Errorf("%s status %v, want unset", s.Name(), s.Status())
		}
	}

	if run.Status().Code != codes.Unset {
		t.Errorf("run status %v, want unset", run.Status())
	}
	wantAttr(t, run, otelsink.AttrRunID, "r1")
	wantAttr(t, run, otelsink.AttrEventSeq, int64(1))
	wantAttr(t, run, otelsink.AttrAgentID, "a")
	wantAttr(t, run, otelsink.AttrModel, "m")
	wantAttr(t, run, otelsink.AttrStatus, "completed")
	wantAttr(t, run, otelsink.AttrInputTokens, int64(20))
	wantAttr(t, run, otelsink.AttrOutputTokens, int64(6))
	if _, ok := attrs(run)[otelsink.AttrParentRunID]; ok {
		t.Error("run without a parent run has actoviq.parent_run_id")
	}
	if !run.StartTime().Equal(t0.Add(1*time.Second)) || !run.EndTime().Equal(t0.Add(9*time.Second)) {
		t.Errorf("run span %v..%v, want the event times", run.StartTime(), run.EndTime())
	}
	if got, want := strings.Join(eventNames(run), ","), "run.started,run.completed"; got != want {
		t.Errorf("run span events %s, want %s", got, want)
	}

	wantAttr(t, tool, otelsink.AttrCallID, "c1")
	wantAttr(t, tool, otelsink.AttrTool, "lookup")
	wantAttr(t, tool, otelsink.AttrEffect, "read")
	wantAttr(t, tool, otelsink.AttrIdempotencyKey, "r1:c1")
	wantAttr(t, tool, otelsink.AttrState, "committed")
	wantAttr(t, tool, otelsink.AttrAttempt, int64(1))
	wantAttr(t, tool, otelsink.AttrEventSeq, int64(3))
	if got, want := strings.Join(eventNames(tool), ","), "tool.prepared,tool.started,tool.committed"; got != want {
		t.Errorf("tool span events %s, want %s", got, want)
	}
	if !tool.StartTime().Equal(t0.Add(4*time.Second)) || !tool.EndTime().Equal(t0.Add(6*time.Second)) {
		t.Errorf("tool span %v..%v, want the event times", tool.StartTime(), tool.EndTime())
	}

	for i, turn := range turns {
		wantAttr(t, turn, otelsink.AttrTurn, int64(i+1))
		wantAttr(t, turn, otelsink.AttrInputTokens, int64(10))
		wantAttr(t, turn, otelsink.AttrOutputTokens, int64(3))
		if turn.SpanKind() != trace.SpanKindClient {
			t.Errorf("turn kind %v, want client", turn.SpanKind())
		}
	}
	// Order: turn 1 ended before the tool started, turn 2 after it ended.
	if !turns[0].EndTime().Before(tool.StartTime()) || !turns[1].StartTime().After(tool.EndTime()) {
		t.Error("turn and tool spans out of order")
	}

	// Arguments and model output never become attributes.
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "TOPSECRET") {
				t.Errorf("%s: attribute %s carries event payload %q", s.Name(), kv.Key, kv.Value.String())
			}
		}
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.String(), "TOPSECRET") {
					t.Errorf("%s: event %s attribute %s carries payload", s.Name(), e.Name, kv.Key)
				}
			}
		}
	}
	if n := b.sink.OpenRuns(); n != 0 {
		t.Errorf("%d runs still held after the run ended", n)
	}
}

func TestFailedRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	e := &emitter{t: t, sink: b.sink, run: "r-fail"}
	ctx := t.Context()
	e.emit(ctx, 1, "run.started", nil)
	e.emit(ctx, 0, "model.request", map[string]any{"turn": 1})
	e.emit(ctx, 2, "run.failed", map[string]any{"status": "failed",
		"error": map[string]any{"code": "provider_error", "message": "upstream 500"}})

	spans := b.rec.Ended()
	run := one(t, spans, otelsink.SpanRun)
	if run.Status().Code != codes.Error || run.Status().Description != "provider_error: upstream 500" {
		t.Errorf("run status %+v, want error provider_error: upstream 500", run.Status())
	}
	wantAttr(t, run, otelsink.AttrErrorCode, "provider_error")
	wantAttr(t, run, otelsink.AttrStatus, "failed")
	turn := one(t, spans, otelsink.SpanTurn) // the run end closed the open turn
	if !turn.EndTime().Equal(run.EndTime()) {
		t.Errorf("turn ended %v, run %v", turn.EndTime(), run.EndTime())
	}
	if b.sink.OpenRuns() != 0 {
		t.Error("failed run still held")
	}
}

func TestToolEndings(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	e := &emitter{t: t, sink: b.sink, run: "r2"}
	ctx := t.Context()
	e.emit(ctx, 1, "run.started", nil)
	e.emit(ctx, 2, "tool.prepared", entry("lost", "prepared", 0))
	e.emit(ctx, 3, "tool.started", entry("lost", "started", 1))
	e.emit(ctx, 4, "tool.unknown", entry("lost", "unknown", 1))
	e.emit(ctx, 5, "tool.prepared", entry("wait", "prepared", 0))
	e.emit(ctx, 6, "tool.awaiting_approval", entry("wait", "awaiting_approval", 0))
	e.emit(ctx, 7, "tool.prepared", entry("no", "prepared", 0))
	e.emit(ctx, 8, "tool.skipped", entry("no", "committed", 0))
	e.emit(ctx, 9, "tool.started", entry("nocall", "started", 1))       // opened without prepared
	e.emit(ctx, 10, "tool.committed", map[string]any{"tool": "lookup"}) // no call id: ignored
	e.emit(ctx, 11, "run.interrupted", map[string]any{"status": "interrupted",
		"interruptions": []any{map[string]any{"args": "TOPSECRET"}}})

	spans := b.rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("want 5 spans, got %d", len(spans))
	}
	byCall := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range byName(spans, otelsink.SpanTool+" lookup") {
		byCall[attrs(s)[otelsink.AttrCallID].AsString()] = s
	}
	if s := byCall["lost"]; s == nil || s.Status().Code != codes.Error {
		t.Errorf("unknown outcome: want an error span, got %v", s)
	}
	if s := byCall["wait"]; s == nil || attrs(s)[otelsink.AttrState].AsString() != "awaiting_approval" || s.Status().Code != codes.Unset {
		t.Errorf("awaiting call: want an unset span in state awaiting_approval, got %v", s)
	} else if got := strings.Join(eventNames(s), ","); got != "tool.prepared,tool.awaiting_approval" {
		t.Errorf("awaiting call events %s", got)
	}
	if s := byCall["no"]; s == nil || s.Status().Code != codes.Unset {
		t.Errorf("skipped call: want an unset span, got %v", s)
	}
	if s := byCall["nocall"]; s == nil || attrs(s)[otelsink.AttrEventSeq].AsInt64() != 9 {
		t.Errorf("call opened by tool.started: got %v", s)
	}
	run := one(t, spans, otelsink.SpanRun)
	wantAttr(t, run, otelsink.AttrStatus, "interrupted")
	if run.Status().Code != codes.Unset {
		t.Errorf("interrupted run status %v", run.Status())
	}
}

func TestModelEphemeralEvents(t *testing.T) {
	t.Parallel()
	for _, deltas := range []bool{false, true} {
		t.Run(fmt.Sprint("deltas=", deltas), func(t *testing.T) {
			t.Parallel()
			b := setup(t, &otelsink.Config{TextDeltas: deltas})
			e := &emitter{t: t, sink: b.sink, run: "r3"}
			ctx := t.Context()
			e.emit(ctx, 1, "run.started", nil)
			e.emit(ctx, 0, "model.text_delta", map[string]any{"delta": "orphan"}) // no turn open: dropped
			e.emit(ctx, 0, "model.request", map[string]any{"turn": 1})
			// llm.Attempt has no JSON tags: Go field names, Wait in ns.
			e.emit(ctx, 0, "model.attempt", map[string]any{"Number": 1, "Status": 429, "Wait": 1500 * time.Millisecond, "Err": "x"})
			e.emit(ctx, 0, "model.text_delta", map[string]any{"delta": "hel", "index": 0})
			e.emit(ctx, 0, "model.text_delta", map[string]any{"delta": "lo", "index": 0})
			e.emit(ctx, 2, "model.response", map[string]any{"turn": 1})
			e.emit(ctx, 3, "run.completed", nil)

			turn := one(t, b.rec.Ended(), otelsink.SpanTurn)
			want := "model.attempt,model.response"
			if deltas {
				want = "model.attempt,model.text_delta,model.text_delta,model.response"
			}
			if got := strings.Join(eventNames(turn), ","); got != want {
				t.Fatalf("turn events %s, want %s", got, want)
			}
			at := map[attribute.Key]attribute.Value{}
			for _, kv := range turn.Events()[0].Attributes {
				at[kv.Key] = kv.Value
			}
			if at[otelsink.AttrAttemptNumber].AsInt64() != 1 || at[otelsink.AttrAttemptStatus].AsInt64() != 429 ||
				at[otelsink.AttrAttemptWaitMS].AsInt64() != 1500 {
				t.Errorf("attempt event attributes %v", turn.Events()[0].Attributes)
			}
			if deltas {
				if got := turn.Events()[1].Attributes; len(got) == 0 || got[0].Value.AsString() != "hel" {
					t.Errorf("delta event attributes %v", got)
				}
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	const runs = 16
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			happyPath(t.Context(), &emitter{t: t, sink: b.sink, run: fmt.Sprintf("run-%02d", i)})
		})
	}
	wg.Wait()

	spans := b.rec.Ended()
	if len(spans) != runs*4 {
		t.Fatalf("want %d spans, got %d", runs*4, len(spans))
	}
	runSpan := map[trace.SpanID]string{}
	for _, s := range byName(spans, otelsink.SpanRun) {
		runSpan[s.SpanContext().SpanID()] = attrs(s)[otelsink.AttrRunID].AsString()
	}
	if len(runSpan) != runs {
		t.Fatalf("want %d run spans, got %d", runs, len(runSpan))
	}
	children := map[string]int{}
	for _, s := range spans {
		if s.Name() == otelsink.SpanRun {
			continue
		}
		parentRun, ok := runSpan[s.Parent().SpanID()]
		own := attrs(s)[otelsink.AttrRunID].AsString()
		if !ok || parentRun != own {
			t.Errorf("%s of %s has parent run %q", s.Name(), own, parentRun)
		}
		children[own]++
	}
	for id, n := range children {
		if n != 3 {
			t.Errorf("run %s has %d children, want 3", id, n)
		}
	}
	if n := b.sink.OpenRuns(); n != 0 {
		t.Errorf("%d runs still held", n)
	}
}

func TestParents(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	// A span in the context passed to Emit parents the run span.
	ctx, outer := b.tp.Tracer("test").Start(t.Context(), "caller")
	e := &emitter{t: t, sink: b.sink, run: "top"}
	e.emit(ctx, 1, "run.started", nil)
	// A sub-run whose parent run is open: child of the parent's run span.
	sub := &emitter{t: t, sink: b.sink, run: "sub", paren: "top"}
	sub.emit(context.Background(), 1, "run.started", nil)
	sub.emit(context.Background(), 2, "run.completed", nil)
	e.emit(ctx, 2, "run.completed", nil)
	outer.End()

	var top, child sdktrace.ReadOnlySpan
	for _, s := range byName(b.rec.Ended(), otelsink.SpanRun) {
		switch attrs(s)[otelsink.AttrRunID].AsString() {
		case "top":
			top = s
		case "sub":
			child = s
		}
	}
	if top == nil || child == nil {
		t.Fatal("missing run spans")
	}
	if top.Parent().SpanID() != outer.SpanContext().SpanID() {
		t.Error("run span is not a child of the caller's span")
	}
	if child.Parent().SpanID() != top.SpanContext().SpanID() {
		t.Error("sub-run span is not a child of its parent run's span")
	}
	wantAttr(t, child, otelsink.AttrParentRunID, "top")
}

func TestDriveWithoutEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	e := &emitter{t: t, sink: b.sink, run: "r4"}
	ctx := t.Context()
	e.emit(ctx, 1, "run.started", nil)
	e.emit(ctx, 2, "tool.prepared", entry("c1", "prepared", 0))
	if n := len(b.rec.Ended()); n != 0 {
		t.Fatalf("%d spans ended before any run end", n)
	}
	if b.sink.OpenRuns() != 1 {
		t.Fatal("open run not held")
	}
	// Events for runs with no open span are dropped, not opened.
	other := &emitter{t: t, sink: b.sink, run: "never-started"}
	other.emit(ctx, 5, "tool.settled", entry("x", "committed", 1))
	other.emit(ctx, 6, "run.completed", nil)

	// A new drive of the same run closes what the dead drive left open.
	e.emit(ctx, 3, "run.resumed", nil)
	stale := b.rec.Ended()
	if len(stale) != 2 {
		t.Fatalf("want the dead drive's 2 spans ended, got %d", len(stale))
	}
	for _, s := range stale {
		if s.Status().Code != codes.Error {
			t.Errorf("%s of a dead drive: status %v, want error", s.Name(), s.Status())
		}
	}
	e.emit(ctx, 4, "tool.settled", entry("c1", "committed", 1)) // not opened here: a run span event
	e.emit(ctx, 5, "run.completed", nil)
	spans := b.rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("want 3 spans, got %d", len(spans))
	}
	resumed := spans[2]
	if got := strings.Join(eventNames(resumed), ","); got != "run.resumed,tool.settled,run.completed" {
		t.Errorf("resumed run events %s", got)
	}
	if b.sink.OpenRuns() != 0 {
		t.Error("runs still held")
	}
}

func TestTolerantData(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	for _, raw := range []string{``, `null`, `[]`, `"x"`, `{"call_id": 7, "turn": "two", "usage": 3}`, `{not json`} {
		b.sink.Emit(ctx, actoviq.Event{RunID: "r5", Seq: 1, Type: "run.started", Data: json.RawMessage(raw)})
		b.sink.Emit(ctx, actoviq.Event{RunID: "r5", Type: "model.request", Data: json.RawMessage(raw)})
		b.sink.Emit(ctx, actoviq.Event{RunID: "r5", Seq: 2, Type: "tool.prepared", Data: json.RawMessage(raw)})
		b.sink.Emit(ctx, actoviq.Event{RunID: "r5", Seq: 3, Type: "model.response", Data: json.RawMessage(raw)})
		b.sink.Emit(ctx, actoviq.Event{RunID: "r5", Seq: 4, Type: "run.failed", Data: json.RawMessage(raw)})
	}
	b.sink.Emit(ctx, actoviq.Event{Type: "run.started"}) // no run id: ignored
	spans := b.rec.Ended()
	if len(spans) != 12 {
		t.Fatalf("want 12 spans, got %d", len(spans))
	}
	for _, s := range byName(spans, otelsink.SpanRun) {
		if s.Status().Code != codes.Error || s.Status().Description != "run failed" {
			t.Errorf("status %+v", s.Status())
		}
	}
}

func TestNilProviderUsesGlobal(t *testing.T) {
	t.Parallel()
	s := otelsink.New(nil, nil) // the global no-op provider: must not panic
	s.Emit(t.Context(), actoviq.Event{RunID: "r", Seq: 1, Type: "run.started"})
	s.Emit(t.Context(), actoviq.Event{RunID: "r", Seq: 2, Type: "run.completed"})
	if s.OpenRuns() != 0 {
		t.Error("run still held")
	}
}
