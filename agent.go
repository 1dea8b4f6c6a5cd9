package actoviq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/tool"
)

// AgentSpec defines an agent. A run records the version that drove it; a
// new version may resume it unless it changes what an unsettled call
// depends on (see [AgentChangeError] and [ResumeOptions.AcceptAgentChange]).
type AgentSpec struct {
	// ID names the agent; required.
	ID string
	// Instructions are the system instructions.
	Instructions string
	// Provider is the model provider to call; required.
	Provider llm.Provider
	// Model is the model's name at that provider; required.
	Model string
	// Tools the model may call.
	Tools []tool.Tool
	// OutputSchema, when set, asks for structured output.
	OutputSchema json.RawMessage
	// Limits bound the run; zero fields take their defaults.
	Limits Limits
	// Approval says which calls wait for a person before they start; the
	// zero value asks for none.
	Approval ApprovalPolicy
	// Recovery says which started reads and idempotent writes may run
	// again after a crash; the zero value re-runs nothing. Side effects
	// never are.
	Recovery RecoveryPolicy
	// SessionWindow bounds how much of a session a new run of the agent
	// takes into its transcript, hence sends to the model: the session's
	// last SessionWindow items. When the session is longer, the window
	// starts at the first user message among them (so the model sees
	// whole turns, and no tool result without its call). The store reads
	// only those items, so a run continuing a session of any length costs
	// about what it would with a short one.
	//
	// 0 takes the runtime's default ([Config.SessionWindow], itself
	// [DefaultSessionWindow] = 1,000 items unless set): a run's cost is
	// bounded by default, since a provider's context is finite anyway.
	// [WholeSession] takes the whole session, at a cost that grows with
	// it: the choice when the model must see everything. Other negative
	// values are refused.
	//
	// A run records the window it took with the session revision it
	// started from, and says how many earlier items it left out
	// ([RunInfo.SessionOmitted], `runs show`, the console's run page); a
	// later drive, Runtime.Get and the console read the same items back,
	// whatever the agent says then. The window is not part of
	// [AgentSpec.Digest]. The session itself always keeps every item.
	SessionWindow int
}

// DefaultSessionWindow is the session window of a run whose agent and
// runtime set none ([AgentSpec.SessionWindow] and [Config.SessionWindow]
// 0): a run continuing a session takes its last 1,000 items, from a user
// message among them. 1,000 items is far more than most conversations
// hold, and a bound on what a run of a long one reads, holds and sends.
const DefaultSessionWindow = 1000

// WholeSession, as [AgentSpec.SessionWindow] or [Config.SessionWindow],
// asks for the whole session: the model sees every item of it, and a run
// reads and holds all of it (the cost grows with the session).
const WholeSession = -1

// Limits bound a run. Zero values mean the documented defaults.
type Limits struct {
	// MaxTurns bounds model turns; 0 means 16.
	MaxTurns int
	// RunTimeout is the run's deadline, from its start; 0 means none.
	RunTimeout time.Duration
	// ModelTimeout bounds one model call, retries included; 0 means 10 minutes.
	ModelTimeout time.Duration
	// ToolTimeout bounds a tool call whose spec sets none; 0 means 5 minutes.
	ToolTimeout time.Duration
	// ReadParallelism bounds read calls run at once; 0 means 4, 1 means serial.
	ReadParallelism int
	// MaxProviderInterruptions bounds provider interruptions in a row (a
	// model call that failed after the transport's retries, see
	// [InterruptProvider]); the next failure ends the run failed, so that
	// an unattended worker does not hammer a dead server. A committed
	// model response resets the count. 0 means 5.
	MaxProviderInterruptions int
	// MaxToolOutput bounds one tool result (content plus structured data)
	// in bytes; 0 means [DefaultMaxToolOutput] (1 MiB). A larger result is
	// truncated with a note the model sees, and its full size is recorded
	// in the ledger entry's Error under "output".
	MaxToolOutput int
	// MaxMalformedCalls bounds the tool calls per run whose arguments are
	// not a JSON object, or not UTF-8; 0 means 3. Each one is recorded, never executed,
	// and answered with an error result so the model can correct itself;
	// one more ends the run failed with code model_behavior.
	MaxMalformedCalls int
}

func (l Limits) withDefaults() Limits {
	if l.MaxTurns <= 0 {
		l.MaxTurns = 16
	}
	if l.ModelTimeout <= 0 {
		l.ModelTimeout = 10 * time.Minute
	}
	if l.ToolTimeout <= 0 {
		l.ToolTimeout = tool.DefaultTimeout
	}
	if l.ReadParallelism <= 0 {
		l.ReadParallelism = 4
	}
	if l.MaxProviderInterruptions <= 0 {
		l.MaxProviderInterruptions = 5
	}
	if l.MaxToolOutput <= 0 {
		l.MaxToolOutput = DefaultMaxToolOutput
	}
	if l.MaxMalformedCalls <= 0 {
		l.MaxMalformedCalls = 3
	}
	return l
}

