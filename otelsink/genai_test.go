package otelsink_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/otelsink"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// memSetup records spans with the in-memory exporter behind a synchronous
// processor, as an exporter in production would see them.
func memSetup(t *testing.T, cfg *otelsink.Config) (*otelsink.Sink, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return otelsink.New(tp, cfg), exp
}

func keySet(s tracetest.SpanStub) []string {
	var keys []string
	for _, kv := range s.Attributes {
		keys = append(keys, string(kv.Key))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func stubAttr(s tracetest.SpanStub, k attribute.Key) (any, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value.AsInterface(), true
		}
	}
	return nil, false
}

func stubByName(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("want one span %q, got %d among %v", name, len(found), names)
	}
	return found[0]
}

func digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

func sideEntry(callID, state string, attempt int) map[string]any {
	return map[string]any{"call_id": callID, "tool": "pay", "effect": "side-effect", "state": state,
		"idempotency_key": "r1:" + callID, "attempt": attempt, "args": map[string]any{"amount": 5, "api_key": "sk-TOPSECRET"}}
}

// TestGenAIAttributeSets pins, span by span, the exact attribute keys the
// GenAI conventions mode emits, and the values that carry meaning.
func TestGenAIAttributeSets(t *testing.T) {
	t.Parallel()
	sink, exp := memSetup(t, &otelsink.Config{Conventions: otelsink.ConventionsGenAI})
	ctx := context.Background()
	e := &emitter{t: t, sink: sink, run: "r1"}
	e.emit(ctx, 1, "run.started", map[string]any{"agent_id": "billing", "model": "m1", "holder": "host/42/t0", "epoch": 3, "session": "s9"})
	e.emit(ctx, 0, "model.request", map[string]any{"turn": 1, "model": "m1", "items": 1})
	e.emit(ctx, 2, "model.response", map[string]any{"turn": 1, "response_id": "resp_1", "stop_reason": "tool_calls",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 3, "cached_input_tokens": 4}})
	e.emit(ctx, 3, "tool.prepared", entry("c1", "prepared", 0))
	e.emit(ctx, 4, "tool.started", entry("c1", "started", 1))
	c1 := entry("c1", "committed", 1)
	c1["is_error"] = true
	e.emit(ctx, 5, "tool.committed", c1)
	e.emit(ctx, 6, "tool.prepared", sideEntry("c2", "prepared", 0))
	e.emit(ctx, 7, "tool.awaiting_approval", sideEntry("c2", "awaiting_approval", 0))
	e.emit(ctx, 8, "tool.approved", sideEntry("c2", "prepared", 0))
	e.emit(ctx, 9, "tool.started", sideEntry("c2", "started", 1))
	e.emit(ctx, 10, "tool.unknown", sideEntry("c2", "unknown", 1))
	e.emit(ctx, 11, "run.failed", map[string]any{"status": "failed", "error": map[string]any{"code": "budget", "message": "spent"},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 3}})

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("want 4 spans, got %d", len(spans))
	}
	run := stubByName(t, spans, "invoke_agent billing")
	chat := stubByName(t, spans, "chat m1")
	read := stubByName(t, spans, "execute_tool lookup")
	pay := stubByName(t, spans, "execute_tool pay")

	want := map[string][]string{
		"invoke_agent": {"actoviq.epoch", "actoviq.error_code", "actoviq.event_seq", "actoviq.holder", "actoviq.run_id", "actoviq.status",
			"error.type", "gen_ai.agent.id", "gen_ai.agent.name", "gen_ai.conversation.id", "gen_ai.operation.name",
			"gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"},
		"chat": {"actoviq.run_id", "actoviq.turn", "gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.request.model",
			"gen_ai.response.finish_reasons", "gen_ai.response.id", "gen_ai.usage.cache_read.input_tokens",
			"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"},
		"read": {"actoviq.attempt", "actoviq.effect", "actoviq.epoch", "actoviq.event_seq", "actoviq.idempotency_key",
			"actoviq.idempotency_key.digest", "actoviq.run_id", "actoviq.state", "error.type", "gen_ai.conversation.id",
			"gen_ai.operation.name", "gen_ai.tool.call.id", "gen_ai.tool.name", "gen_ai.tool.type"},
		"pay": {"actoviq.approval.decision", "actoviq.attempt", "actoviq.effect", "actoviq.epoch", "actoviq.event_seq",
			"actoviq.idempotency_key", "actoviq.idempotency_key.digest", "actoviq.run_id", "actoviq.state", "error.type",
			"gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.tool.call.id", "gen_ai.tool.name", "gen_ai.tool.type"},
	}
	for name, s := range map[string]tracetest.SpanStub{"invoke_agent": run, "chat": chat, "read": read, "pay": pay} {
		if got := keySet(s); !slices.Equal(got, want[name]) {
			t.Errorf("%s attributes:\n got  %v\n want %v", name, got, want[name])
		}
	}

	checks := []struct {
		s    tracetest.SpanStub
		k    attribute.Key
		want any
	}{
		{run, otelsink.AttrGenAIOperation, "invoke_agent"},
		{run, otelsink.AttrGenAIAgentName, "billing"},
		{run, otelsink.AttrGenAIConversationID, "s9"},
		{run, otelsink.AttrEpoch, int64(3)},
		{run, otelsink.AttrHolder, "host/42/t0"},
		{run, otelsink.AttrErrorType, "budget"},
		{chat, otelsink.AttrGenAIOperation, "chat"},
		{chat, otelsink.AttrGenAIResponseID, "resp_1"},
		{chat, otelsink.AttrGenAICacheRead, int64(4)},
		{chat, otelsink.AttrGenAIConversationID, "s9"},
		{read, otelsink.AttrGenAIOperation, "execute_tool"},
		{read, otelsink.AttrGenAIToolName, "lookup"},
		{read, otelsink.AttrGenAIToolCallID, "c1"},
		{read, otelsink.AttrGenAIToolType, "function"},
		{read, otelsink.AttrErrorType, "tool_error"},
		{read, otelsink.AttrKeyDigest, digest("r1:c1")},
		{read, otelsink.AttrEpoch, int64(3)},
		{pay, otelsink.AttrErrorType, "unknown_outcome"},
		{pay, otelsink.AttrState, "unknown"},
		{pay, otelsink.AttrApprovalDecision, "approved"},
		{pay, otelsink.AttrAttempt, int64(1)},
		{pay, otelsink.AttrEffect, "side-effect"},
	}
	for _, c := range checks {
		got, ok := stubAttr(c.s, c.k)
		if !ok || got != c.want {
			t.Errorf("%s: %s = %v (present %v), want %v", c.s.Name, c.k, got, ok, c.want)
		}
	}
	if fr, _ := stubAttr(chat, otelsink.AttrGenAIFinishReasons); fmt.Sprint(fr) != "[tool_calls]" {
		t.Errorf("finish reasons %v", fr)
	}
	kinds := map[string]trace.SpanKind{run.Name: trace.SpanKindInternal, chat.Name: trace.SpanKindClient,
		read.Name: trace.SpanKindInternal, pay.Name: trace.SpanKindInternal}
	for _, s := range spans {
		if s.SpanKind != kinds[s.Name] {
			t.Errorf("%s: kind %v, want %v", s.Name, s.SpanKind, kinds[s.Name])
		}
		if s.Name != chat.Name && s.Status.Code != codes.Error {
			t.Errorf("%s: status %v, want Error (every span here but chat ended badly)", s.Name, s.Status)
		}
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "TOPSECRET") {
				t.Errorf("%s: %s carries content without opt-in: %s", s.Name, kv.Key, kv.Value.String())
			}
		}
	}
}

