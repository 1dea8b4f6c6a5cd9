package otelsink

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// Conventions selects the span names and attribute names a [Sink] emits.
type Conventions int

const (
	// ConventionsFromEnv reads OTEL_SEMCONV_STABILITY_OPT_IN when the sink
	// is created: a comma-separated list that contains
	// "gen_ai_latest_experimental" selects [ConventionsGenAI]; anything
	// else, or the variable unset, selects [ConventionsActoviq]. This is
	// the transition rule the GenAI conventions give instrumentations that
	// already emitted spans: keep what you emitted by default, switch on
	// the opt-in.
	ConventionsFromEnv Conventions = iota
	// ConventionsActoviq emits the spans this package always emitted:
	// actoviq.run, actoviq.turn and "actoviq.tool <name>", with actoviq.*
	// attributes and the token counts under gen_ai.usage.*.
	ConventionsActoviq
	// ConventionsGenAI emits the spans the OpenTelemetry GenAI semantic
	// conventions name (latest experimental): "invoke_agent <agent>"
	// (kind internal) for a drive of a run, "chat <model>" (kind client)
	// for a model turn and "execute_tool <tool>" (kind internal) for a
	// tool call, with gen_ai.operation.name, gen_ai.agent.id,
	// gen_ai.agent.name, gen_ai.conversation.id, gen_ai.request.model,
	// gen_ai.response.id, gen_ai.response.finish_reasons,
	// gen_ai.usage.input_tokens, gen_ai.usage.output_tokens,
	// gen_ai.usage.cache_read.input_tokens, gen_ai.tool.name,
	// gen_ai.tool.call.id, gen_ai.tool.type and error.type, plus the
	// actoviq.* attributes no convention has.
	ConventionsGenAI
)

// SemconvOptInEnv is the environment variable [ConventionsFromEnv] reads,
// and GenAIOptIn the value in its list that selects [ConventionsGenAI].
const (
	SemconvOptInEnv = "OTEL_SEMCONV_STABILITY_OPT_IN"
	GenAIOptIn      = "gen_ai_latest_experimental"
)

// conventionsFrom resolves ConventionsFromEnv with getenv.
func conventionsFrom(c Conventions, getenv func(string) string) Conventions {
	if c != ConventionsFromEnv {
		return c
	}
	for _, v := range strings.Split(getenv(SemconvOptInEnv), ",") {
		if strings.TrimSpace(v) == GenAIOptIn {
			return ConventionsGenAI
		}
	}
	return ConventionsActoviq
}

func envConventions(c Conventions) Conventions { return conventionsFrom(c, os.Getenv) }

// GenAI convention keys ([ConventionsGenAI]), as the conventions spell them.
const (
	AttrGenAIOperation      = attribute.Key("gen_ai.operation.name")
	AttrGenAIAgentID        = attribute.Key("gen_ai.agent.id")
	AttrGenAIAgentName      = attribute.Key("gen_ai.agent.name")
	AttrGenAIConversationID = attribute.Key("gen_ai.conversation.id")
	AttrGenAIResponseID     = attribute.Key("gen_ai.response.id")
	AttrGenAIFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	AttrGenAICacheRead      = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	AttrGenAIToolName       = attribute.Key("gen_ai.tool.name")
	AttrGenAIToolCallID     = attribute.Key("gen_ai.tool.call.id")
	AttrGenAIToolType       = attribute.Key("gen_ai.tool.type")
	// AttrGenAIToolArgs and AttrGenAIToolResult are set only with
	// [Config].RecordContent, after redaction.
	AttrGenAIToolArgs   = attribute.Key("gen_ai.tool.call.arguments")
	AttrGenAIToolResult = attribute.Key("gen_ai.tool.call.result")
	// AttrErrorType is the general error.type: on a tool span
	// "unknown_outcome", "tool_error" or "not_run"; on a run span the run
	// error's code.
	AttrErrorType = attribute.Key("error.type")
)