// ApprovalPolicy says which calls need a person's approval before they
// start. A tool whose spec sets RequireApproval always needs it.
type ApprovalPolicy struct {
	// Effects lists effects whose calls all need approval.
	Effects []tool.Effect
	// Policy, when set, is asked after the rules above and may deny or ask.
	Policy tool.Policy
	// Version names the policy; approvals bind to it, so changing it (or
	// Effects) makes earlier approvals void. Required when Policy is set.
	Version string
}

// version is what approvals bind to.
func (p ApprovalPolicy) version() string {
	effects := make([]string, 0, len(p.Effects))
	for _, e := range p.Effects {
		effects = append(effects, e.String())
	}
	slices.Sort(effects)
	h := sha256.New()
	fmt.Fprintf(h, "%q|%q", effects, p.Version)
	return "pv-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Decide implements [tool.Policy].
func (p ApprovalPolicy) Decide(ctx context.Context, spec tool.Spec, args json.RawMessage) tool.Verdict {
	if spec.RequireApproval || slices.Contains(p.Effects, spec.Effect) {
		if p.Policy != nil {
			if v := p.Policy.Decide(ctx, spec, args); v.Permission == tool.Deny {
				return v
			}
		}
		return tool.Verdict{Permission: tool.Ask, Reason: fmt.Sprintf("%s calls need approval", spec.Effect)}
	}
	if p.Policy != nil {
		return p.Policy.Decide(ctx, spec, args)
	}
	return tool.Verdict{Permission: tool.Allow}
}

// RecoveryPolicy is the explicit permission to run again, after a crash, a
// call that was started and whose outcome is unknown. Side effects are
// never in it: a started side effect always waits for a person or a probe.
// The zero value re-runs nothing.
type RecoveryPolicy struct {
	// RerunReads lets a started read run again (any attempt). False means
	// such a call stops the run with a recovery interruption.
	RerunReads bool
	// RerunIdempotentWrites lets a started idempotent write run again,
	// under its persisted idempotency key with the attempt bumped. False
	// means such a call stops the run with a recovery interruption.
	RerunIdempotentWrites bool
}

// Validate checks the spec.
func (a *AgentSpec) Validate() error {
	switch {
	case a == nil:
		return fmt.Errorf("actoviq: nil agent")
	case a.ID == "":
		return fmt.Errorf("actoviq: agent: missing ID")
	case a.Provider == nil:
		return fmt.Errorf("actoviq: agent %s: missing Provider", a.ID)
	case a.Model == "":
		return fmt.Errorf("actoviq: agent %s: missing Model", a.ID)
	case a.Approval.Policy != nil && a.Approval.Version == "":
		return fmt.Errorf("actoviq: agent %s: Approval.Policy needs a Version, so approvals can bind to it", a.ID)
	case a.OutputSchema != nil && !json.Valid(a.OutputSchema):
		return fmt.Errorf("actoviq: agent %s: OutputSchema is not JSON", a.ID)
	case a.SessionWindow < 0 && a.SessionWindow != WholeSession:
		return fmt.Errorf("actoviq: agent %s: SessionWindow is %d: want a number of items, 0 for the runtime's default (%d unless Config.SessionWindow says), or WholeSession (-1)",
			a.ID, a.SessionWindow, DefaultSessionWindow)
	}
	return a.Limits.validate(a.ID)
}

// Digest is a stable hash of everything that defines the agent's behaviour:
// identity, instructions, model, each tool's spec, output schema, limits
// and policies. A provider's credentials and endpoint are not part of it.
func (a *AgentSpec) Digest() string {
	type toolDigest struct {
		Name, Description string
		Input, Output     string
		Effect            string
		Approval          bool
		Timeout           time.Duration
	}
	d := struct {
		ID, Instructions, Provider, Model string
		Tools                             []toolDigest
		Output                            string
		Limits                            Limits
		Approval                          string
		Recovery                          RecoveryPolicy
	}{ID: a.ID, Instructions: a.Instructions, Model: a.Model, Output: compact(a.OutputSchema),
		Limits: a.Limits.withDefaults(), Approval: a.Approval.version(), Recovery: a.Recovery}
	if a.Provider != nil {
		d.Provider = a.Provider.Name()
	}
	for _, t := range a.Tools {
		s := t.Spec()
		d.Tools = append(d.Tools, toolDigest{s.Name, s.Description, compact(s.InputSchema), compact(s.OutputSchema),
			s.Effect.String(), s.RequireApproval, s.Timeout})
	}
	slices.SortFunc(d.Tools, func(x, y toolDigest) int { return strings.Compare(x.Name, y.Name) })
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func compact(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// argsDigest hashes a call's unredacted arguments in compact form.
func argsDigest(args json.RawMessage) string {
	var sum [sha256.Size]byte
	if isCompact(args) {
		sum = sha256.Sum256(args)
	} else {
		sum = sha256.Sum256([]byte(compact(args)))
	}
	var b [len("sha256:") + 2*sha256.Size]byte
	copy(b[:], "sha256:")
	hex.Encode(b[len("sha256:"):], sum[:])
	return string(b[:])
}

// isCompact reports whether JSON b has no space outside its strings, so
// that compact(b) is b.
func isCompact(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// DefaultMaxToolOutput is the default bound on one tool result
// (Limits.MaxToolOutput): 1 MiB of content plus structured data.
const DefaultMaxToolOutput = 1 << 20