// TestGenAIVerdicts: decisions and probes recorded on calls a later drive
// sees reach the spans with our own attributes.
func TestGenAIVerdicts(t *testing.T) {
	t.Parallel()
	sink, exp := memSetup(t, &otelsink.Config{Conventions: otelsink.ConventionsGenAI})
	ctx := context.Background()
	e := &emitter{t: t, sink: sink, run: "r1"}
	e.emit(ctx, 1, "run.resumed", map[string]any{"agent_id": "billing", "model": "m1", "holder": "h2", "epoch": 4})
	e.emit(ctx, 2, "tool.started", sideEntry("c3", "started", 2))
	e.emit(ctx, 3, "tool.probed", map[string]any{"call_id": "c3", "outcome": "not_executed"})
	settled := sideEntry("c3", "committed", 2)
	settled["resolution"] = "committed"
	e.emit(ctx, 4, "tool.settled", settled)
	e.emit(ctx, 5, "tool.started", sideEntry("c4", "started", 1))
	probe := sideEntry("c4", "committed", 1)
	probe["resolution"] = "probe"
	e.emit(ctx, 6, "tool.settled", probe)
	e.emit(ctx, 7, "tool.prepared", sideEntry("c5", "prepared", 0))
	e.emit(ctx, 8, "tool.rejected", sideEntry("c5", "committed", 0))
	e.emit(ctx, 9, "tool.prepared", sideEntry("c6", "prepared", 0))
	e.emit(ctx, 10, "tool.approval_escalated", map[string]any{"call_id": "c6", "tool": "pay", "effect": "side-effect"})
	e.emit(ctx, 11, "run.completed", map[string]any{"status": "completed"})

	var verdicts, decisions []string
	for _, s := range exp.GetSpans() {
		if v, ok := stubAttr(s, otelsink.AttrVerdict); ok {
			verdicts = append(verdicts, fmt.Sprint(v))
		}
		if v, ok := stubAttr(s, otelsink.AttrApprovalDecision); ok {
			decisions = append(decisions, fmt.Sprint(v))
		}
		if s.Name == "execute_tool pay" {
			if _, ok := stubAttr(s, otelsink.AttrEpoch); !ok {
				t.Errorf("%s has no epoch", s.Name)
			}
		}
	}
	slices.Sort(verdicts)
	if !slices.Equal(verdicts, []string{"committed", "probe_committed"}) {
		t.Errorf("verdicts %v", verdicts)
	}
	slices.Sort(decisions)
	if !slices.Equal(decisions, []string{"escalated", "rejected"}) {
		t.Errorf("decisions %v", decisions)
	}
	var probed bool
	for _, s := range exp.GetSpans() {
		for _, ev := range s.Events {
			if ev.Name != "tool.probed" {
				continue
			}
			for _, kv := range ev.Attributes {
				if kv.Key == otelsink.AttrProbeOutcome && kv.Value.AsString() == "not_executed" {
					probed = true
				}
			}
		}
	}
	// tool.probed updates the open call span's attributes.
	for _, s := range exp.GetSpans() {
		if v, ok := stubAttr(s, otelsink.AttrProbeOutcome); ok && v == "not_executed" {
			probed = true
		}
	}
	if !probed {
		t.Error("the probe's answer is on no span")
	}
}

