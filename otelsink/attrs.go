package otelsink

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	actoviq "github.com/actoviq/actoviq-go"
)

// Attribute keys. Only these are ever set: identifiers and counters, never
// arguments, results or (unless Config.TextDeltas) model text.
const (
	AttrRunID          = attribute.Key("actoviq.run_id")
	AttrParentRunID    = attribute.Key("actoviq.parent_run_id")
	AttrEventSeq       = attribute.Key("actoviq.event_seq")
	AttrAgentID        = attribute.Key("actoviq.agent_id")
	AttrTurn           = attribute.Key("actoviq.turn")
	AttrCallID         = attribute.Key("actoviq.call_id")
	AttrTool           = attribute.Key("actoviq.tool")
	AttrEffect         = attribute.Key("actoviq.effect")
	AttrIdempotencyKey = attribute.Key("actoviq.idempotency_key")
	AttrState          = attribute.Key("actoviq.state")
	AttrAttempt        = attribute.Key("actoviq.attempt")
	AttrStatus         = attribute.Key("actoviq.status")
	AttrErrorCode      = attribute.Key("actoviq.error_code")
	AttrModel          = attribute.Key("gen_ai.request.model")
	AttrInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	AttrCachedTokens   = attribute.Key("actoviq.usage.cached_input_tokens")
	AttrReasonTokens   = attribute.Key("actoviq.usage.reasoning_tokens")

	// On model.attempt span events.
	AttrAttemptNumber = attribute.Key("actoviq.attempt.number")
	AttrAttemptStatus = attribute.Key("actoviq.attempt.status")
	AttrAttemptWaitMS = attribute.Key("actoviq.attempt.wait_ms")

	// On model.text_delta span events (only with Config.TextDeltas).
	AttrDelta      = attribute.Key("actoviq.delta")
	AttrDeltaIndex = attribute.Key("actoviq.delta.index")
)

func globalProvider() trace.TracerProvider { return otel.GetTracerProvider() }

// data is an event's data decoded leniently: a missing, malformed or
// non-object payload is an empty map, and every accessor tolerates a
// missing key or a value of the wrong type.
type data map[string]any

func parseData(raw json.RawMessage) data {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

// get finds key, falling back to a case-insensitive match (payloads
// marshalled from structs without JSON tags use Go field names).
func (d data) get(key string) (any, bool) {
	if v, ok := d[key]; ok {
		return v, true
	}
	for k, v := range d {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

func (d data) str(key string) string {
	v, _ := d.get(key)
	s, _ := v.(string)
	return s
}

func (d data) int(key string) (int64, bool) {
	v, ok := d.get(key)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		if f, err := n.Float64(); err == nil {
			return int64(f), true
		}
	case float64:
		return int64(n), true
	}
	return 0, false
}

func (d data) obj(key string) data {
	v, _ := d.get(key)
	m, _ := v.(map[string]any)
	return m
}

// put appends a string attribute when the key is present and non-empty.
func (d data) putStr(attrs []attribute.KeyValue, key string, to attribute.Key) []attribute.KeyValue {
	if s := d.str(key); s != "" {
		attrs = append(attrs, to.String(s))
	}
	return attrs
}

func (d data) putInt(attrs []attribute.KeyValue, key string, to attribute.Key) []attribute.KeyValue {
	if n, ok := d.int(key); ok {
		attrs = append(attrs, to.Int64(n))
	}
	return attrs
}

// runAttrs identify the run on every span.
func runAttrs(ev actoviq.Event) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrRunID.String(ev.RunID)}
	if ev.ParentRunID != "" {
		attrs = append(attrs, AttrParentRunID.String(ev.ParentRunID))
	}
	return attrs
}

// seqAttrs carry the event's per-run sequence; ephemeral events have none.
func seqAttrs(ev actoviq.Event) []attribute.KeyValue {
	if ev.Seq <= 0 {
		return nil
	}
	return []attribute.KeyValue{AttrEventSeq.Int64(ev.Seq)}
}

// runAttrs: run.started / run.resumed.
func (d data) runAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putStr(attrs, "agent_id", AttrAgentID)
	attrs = d.putStr(attrs, "model", AttrModel)
	return attrs
}

// endAttrs: run.completed, run.interrupted, run.failed, run.cancelled.
func (d data) endAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putStr(attrs, "status", AttrStatus)
	attrs = d.obj("error").putStr(attrs, "code", AttrErrorCode)
	return attrs
}

func (d data) errorDescription() string {
	e := d.obj("error")
	code, msg := e.str("code"), e.str("message")
	switch {
	case code != "" && msg != "":
		return code + ": " + msg
	case msg != "":
		return msg
	case code != "":
		return code
	}
	return "run failed"
}

// turnAttrs: model.request, model.response.
func (d data) turnAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putInt(attrs, "turn", AttrTurn)
	attrs = d.putStr(attrs, "model", AttrModel)
	return attrs
}

// usageAttrs: the "usage" object of model.response and run ends, in
// either convention (only the cached-input key differs: AttrCachedTokens
// or AttrGenAICacheRead).
func (d data) usageAttrs(cached attribute.Key) []attribute.KeyValue {
	u := d.obj("usage")
	if u == nil {
		return nil
	}
	var attrs []attribute.KeyValue
	attrs = u.putInt(attrs, "input_tokens", AttrInputTokens)
	attrs = u.putInt(attrs, "output_tokens", AttrOutputTokens)
	attrs = u.putInt(attrs, "cached_input_tokens", cached)
	attrs = u.putInt(attrs, "reasoning_tokens", AttrReasonTokens)
	return attrs
}

// toolAttrs: tool.* events, in either convention (attrs holds what the
// convention puts first; tool and callID are its keys for the tool's name
// and the call id). Arguments ("args") are never copied.
func (d data) toolAttrs(attrs []attribute.KeyValue, tool, callID attribute.Key) []attribute.KeyValue {
	attrs = d.putStr(attrs, "tool", tool)
	attrs = d.putStr(attrs, "call_id", callID)
	attrs = d.putStr(attrs, "effect", AttrEffect)
	attrs = d.putStr(attrs, "state", AttrState)
	attrs = d.putStr(attrs, "idempotency_key", AttrIdempotencyKey)
	attrs = d.putInt(attrs, "attempt", AttrAttempt)
	return attrs
}

// attemptAttrs: model.attempt (a failed provider attempt before a retry).
func (d data) attemptAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putInt(attrs, "number", AttrAttemptNumber)
	attrs = d.putInt(attrs, "status", AttrAttemptStatus)
	if n, ok := d.int("wait"); ok {
		attrs = append(attrs, AttrAttemptWaitMS.Int64(time.Duration(n).Milliseconds()))
	} else if dur, err := time.ParseDuration(d.str("wait")); err == nil {
		attrs = append(attrs, AttrAttemptWaitMS.Int64(dur.Milliseconds()))
	}
	return attrs
}

// deltaAttrs: model.text_delta.
func (d data) deltaAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if v, ok := d.get("delta"); ok {
		if s, ok := v.(string); ok {
			attrs = append(attrs, AttrDelta.String(s))
		}
	}
	attrs = d.putInt(attrs, "index", AttrDeltaIndex)
	return attrs
}
