package approvals

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Action is what a decision does to a call, as a policy sees it.
type Action string

// The actions a policy grants.
const (
	// Approve lets a call that awaits approval start.
	Approve Action = "approve"
	// Reject ends a call that awaits approval without running it.
	Reject Action = "reject"
	// Settle records what happened to a started call whose outcome is
	// unknown (committed or failed), runs it again (re-execute), or
	// answers a tool's question (answer).
	Settle Action = "settle"
)

// Call is the call a decision is about.
type Call struct {
	// RunID names the run whose ledger holds the call.
	RunID string `json:"run_id"`
	// AgentID is the run's agent id.
	AgentID string `json:"agent_id"`
	// CallID names the call in its run.
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect: read, idempotent-write or
	// side-effect.
	Effect string `json:"effect"`
}

// Request is one decision to check.
type Request struct {
	// Action is what the decision does.
	Action Action
	// By is the name the decision is recorded under: the console's
	// signed-in operator, the CLI's --by, a Go program's Decision.By.
	By string
	// Call is the call decided on.
	Call Call
	// Approvers are the distinct people who already approved the call's
	// pending attempt (when more than one approval is needed).
	Approvers []string
}

// Requirement is what a policy asks of a call's approval.
type Requirement struct {
	// Rule names the rule that governs the call ("" when none does).
	Rule string `json:"rule,omitempty"`
	// Approvers is how many distinct people must approve; at least 1.
	Approvers int `json:"approvers"`
	// TTL is how long an approval stays good for a call that has not
	// started; zero means it does not expire.
	TTL time.Duration `json:"ttl,omitempty"`
	// EscalateAfter is how long the call may wait for a decision before it
	// is escalated; zero means never.
	EscalateAfter time.Duration `json:"escalate_after,omitempty"`
	// EscalateTo names who an escalation is for (names and "group:NAME").
	EscalateTo []string `json:"escalate_to,omitempty"`
	// Approve lists who may approve (names, "group:NAME", "*"), for
	// display: who is still needed.
	Approve []string `json:"approve,omitempty"`
}

// Authorizer decides who may decide what. [*Policy] is the file-configured
// one; a team with its own rules implements it. Implementations must be
// safe for concurrent use.
type Authorizer interface {
	// Authorize returns nil when req.By may make the decision, and
	// otherwise an error (a [*RefusedError] says why in words a person
	// reads; any error refuses).
	Authorize(ctx context.Context, req *Request) error
	// Require says what an approval of the call needs.
	Require(ctx context.Context, call *Call) Requirement
	// Version names the policy; it is recorded with every decision.
	Version() string
}

// Directory is the hook for an identity provider: it returns the groups a
// name belongs to there. Those groups count as well as the policy file's.
type Directory interface {
	// Groups returns the groups of name; an error refuses the decision
	// (the provider could not be asked), with the error as the reason.
	Groups(ctx context.Context, name string) ([]string, error)
}

// DirectoryFunc adapts a function to [Directory].
type DirectoryFunc func(ctx context.Context, name string) ([]string, error)

// Groups calls f.
func (f DirectoryFunc) Groups(ctx context.Context, name string) ([]string, error) {
	return f(ctx, name)
}

// ErrRefused matches (with errors.Is) every [*RefusedError].
var ErrRefused = errors.New("approvals: decision refused by the approvals policy")

// RefusedError is a decision the policy does not allow, with why.
type RefusedError struct {
	// Action, By and Call are the request refused.
	Action Action
	// By is the name the decision would have been recorded under.
	By string
	// Call is the call it was about.
	Call Call
	// Version is the policy's version.
	Version string
	// Rule names the rule that governs the call; empty when none does.
	Rule string
	// Reason says why, for a person.
	Reason string
}

