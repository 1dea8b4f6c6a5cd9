package actoviq

import (
	"fmt"
	"strings"
	"time"
)

// A new version of an agent may take over a waiting run. What an unsettled
// call's safety depends on must not change silently: for each call of the
// pending turn that is not committed, its tool's name, effect and input
// schema, whether it needs approval, and the policy version a live
// approval is bound to. Everything else may change between drives:
// instructions, descriptions, model, provider, output schema, added tools,
// tools no unsettled call uses, the recovery policy, and limits as long as
// they only narrow.
//
// A change that makes an unsettled call more conservative is taken without
// asking: an effect that moves up (read → idempotent-write → side-effect),
// or a call that now needs approval. The ledger entry takes the new effect,
// so a started call follows the recovery rules of its new effect; an
// approval the call carried becomes void and the call asks again.
//
// Any other change to what an unsettled call depends on refuses the resume
// with an [*AgentChangeError] that lists each change, field by field.
// [ResumeOptions.AcceptAgentChange] takes such a change over explicitly: who,
// when, why and the diff are recorded (checkpoint and an agent.changed
// event), and every approval bound to a changed tool or policy becomes
// void, so those calls ask again.

// AgentChangeKind classifies one change between two versions of an agent.
type AgentChangeKind string

// Agent change kinds.
const (
	// ChangeFree may happen while runs wait (instructions, model...).
	ChangeFree AgentChangeKind = "free"
	// ChangeConservative makes an unsettled call more careful; it is taken
	// without an override.
	ChangeConservative AgentChangeKind = "conservative"
	// ChangeRefused touches what an unsettled call's safety depends on;
	// it needs [ResumeOptions.AcceptAgentChange].
	ChangeRefused AgentChangeKind = "refused"
)

// AgentChange is one field that differs between the agent that drove a
// run last and the one resuming it.
type AgentChange struct {
	// Tool is the tool the change is about; empty for agent-wide fields.
	Tool string `json:"tool,omitempty"`
	// Field names what changed: "effect", "input_schema", "removed",
	// "added", "approval", "approval_policy", "description", "instructions",
	// "model", "provider", "limits.max_turns", ...
	Field string `json:"field"`
	// From is the value the run was driven with (empty for an addition).
	From string `json:"from,omitempty"`
	// To is the new agent's value (empty for a removal).
	To string `json:"to,omitempty"`
	// Kind says whether the change is free, conservative or refused.
	Kind AgentChangeKind `json:"kind"`
	// Calls are the unsettled calls the change touches, as "CALL (STATE)".
	Calls []string `json:"calls,omitempty"`
}

func (c AgentChange) String() string {
	var b strings.Builder
	if c.Tool != "" {
		fmt.Fprintf(&b, "tool %s: ", c.Tool)
	}
	b.WriteString(c.Field)
	if c.From != "" || c.To != "" {
		fmt.Fprintf(&b, " %s → %s", orNone(c.From), orNone(c.To))
	}
	if len(c.Calls) > 0 {
		fmt.Fprintf(&b, " (unsettled call %s)", strings.Join(c.Calls, ", "))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// AcceptAgentChange is an operator's explicit decision to let a new agent
// version take over a run although it changes what unsettled calls depend
// on.
type AcceptAgentChange struct {
	// By names who decided; required.
	By string `json:"by"`
	// Note says why; recorded.
	Note string `json:"note,omitempty"`
}

// AgentChangeRecord is one change of agent version on a run, as recorded
// in its checkpoint (RunInfo.AgentChanges) and its agent.changed event.
type AgentChangeRecord struct {
	// From is the agent digest of the version that drove the run before.
	From string `json:"from"`
	// To is the digest of the version that took the run over.
	To string `json:"to"`
	// At is when it took over.
	At time.Time `json:"at"`
	// Changes are the differences between the two versions.
	Changes []AgentChange `json:"changes"`
	// By and Note are set when an operator accepted refused changes.
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
	// Voided lists the calls whose approval became void; they ask again.
	Voided []string `json:"voided,omitempty"`
	// Effects lists calls whose ledger effect was raised ("CALL: from → to").
	Effects []string `json:"effects,omitempty"`
}
