package otelsink

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/internal/redact"
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
	evToolApproved   = "tool.approved"
	evToolReexecute  = "tool.reexecute"
	evToolProbed     = "tool.probed"
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
	// Conventions selects span and attribute names. The zero value,
	// [ConventionsFromEnv], follows OTEL_SEMCONV_STABILITY_OPT_IN.
	Conventions Conventions
	// RecordContent sets gen_ai.tool.call.arguments and
	// gen_ai.tool.call.result on tool spans, from the event data (which
	// the runtime redacted before any sink saw it), redacted once more
	// here with RedactKeys. False (the default) records neither: they are
	// what the model sent and what the tool returned.
	RecordContent bool
	// RedactKeys are extra secret-looking keys for RecordContent's second
	// redaction, beside the defaults (authorization, api key, token,
	// secret, password, cookie, ...). Nil means the defaults only.
	RedactKeys []string
}

// Sink is an [actoviq.EventSink] that records runs as OpenTelemetry spans.
// It is safe for concurrent use. Create it with [New].
type Sink struct {
	tracer     trace.Tracer
	textDeltas bool
	genai      bool
	content    bool
	redactor   *redact.Redactor

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
	// conversation is gen_ai.conversation.id: the run's session, or the
	// run itself when it has none; epoch is the drive's claim epoch.
	conversation string
	epoch        int64
	hasEpoch     bool
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
		genai:      envConventions(c.Conventions) == ConventionsGenAI,
		content:    c.RecordContent,
		redactor:   redact.New(c.RedactKeys...),
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
		name := SpanTurn
		if s.genai {
			name = OpChat
			if m := d.str("model"); m != "" {
				name += " " + m
			}
			attrs = append(attrs, AttrGenAIOperation.String(OpChat), AttrGenAIConversationID.String(r.conversation))
		}
		_, r.turn = s.tracer.Start(r.ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrs...), startAt(ev))
		return ends
	case evModelResponse:
		if r.turn == nil {
			return nil
		}
		r.turn.SetAttributes(d.turnAttrs()...)
		if s.genai {
			r.turn.SetAttributes(d.usageAttrs(AttrGenAICacheRead)...)
			r.turn.SetAttributes(d.genaiResponseAttrs()...)
		} else {
			r.turn.SetAttributes(d.usageAttrs(AttrCachedTokens)...)
		}
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
	conversation := d.str("session")
	if conversation == "" {
		conversation = ev.RunID
	}
	attrs := append(runAttrs(ev), seqAttrs(ev)...)
	name, kind := SpanRun, trace.SpanKindInternal
	if s.genai {
		name = OpInvokeAgent
		if id := d.str("agent_id"); id != "" {
			name += " " + id
		}
		attrs = append(attrs, d.genaiRunAttrs(conversation)...)
	} else {
		attrs = append(attrs, d.runAttrs()...)
	}
	attrs = append(attrs, d.driveAttrs()...)
	// Only the span context of parent is used: the run's spans must not
	// inherit the caller's cancellation or values beyond the trace.
	rctx, span := s.tracer.Start(trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(parent)),
		name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...), startAt(ev))
	mark(span, ev)
	rs := &runSpans{span: span, ctx: rctx, tools: map[string]trace.Span{}, conversation: conversation}
	rs.epoch, rs.hasEpoch = d.int("epoch")
	s.runs[ev.RunID] = rs
	return ends
}

func (s *Sink) closeRun(ev actoviq.Event, d data) []ending {
	r := s.runs[ev.RunID]
	if r == nil {
		return nil
	}
	delete(s.runs, ev.RunID)
	r.span.SetAttributes(d.endAttrs()...)
	if s.genai {
		r.span.SetAttributes(d.usageAttrs(AttrGenAICacheRead)...)
	} else {
		r.span.SetAttributes(d.usageAttrs(AttrCachedTokens)...)
	}
	mark(r.span, ev)
	if ev.Type == evRunFailed {
		typ := d.obj("error").str("code")
		if typ == "" {
			typ = "_OTHER"
		}
		r.span.SetAttributes(AttrErrorType.String(typ))
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
			kind := trace.SpanKindInternal
			if s.genai {
				name = OpExecuteTool
			}
			if t := d.str("tool"); t != "" {
				name += " " + t
			}
			attrs := append(runAttrs(ev), seqAttrs(ev)...)
			attrs = append(attrs, s.toolAttrs(r, ev, d)...)
			if s.genai {
				attrs = append(attrs, AttrGenAIConversationID.String(r.conversation))
			}
			_, sp = s.tracer.Start(r.ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...), startAt(ev))
			r.tools[callID] = sp
		} else {
			sp.SetAttributes(s.toolAttrs(r, ev, d)...)
		}
		mark(sp, ev)
		return nil
	}
	if sp == nil {
		// The call was opened by another drive (a decision on a resumed
		// run); record the transition on the run span.
		mark(r.span, ev, s.toolAttrs(r, ev, d)...)
		return nil
	}
	sp.SetAttributes(s.toolAttrs(r, ev, d)...)
	mark(sp, ev)
	if typ := d.toolErrorType(ev.Type); typ != "" {
		sp.SetAttributes(AttrErrorType.String(typ))
		switch {
		case typ == ErrTypeUnknownOutcome:
			sp.SetStatus(codes.Error, "side effect outcome unknown")
		case !s.genai:
			// ConventionsActoviq keeps its statuses: only an unknown
			// outcome is an error there.
		case typ == ErrTypeToolError:
			sp.SetStatus(codes.Error, "the tool returned an error result")
		case typ == ErrTypeNotRun:
			sp.SetStatus(codes.Error, "the call was not run (refused before it started)")
		}
	}
	switch ev.Type {
	case evToolCommitted, evToolSettled, evToolSkipped, evToolRejected, evToolUnknown:
	default:
		return nil // awaiting approval, approved, probed, re-execute: still open
	}
	delete(r.tools, callID)
	return []ending{{sp, endAt(ev)}}
}

// toolAttrs are the attributes one tool event sets on its call's span.
func (s *Sink) toolAttrs(r *runSpans, ev actoviq.Event, d data) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if s.genai {
		attrs = d.toolAttrs([]attribute.KeyValue{AttrGenAIOperation.String(OpExecuteTool), AttrGenAIToolType.String("function")},
			AttrGenAIToolName, AttrGenAIToolCallID)
	} else {
		attrs = d.toolAttrs(nil, AttrTool, AttrCallID)
	}
	attrs = append(attrs, d.ownToolAttrs(ev.Type)...)
	if r.hasEpoch && (ev.Type == evToolPrepared || ev.Type == evToolStarted) {
		attrs = append(attrs, AttrEpoch.Int64(r.epoch))
	}
	if s.content {
		if a := s.redacted(d, "args"); a != "" {
			attrs = append(attrs, AttrGenAIToolArgs.String(a))
		}
		if res := s.redacted(d, "result"); res != "" {
			attrs = append(attrs, AttrGenAIToolResult.String(res))
		}
	}
	return attrs
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