// TestGenAIContentOptIn: arguments and results appear only with
// RecordContent, and only redacted.
func TestGenAIContentOptIn(t *testing.T) {
	t.Parallel()
	for _, record := range []bool{false, true} {
		sink, exp := memSetup(t, &otelsink.Config{Conventions: otelsink.ConventionsGenAI, RecordContent: record, RedactKeys: []string{"iban"}})
		ctx := context.Background()
		e := &emitter{t: t, sink: sink, run: "r1"}
		e.emit(ctx, 1, "run.started", map[string]any{"agent_id": "a"})
		args := map[string]any{"amount": 5, "api_key": "sk-TOPSECRET", "iban": "DE-TOPSECRET"}
		e.emit(ctx, 2, "tool.started", map[string]any{"call_id": "c1", "tool": "pay", "state": "started", "args": args})
		e.emit(ctx, 3, "tool.committed", map[string]any{"call_id": "c1", "tool": "pay", "state": "committed",
			"result": map[string]any{"content": "paid", "password": "TOPSECRET"}})
		e.emit(ctx, 4, "run.completed", map[string]any{"status": "completed"})
		s := stubByName(t, exp.GetSpans(), "execute_tool pay")
		a, hasArgs := stubAttr(s, otelsink.AttrGenAIToolArgs)
		r, hasRes := stubAttr(s, otelsink.AttrGenAIToolResult)
		if !record {
			if hasArgs || hasRes {
				t.Errorf("content recorded without opt-in: %v %v", a, r)
			}
			continue
		}
		if !hasArgs || !hasRes {
			t.Fatalf("opted in, but args %v (%v) result %v (%v)", a, hasArgs, r, hasRes)
		}
		as, rs := fmt.Sprint(a), fmt.Sprint(r)
		if strings.Contains(as+rs, "TOPSECRET") {
			t.Errorf("secrets in content: %s | %s", as, rs)
		}
		if !strings.Contains(as, `"amount":5`) || !strings.Contains(rs, `"content":"paid"`) {
			t.Errorf("content lost: %s | %s", as, rs)
		}
	}
}

