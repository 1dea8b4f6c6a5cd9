package actoviq

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// Child runs (docs/design.md#children-and-workers). An agent offered to another agent as a tool
// ([AgentTool]) runs as a run of its own: its id is derived from the
// parent's run id and the call id ("<parent>.<call>"), so every attempt
// and every resume of the parent's call finds the same child, with its own
// checkpoint, ledger and keys ("<child>:<call>"). The parent's ledger entry
// for the call is an ordinary entry; what is special is recovery: the
// child keeps its own ledger, so re-entering it is safe, and a started
// agent-tool call is re-entered (the child resumes from its checkpoint)
// instead of being reconciled. Nothing the child started runs twice: the
// child's own recovery rules apply to its own calls.
//
// What a child's end does to its parent:
//   - completed: its output is the call's result;
//   - interrupted (approval, reconciliation, recovery, provider): the
//     parent stops interrupted, showing the child's interruptions with the
//     child's run id; an operator decides on either run, and resuming the
//     parent resumes the child first;
//   - failed or cancelled (never a success): by the tool's [ChildFailure]
//     policy, the parent fails (fail-fast, and retry-safe once its attempts
//     are spent) or the model gets an error result (collect).

// ChildFailure says what a child run's failure does to its parent.
type ChildFailure string

// Child failure policies.
const (
	// FailFast ends the parent failed when the child fails or is cancelled.
	FailFast ChildFailure = "fail-fast"
	// Collect gives the model an error result naming the child's failure;
	// the parent goes on.
	Collect ChildFailure = "collect"
	// RetrySafe resumes the child from its own checkpoint (same run id,
	// same call ids, same keys) when its drive fails or it stops for a
	// provider outage or a started read or idempotent write, up to
	// MaxAttempts, then fails like FailFast. It is accepted only for a
	// child whose every tool is read or idempotent-write.
	RetrySafe ChildFailure = "retry-safe"
)

// Budget bounds a tree of runs: the root and every child below it. Zero
// fields mean no bound (MaxDepth: 8). A child's budget is the narrowest
// of the one it inherits and the one its tool sets; usage is counted over
// the whole tree, failed attempts included (a retry resumes the same
// checkpoint, whose usage only grows).
type Budget struct {
	// MaxTurns bounds model turns across the tree.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxTokens bounds input plus output tokens across the tree.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxDepth bounds how deep children nest (a root's child is depth 1);
	// 0 means 8.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxChildren bounds the child runs in the tree.
	MaxChildren int `json:"max_children,omitempty"`
}

func narrowInt(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

func (b Budget) narrow(o Budget) Budget {
	t := int64(narrowInt(int(b.MaxTokens), int(o.MaxTokens)))
	return Budget{MaxTurns: narrowInt(b.MaxTurns, o.MaxTurns), MaxTokens: t,
		MaxDepth: narrowInt(b.MaxDepth, o.MaxDepth), MaxChildren: narrowInt(b.MaxChildren, o.MaxChildren)}
}

// AgentToolOptions configures [AgentTool]. A nil *AgentToolOptions means
// defaults.
type AgentToolOptions struct {
	// Name is the tool's name; empty means the child's ID (characters a
	// tool name cannot have become '_').
	Name string
	// Description is what the model reads; empty means "Ask agent <ID>".
	Description string
	// Effect, when set, declares the tool's effect. It may only be more
	// conservative than the strongest effect among the child's tools
	// (which is the default); a weaker one is refused.
	Effect *tool.Effect
	// Failure is the failure policy; empty means FailFast.
	Failure ChildFailure
	// MaxAttempts bounds the attempts of a RetrySafe child; 0 means 3.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubling after each;
	// 0 means 1 s.
	Backoff time.Duration
	// Budget narrows the tree budget the child inherits.
	Budget Budget
	// Timeout bounds one call of the tool (the child's drive); 0 means
	// 24 h. The child's own limits and the parent's deadline still apply.
	Timeout time.Duration
}

// AgentTool offers child to other agents as a tool that takes
// {"input": "..."} and runs child as a child run. Its effect is the
// strongest among child's tools ([tool.Read] for a child without tools). It
// refuses RetrySafe for a child that can reach a side effect with a
// [*RetryUnsafeError], and a declared effect weaker than the child's.
func AgentTool(child *AgentSpec, opts *AgentToolOptions) (tool.Tool, error) {
	if err := child.Validate(); err != nil {
		return nil, err
	}
	var o AgentToolOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = toolNameBad.ReplaceAllString(child.ID, "_")
	}
	if o.Description == "" {
		o.Description = "Ask agent " + child.ID + " to do a task; it answers with its final output."
	}
	switch o.Failure {
	case "":
		o.Failure = FailFast
	case FailFast, Collect, RetrySafe:
	default:
		return nil, fmt.Errorf("actoviq: AgentTool %s: unknown failure policy %q (want fail-fast, collect or retry-safe)", o.Name, o.Failure)
	}
	if o.MaxAttempts < 0 || o.Backoff < 0 || o.Timeout < 0 {
		return nil, fmt.Errorf("actoviq: AgentTool %s: MaxAttempts, Backoff and Timeout must not be negative", o.Name)
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 24 * time.Hour
	}
	effect := childEffect(child)
	if o.Failure == RetrySafe {
		if err := retrySafe(child); err != nil {
			return nil, err
		}
	}
	if o.Effect != nil {
		if !o.Effect.Valid() {
			return nil, fmt.Errorf("actoviq: AgentTool %s: invalid effect %d", o.Name, int(*o.Effect))
		}
		if strength(*o.Effect) < strength(effect) {
			return nil, fmt.Errorf("actoviq: AgentTool %s: declared effect %s is weaker than the child's %s (a declared effect may only be more conservative)",
				o.Name, *o.Effect, effect)
		}
		effect = *o.Effect
	}
	t := &agentTool{child: child, o: o, spec: tool.Spec{Name: o.Name, Description: o.Description, Effect: effect, Timeout: o.Timeout,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the task for the agent"}},"required":["input"],"additionalProperties":false}`)}}
	if err := t.spec.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// ChildRunID is the run id of the child that call callID of run parentID
// starts through an agent tool or a spawn tool: "<parent>.<call>", where
// the call id keeps its letters, digits, '_' and '-' and every other byte
// is written "~XX" (hex). Distinct calls get distinct children ("x y" is
// "x~20y", "x_y" stays "x_y"), and a '.' in a call id ("~2E") cannot make
// one parent's child id another's. The call ids providers issue
// ("call_…", "toolu_…") are kept as they are.
func ChildRunID(parentID, callID string) string {
	var b strings.Builder
	b.Grow(len(parentID) + 1 + len(callID))
	b.WriteString(parentID)
	b.WriteByte('.')
	for i := 0; i < len(callID); i++ {
		c := callID[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "~%02X", c)
		}
	}
	return b.String()
}

// ParentClosePolicy says what a parent's ending cancelled does to a
// background child that has not ended. It applies however the parent came
// to end cancelled ([Runtime.Cancel] from any process, the context of Run
// or Resume, its deadline), also to a child spawned while the parent was
// being cancelled. A parent that completes or fails leaves its background
// children as they are. Foreground children (agent tools) always end with
// their parent's call: a cancelled parent cancels them.
type ParentClosePolicy string

// Parent-close policies.
const (
	// ParentCloseCancel cancels the child with its parent (the default).
	ParentCloseCancel ParentClosePolicy = "cancel"
	// ParentCloseAbandon lets the child run on to its own end.
	ParentCloseAbandon ParentClosePolicy = "abandon"
)