func (e *RefusedError) Error() string {
	what := e.Call.Tool
	if e.Call.Effect != "" {
		what += " (" + e.Call.Effect + ")"
	}
	rule := "no rule"
	if e.Rule != "" {
		rule = fmt.Sprintf("rule %q", e.Rule)
	}
	return fmt.Sprintf("%s may not %s call %s of %s: %s (approvals policy %s, %s)", e.By, e.Action, e.Call.CallID, what, e.Reason, e.Version, rule)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Rule is one rule of a [Policy]: which calls it governs and who may decide
// them.
type Rule struct {
	// Name names the rule in refusals and records; empty means "rule N"
	// (its position, from 1).
	Name string `json:"name,omitempty"`
	// Tools, Effects and Agents select the calls the rule governs; an
	// empty list matches any. A trailing * matches a prefix.
	Tools []string `json:"tools,omitempty"`
	// Effects selects by the tool's effect.
	Effects []string `json:"effects,omitempty"`
	// Agents selects by the run's agent id.
	Agents []string `json:"agents,omitempty"`
	// Approve, Reject and Settle list who may take each decision: a name,
	// "group:NAME" or "*" (anyone with a name). Empty means nobody.
	Approve []string `json:"approve,omitempty"`
	// Reject lists who may reject.
	Reject []string `json:"reject,omitempty"`
	// Settle lists who may settle a call of unknown outcome (committed,
	// failed, re-execute).
	Settle []string `json:"settle,omitempty"`
	// Approvers is how many distinct people must approve; 0 means 1.
	Approvers int `json:"approvers,omitempty"`
	// ApprovalTTL is how long an approval stays good before the call
	// starts ("24h"); empty means it does not expire.
	ApprovalTTL Duration `json:"approval_ttl,omitzero"`
	// EscalateAfter is how long a call may wait for its approval before it
	// is escalated ("30m"); empty means never.
	EscalateAfter Duration `json:"escalate_after,omitzero"`
	// EscalateTo names who an escalation is for.
	EscalateTo []string `json:"escalate_to,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("90m",
// "24h") in a policy file.
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"30m\" or \"24h\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30m\" or \"24h\": %v", err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Policy is a file-configured [Authorizer]. Build it with [Load] or
// [Parse], or as a literal; it is read-only once in use.
type Policy struct {
	// PolicyVersion names the policy (see [Policy.Version]).
	PolicyVersion string `json:"version,omitempty"`
	// Groups maps a group name to its members' names.
	Groups map[string][]string `json:"groups,omitempty"`
	// Rules are tried in order; the first that matches a call governs it.
	Rules []Rule `json:"rules"`
	// Directory, when set, adds the groups an identity provider knows
	// for a name. Not part of the file.
	Directory Directory `json:"-"`
}

// Load reads a policy file (see the package documentation for its format).
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("approvals: policy file: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("approvals: policy file %s: %w", path, err)
	}
	return p, nil
}

// Parse reads a policy from its JSON. Unknown fields are refused, so that
// a misspelt "approvers" does not silently mean one approver.
func Parse(data []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("approvals: policy: %w", jsonErr(data, err))
	}
	if dec.More() {
		return nil, errors.New("approvals: policy: more than one JSON value")
	}
	if p.PolicyVersion == "" {
		sum := sha256.Sum256(data)
		p.PolicyVersion = "sha256:" + hex.EncodeToString(sum[:8])
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// jsonErr adds the line of a syntax or type error.
func jsonErr(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// Validate reports the first thing wrong with the policy, naming the rule
// and field.
func (p *Policy) Validate() error {
	if p.PolicyVersion == "" {
		return errors.New("approvals: policy: version is empty")
	}
	if len(p.Rules) == 0 {
		return errors.New("approvals: policy: no rules: nobody could decide anything")
	}
	for g, members := range p.Groups {
		if g == "" || strings.ContainsAny(g, " \t\n") {
			return fmt.Errorf("approvals: policy: group name %q: want a word", g)
		}
		for _, m := range members {
			if strings.TrimSpace(m) == "" || strings.HasPrefix(m, "group:") || m == "*" {
				return fmt.Errorf("approvals: policy: group %q: member %q: want a person's name", g, m)
			}
		}
	}
	names := map[string]bool{}
	for i := range p.Rules {
		r := &p.Rules[i]
		where := fmt.Sprintf("rule %d", i+1)
		if r.Name != "" {
			where = fmt.Sprintf("rule %d (%q)", i+1, r.Name)
			if names[r.Name] {
				return fmt.Errorf("approvals: policy: %s: another rule has that name", where)
			}
			names[r.Name] = true
		}
		if r.Approvers < 0 || r.Approvers > 10 {
			return fmt.Errorf("approvals: policy: %s: approvers %d: want 1 to 10", where, r.Approvers)
		}
		for _, e := range r.Effects {
			switch e {
			case "read", "idempotent-write", "side-effect":
			default:
				return fmt.Errorf("approvals: policy: %s: effect %q: want read, idempotent-write or side-effect", where, e)
			}
		}
		for field, list := range map[string][]string{"approve": r.Approve, "reject": r.Reject, "settle": r.Settle, "escalate_to": r.EscalateTo} {
			for _, who := range list {
				if g, ok := strings.CutPrefix(who, "group:"); ok {
					if _, known := p.Groups[g]; !known && p.Directory == nil {
						return fmt.Errorf("approvals: policy: %s: %s names group %q, which the policy does not define", where, field, g)
					}
					continue
				}
				if strings.TrimSpace(who) == "" {
					return fmt.Errorf("approvals: policy: %s: %s has an empty name", where, field)
				}
			}
		}
		need := max(r.Approvers, 1)
		if need > 1 && !slices.Contains(r.Approve, "*") && countPeople(p, r.Approve) < need && p.Directory == nil {
			return fmt.Errorf("approvals: policy: %s: needs %d distinct approvers, but approve names only %d people", where, need, countPeople(p, r.Approve))
		}
	}
	return nil
}

func countPeople(p *Policy, list []string) int {
	seen := map[string]bool{}
	for _, who := range list {
		if g, ok := strings.CutPrefix(who, "group:"); ok {
			for _, m := range p.Groups[g] {
				seen[m] = true
			}
			continue
		}
		seen[who] = true
	}
	return len(seen)
}

// Version names the policy: the file's "version", or a digest of the file.
func (p *Policy) Version() string { return p.PolicyVersion }

// rule returns the rule that governs the call and its name, or nil.
func (p *Policy) rule(c *Call) (*Rule, string) {
	for i := range p.Rules {
		r := &p.Rules[i]
		if matches(r.Tools, c.Tool) && matches(r.Effects, c.Effect) && matches(r.Agents, c.AgentID) {
			name := r.Name
			if name == "" {
				name = fmt.Sprintf("rule %d", i+1)
			}
			return r, name
		}
	}
	return nil, ""
}

func matches(patterns []string, s string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if p == s || p == "*" || strings.HasSuffix(p, "*") && strings.HasPrefix(s, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// Require implements [Authorizer].
func (p *Policy) Require(_ context.Context, c *Call) Requirement {
	r, name := p.rule(c)
	if r == nil {
		return Requirement{Approvers: 1}
	}
	return Requirement{Rule: name, Approvers: max(r.Approvers, 1), TTL: time.Duration(r.ApprovalTTL),
		EscalateAfter: time.Duration(r.EscalateAfter), EscalateTo: slices.Clone(r.EscalateTo), Approve: slices.Clone(r.Approve)}
}

// Authorize implements [Authorizer].
func (p *Policy) Authorize(ctx context.Context, req *Request) error {
	refuse := func(rule, format string, args ...any) error {
		return &RefusedError{Action: req.Action, By: req.By, Call: req.Call, Version: p.PolicyVersion, Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(req.By) == "" {
		return refuse("", "the decision names nobody")
	}
	r, name := p.rule(&req.Call)
	if r == nil {
		return refuse("", "no rule of the policy covers tool %s, effect %s, agent %s, so nobody may decide it; add a rule for it",
			req.Call.Tool, req.Call.Effect, req.Call.AgentID)
	}
	var allowed []string
	switch req.Action {
	case Approve:
		allowed = r.Approve
	case Reject:
		allowed = r.Reject
	case Settle:
		allowed = r.Settle
	default:
		return refuse(name, "unknown action %q", req.Action)
	}
	if len(allowed) == 0 {
		return refuse(name, "the rule lets nobody %s these calls", req.Action)
	}
	ok, err := p.member(ctx, req.By, allowed)
	if err != nil {
		return refuse(name, "the identity provider could not be asked about %s: %v", req.By, err)
	}
	if !ok {
		return refuse(name, "the rule lets %s %s; %s is not one of them", strings.Join(allowed, ", "), req.Action, req.By)
	}
	if req.Action == Approve && slices.ContainsFunc(req.Approvers, func(a string) bool { return SamePerson(a, req.By) }) {
		return refuse(name, "%s already approved this call, and the rule needs %d distinct approvers", req.By, max(r.Approvers, 1))
	}
	return nil
}

// SamePerson reports whether two decision names name the same person:
// equal once surrounding spaces are dropped and case is folded ("alice",
// "Alice" and " alice " are one person). The approvers of a rule that
// needs several must be distinct by this measure.
func SamePerson(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// member reports whether name is one of who (names, groups, "*").
func (p *Policy) member(ctx context.Context, name string, who []string) (bool, error) {
	var groups []string
	asked := false
	for _, w := range who {
		if w == "*" || w == name {
			return true, nil
		}
		g, ok := strings.CutPrefix(w, "group:")
		if !ok {
			continue
		}
		if slices.Contains(p.Groups[g], name) {
			return true, nil
		}
		if p.Directory != nil && !asked {
			var err error
			if groups, err = p.Directory.Groups(ctx, name); err != nil {
				return false, err
			}
			asked = true
		}
		if slices.Contains(groups, g) {
			return true, nil
		}
	}
	return false, nil
}