// TestConventionsFromEnvironment: OTEL_SEMCONV_STABILITY_OPT_IN selects
// the GenAI conventions; without it the spans keep their names.
func TestConventionsFromEnvironment(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"", "actoviq.run"},
		{"http", "actoviq.run"},
		{"http, gen_ai_latest_experimental", "invoke_agent a"},
		{"gen_ai_latest_experimental", "invoke_agent a"},
	} {
		t.Setenv(otelsink.SemconvOptInEnv, c.env)
		sink, exp := memSetup(t, nil)
		e := &emitter{t: t, sink: sink, run: "r1"}
		e.emit(context.Background(), 1, "run.started", map[string]any{"agent_id": "a"})
		e.emit(context.Background(), 2, "run.completed", map[string]any{"status": "completed"})
		spans := exp.GetSpans()
		if len(spans) != 1 || spans[0].Name != c.want {
			t.Errorf("%s=%q: spans %v, want one %q", otelsink.SemconvOptInEnv, c.env, spans, c.want)
		}
	}
	// An explicit choice wins over the environment.
	t.Setenv(otelsink.SemconvOptInEnv, otelsink.GenAIOptIn)
	sink, exp := memSetup(t, &otelsink.Config{Conventions: otelsink.ConventionsActoviq})
	e := &emitter{t: t, sink: sink, run: "r1"}
	e.emit(context.Background(), 1, "run.started", map[string]any{"agent_id": "a"})
	e.emit(context.Background(), 2, "run.completed", map[string]any{"status": "completed"})
	if s := exp.GetSpans(); len(s) != 1 || s[0].Name != otelsink.SpanRun {
		t.Errorf("explicit ConventionsActoviq: %v", s)
	}
}

// TestGenAIRuntime: a real run, traced under the GenAI conventions.
func TestGenAIRuntime(t *testing.T) {
	t.Parallel()
	sink, exp := memSetup(t, &otelsink.Config{Conventions: otelsink.ConventionsGenAI})
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	res, err := rt.Run(t.Context(), lookupAgent(t), &actoviq.Input{Items: []item.Item{item.UserText("hi")}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	run := stubByName(t, spans, "invoke_agent a")
	tool := stubByName(t, spans, "execute_tool lookup")
	for _, c := range []struct {
		s    tracetest.SpanStub
		k    attribute.Key
		want any
	}{
		{run, otelsink.AttrGenAIConversationID, res.RunID},
		{run, otelsink.AttrEpoch, int64(1)},
		{tool, otelsink.AttrGenAIToolCallID, "c1"},
		{tool, otelsink.AttrKeyDigest, digest(res.RunID + ":c1")},
		{tool, otelsink.AttrState, "committed"},
		{tool, otelsink.AttrGenAIConversationID, res.RunID},
	} {
		if got, ok := stubAttr(c.s, c.k); !ok || got != c.want {
			t.Errorf("%s: %s = %v (present %v), want %v", c.s.Name, c.k, got, ok, c.want)
		}
	}
	var chats int
	for _, s := range spans {
		if s.Name == "chat m" {
			chats++
			if s.Parent.SpanID() != run.SpanContext.SpanID() {
				t.Error("chat span is not a child of invoke_agent")
			}
		}
	}
	if chats != 2 {
		t.Errorf("%d chat spans, want 2", chats)
	}
}
