package otelsink

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	actoviq "github.com/actoviq/actoviq-go"
)

// DefaultTracerName is the instrumentation scope name used when
// [Config].TracerName is empty.
const DefaultTracerName = "github.com/actoviq/actoviq-go"

// Span names.
const (
	SpanRun  = "actoviq.run"
	SpanTurn = "actoviq.turn"
	// SpanTool is the prefix of a tool call's span name; the tool's name
	// follows after a space.
	SpanTool = "actoviq.tool"
)

// Event types the sink understands. They mirror the runtime's event types
// (see [actoviq.Event]); the runtime emits them, this package only reads
// them.
const (
	evRunStarted     = "run.started"
	evRunResumed     = "run.resumed"
	evRunCompleted   = "run.completed"
	evRunInterrupted = "run.interrupted"
	evRunFailed      = "run.failed"
	evRunCancelled   = "run.cancelled"
	evModelRequest   = "model.request"
	evModelResponse  = "model.response"
	evModelAttempt   = "model.attempt"
	evTextDelta      = "model.text_delta"
	evToolPrepared   = "tool.prepared"
	evToolStarted    = "tool.started"
	evToolCommitted  = "tool.committed"
	evToolUnknown    = "tool.unknown"
	evToolSettled    = "tool.settled"
	evToolSkipped    = "tool.skipped"
	evToolRejected   = "tool.rejected"
)

// Config configures a [Sink]. A nil *Config means defaults.
type Config struct {
	// TracerName is the instrumentation scope of the tracer the sink
	// obtains from the provider. Empty means [DefaultTracerName].
	TracerName string
	// TextDeltas records streamed model text (model.text_delta) as span
	// events on the turn span, with the text as an attribute. False (the
	// default) skips them: they are numerous and they are model output.
	TextDeltas bool
}

// Sink is an [actoviq.EventSink] that records runs as OpenTelemetry spans.
// It is safe for concurrent use. Create it with [New].
type Sink struct {
	tracer     trace.Tracer
	textDeltas bool

	mu   sync.Mutex
	runs map[string]*runSpans // run id → the open spans of its current drive
}

var _ actoviq.EventSink = (*Sink)(nil)

// runSpans are the open spans of one drive of a run.
type runSpans struct {
	span  trace.Span
	ctx   context.Context // carries span; parent of turns and tools
	turn  trace.Span      // nil when no turn is open
	tools map[string]trace.Span
}

// New returns a sink that creates spans with a tracer from tp. A nil tp
// means the global provider at the time of the call (otel.GetTracerProvider
// is not consulted later).
func New(tp trace.TracerProvider, cfg *Config) *Sink {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.TracerName == "" {
		c.TracerName = DefaultTracerName
	}
	if tp == nil {
		tp = globalProvider()
	}
	return &Sink{
		tracer:     tp.Tracer(c.TracerName),
		textDeltas: c.TextDeltas,
		runs:       map[string]*runSpans{},
	}
}

// ending is a span to end once the sink's lock is released, so that a
// synchronous exporter does not hold up other runs' events.
type ending struct {
	span trace.Span
	opts []trace.SpanEndOption
}

// Emit implements [actoviq.EventSink]. Events of unknown types are ignored.
func (s *Sink) Emit(ctx context.Context, ev actoviq.Event) {
	if ev.RunID == "" {
		return
	}
	d := parseData(ev.Data)
	s.mu.Lock()
	ends := s.handle(ctx, ev, d)
	s.mu.Unlock()
	for _, e := range ends {
		e.span.End(e.opts...)
	}
}

// handle applies one event to the open spans and returns the spans to end,
// in order (children before their run). The caller holds s.mu.
func (s *Sink) handle(ctx context.Context, ev actoviq.Event, d data) []ending {
	switch ev.Type {
	case evRunStarted, evRunResumed:
		return s.openRun(ctx, ev, d)
	case evRunCompleted, evRunInterrupted, evRunFailed, evRunCancelled:
		return s.closeRun(ev, d)
	}
	r := s.runs[ev.RunID]
	if r == nil {
		return nil // no open drive for this run in this sink
	}
	switch ev.Type {
	case evModelRequest:
		var ends []ending
		if r.turn != nil { // a turn this drive never saw answered
			ends = append(ends, ending{r.turn, endAt(ev)})
		}
		attrs := append(runAttrs(ev), seqAttrs(ev)...)
		attrs = append(attrs, d.turnAttrs()...)
		_, r.turn = s.tracer.Start(r.ctx, SpanTurn, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrs...), startAt(ev))
		return ends
	case evModelResponse:
		if r.turn == nil {
			return nil
		}
		r.turn.SetAttributes(d.turnAttrs()...)
		r.turn.SetAttributes(d.usageAttrs()...)
		mark(r.turn, ev)
		t := r.turn
		r.turn = nil
		return []ending{{t, endAt(ev)}}
	case evModelAttempt:
		if r.turn != nil {
			r.turn.AddEvent(evModelAttempt, trace.WithAttributes(d.attemptAttrs()...), eventAt(ev))
		}
		return nil
	case evTextDelta:
		if s.textDeltas && r.turn != nil {
			r.turn.AddEvent(evTextDelta, trace.WithAttributes(d.deltaAttrs()...), eventAt(ev))
		}
		return nil
	}
	if !isTool(ev.Type) {
		mark(r.span, ev) // session.appended, model.behavior_error, ...
		return nil
	}
	return s.toolEvent(r, ev, d)
}