// Operation names (gen_ai.operation.name) and span name prefixes under
// [ConventionsGenAI].
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// Our own attributes, in both conventions: what no GenAI convention names.
const (
	// AttrHolder and AttrEpoch name the claim a drive ran under (the
	// process and its fencing token); tool spans carry the epoch too.
	AttrHolder = attribute.Key("actoviq.holder")
	AttrEpoch  = attribute.Key("actoviq.epoch")
	// AttrKeyDigest is the SHA-256 of the idempotency key, hex, first 16
	// bytes: the call's identity without the tenant or run id in clear.
	AttrKeyDigest = attribute.Key("actoviq.idempotency_key.digest")
	// AttrApprovalDecision is "approved" or "rejected", or "signed",
	// "expired" or "escalated" (the approvals policy's events), or another
	// decision an approval event names in its data's "decision".
	AttrApprovalDecision = attribute.Key("actoviq.approval.decision")
	// AttrVerdict is how a call of unknown outcome was reconciled:
	// "committed" or "failed" (a person's verdict), "probe_committed" (the
	// tool's probe found it committed) or "reexecute" (a new attempt with
	// the same key).
	AttrVerdict = attribute.Key("actoviq.reconciliation.verdict")
	// AttrProbeOutcome is what a probe answered (tool.probed): committed,
	// not_executed or unknown.
	AttrProbeOutcome = attribute.Key("actoviq.probe.outcome")
)

// Error types set on tool spans (error.type).
const (
	ErrTypeUnknownOutcome = "unknown_outcome"
	ErrTypeToolError      = "tool_error"
	ErrTypeNotRun         = "not_run"
)

// keyDigest is AttrKeyDigest's value.
func keyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// genaiRunAttrs: run.started / run.resumed under ConventionsGenAI.
func (d data) genaiRunAttrs(conversation string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrGenAIOperation.String(OpInvokeAgent)}
	if id := d.str("agent_id"); id != "" {
		attrs = append(attrs, AttrGenAIAgentID.String(id), AttrGenAIAgentName.String(id))
	}
	attrs = append(attrs, AttrGenAIConversationID.String(conversation))
	attrs = d.putStr(attrs, "model", AttrModel)
	return attrs
}

// driveAttrs: the claim of a drive, in both conventions.
func (d data) driveAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putStr(attrs, "holder", AttrHolder)
	attrs = d.putInt(attrs, "epoch", AttrEpoch)
	return attrs
}

// genaiResponseAttrs: model.response under ConventionsGenAI.
func (d data) genaiResponseAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	attrs = d.putStr(attrs, "response_id", AttrGenAIResponseID)
	if r := d.str("stop_reason"); r != "" {
		attrs = append(attrs, AttrGenAIFinishReasons.StringSlice([]string{r}))
	}
	return attrs
}

// ownToolAttrs are the attributes of ours every tool event may add, in
// both conventions.
func (d data) ownToolAttrs(evType string) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if k := d.str("idempotency_key"); k != "" {
		attrs = append(attrs, AttrKeyDigest.String(keyDigest(k)))
	}
	if dec := d.str("decision"); dec != "" {
		attrs = append(attrs, AttrApprovalDecision.String(dec))
	} else {
		switch {
		case evType == evToolApproved:
			attrs = append(attrs, AttrApprovalDecision.String("approved"))
		case evType == evToolRejected:
			attrs = append(attrs, AttrApprovalDecision.String("rejected"))
		case strings.HasPrefix(evType, "tool.approval_"):
			// tool.approval_signed, _expired, _escalated (approvals policy)
			attrs = append(attrs, AttrApprovalDecision.String(strings.TrimPrefix(evType, "tool.approval_")))
		}
	}
	switch evType {
	case evToolSettled:
		switch r := d.str("resolution"); r {
		case "probe":
			attrs = append(attrs, AttrVerdict.String("probe_committed"))
		case "":
		default:
			attrs = append(attrs, AttrVerdict.String(r))
		}
	case evToolReexecute:
		attrs = append(attrs, AttrVerdict.String("reexecute"))
	case evToolProbed:
		attrs = d.putStr(attrs, "outcome", AttrProbeOutcome)
	}
	return attrs
}

// toolErrorType is error.type for a tool event that ends a call badly, or
// "" when it did not.
func (d data) toolErrorType(evType string) string {
	switch evType {
	case evToolUnknown:
		return ErrTypeUnknownOutcome
	case evToolSkipped:
		return ErrTypeNotRun
	case evToolCommitted, evToolSettled:
		if v, _ := d.get("is_error"); v == true {
			return ErrTypeToolError
		}
	}
	return ""
}

// content returns the redacted JSON text of the event's key, or "".
func (s *Sink) redacted(d data, key string) string {
	v, ok := d.get(key)
	if !ok || v == nil {
		return ""
	}
	if str, ok := v.(string); ok {
		return s.redactor.Text(str)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	out, _, err := s.redactor.JSON(b)
	if err != nil {
		return ""
	}
	return string(out)
}