func (s *Sink) openRun(ctx context.Context, ev actoviq.Event, d data) []ending {
	var ends []ending
	if old := s.runs[ev.RunID]; old != nil {
		// An earlier drive of this run never reported its end to this sink
		// (it died, or returned an error). Close its spans now rather than
		// keep them forever.
		ends = old.endAll(ev, "the drive ended without a final run event")
	}
	parent := ctx
	if !trace.SpanContextFromContext(ctx).IsValid() {
		parent = context.Background()
		if p := s.runs[ev.ParentRunID]; ev.ParentRunID != "" && p != nil {
			parent = p.ctx
		}
	}
	attrs := append(runAttrs(ev), seqAttrs(ev)...)
	attrs = append(attrs, d.runAttrs()...)
	// Only the span context of parent is used: the run's spans must not
	// inherit the caller's cancellation or values beyond the trace.
	rctx, span := s.tracer.Start(trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(parent)),
		SpanRun, trace.WithAttributes(attrs...), startAt(ev))
	mark(span, ev)
	s.runs[ev.RunID] = &runSpans{span: span, ctx: rctx, tools: map[string]trace.Span{}}
	return ends
}

func (s *Sink) closeRun(ev actoviq.Event, d data) []ending {
	r := s.runs[ev.RunID]
	if r == nil {
		return nil
	}
	delete(s.runs, ev.RunID)
	r.span.SetAttributes(d.endAttrs()...)
	r.span.SetAttributes(d.usageAttrs()...)
	mark(r.span, ev)
	if ev.Type == evRunFailed {
		r.span.SetStatus(codes.Error, d.errorDescription())
	}
	return r.endAll(ev, "")
}

// endAll ends the drive's turn, tools and run span, children first. A
// non-empty reason marks every span as an error with that description.
func (r *runSpans) endAll(ev actoviq.Event, reason string) []ending {
	var ends []ending
	add := func(sp trace.Span) {
		if reason != "" {
			sp.SetStatus(codes.Error, reason)
		}
		ends = append(ends, ending{sp, endAt(ev)})
	}
	if r.turn != nil {
		add(r.turn)
	}
	for _, sp := range r.tools {
		add(sp)
	}
	add(r.span)
	r.turn, r.tools = nil, nil
	return ends
}

func (s *Sink) toolEvent(r *runSpans, ev actoviq.Event, d data) []ending {
	callID := d.str("call_id")
	if callID == "" {
		return nil
	}
	sp := r.tools[callID]
	switch ev.Type {
	case evToolPrepared, evToolStarted:
		if sp == nil {
			name := SpanTool
			if t := d.str("tool"); t != "" {
				name += " " + t
			}
			attrs := append(runAttrs(ev), seqAttrs(ev)...)
			attrs = append(attrs, d.toolAttrs()...)
			_, sp = s.tracer.Start(r.ctx, name, trace.WithAttributes(attrs...), startAt(ev))
			r.tools[callID] = sp
		} else {
			sp.SetAttributes(d.toolAttrs()...)
		}
		mark(sp, ev)
		return nil
	}
	if sp == nil {
		// The call was opened by another drive (a decision on a resumed
		// run); record the transition on the run span.
		mark(r.span, ev, d.toolAttrs()...)
		return nil
	}
	sp.SetAttributes(d.toolAttrs()...)
	mark(sp, ev)
	switch ev.Type {
	case evToolCommitted, evToolSettled, evToolSkipped, evToolRejected:
	case evToolUnknown:
		sp.SetStatus(codes.Error, "side effect outcome unknown")
	default:
		return nil // awaiting approval, approved, probed, re-execute: still open
	}
	delete(r.tools, callID)
	return []ending{{sp, endAt(ev)}}
}

// mark records ev as a span event named after its type, with its sequence
// number, so each span shows the transitions it went through.
func mark(sp trace.Span, ev actoviq.Event, attrs ...attribute.KeyValue) {
	sp.AddEvent(ev.Type, trace.WithAttributes(append(seqAttrs(ev), attrs...)...), eventAt(ev))
}

func isTool(typ string) bool { return len(typ) > 5 && typ[:5] == "tool." }

func startAt(ev actoviq.Event) trace.SpanStartOption {
	if ev.Time.IsZero() {
		return trace.WithAttributes()
	}
	return trace.WithTimestamp(ev.Time)
}

func endAt(ev actoviq.Event) []trace.SpanEndOption {
	if ev.Time.IsZero() {
		return nil
	}
	return []trace.SpanEndOption{trace.WithTimestamp(ev.Time)}
}

func eventAt(ev actoviq.Event) trace.EventOption {
	if ev.Time.IsZero() {
		return trace.WithAttributes()
	}
	return trace.WithTimestamp(ev.Time)
}
