package ledger

import (
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// Effect is a tool's declared effect in its persisted text form, as in
// store.LedgerEntry.Effect and tool.Effect.String(). Matching is exact;
// any other string, including "" and a differently cased name, is treated
// as [EffectSideEffect], the most dangerous kind.
type Effect = string

// The effects [Recover] distinguishes.
const (
	EffectRead            Effect = "read"
	EffectIdempotentWrite Effect = "idempotent-write"
	EffectSideEffect      Effect = "side-effect"
)

// RecoveryPolicy is the runtime's explicit permission to re-run calls whose
// outcome is unknown. The zero value permits nothing: every started or
// unknown entry interrupts the run. No field can permit re-running a
// side-effect tool; that takes a recorded re-execute decision.
type RecoveryPolicy struct {
	// RerunReads lets a started/unknown read call run again (any attempt).
	// Default false: such a call interrupts with kind recovery.
	RerunReads bool
	// RerunIdempotentWrites lets a started/unknown idempotent-write call run
	// again, and only when it has a persisted idempotency key. Default false:
	// such a call interrupts with kind recovery.
	RerunIdempotentWrites bool
}

// Action is what a resuming run does with one ledger entry.
type Action int

// The actions of the recovery table (docs/design.md#recovery).
const (
	// ActionNone: the entry is committed. Append its result to the
	// transcript if it is missing; never call the tool.
	ActionNone Action = iota
	// ActionRun: the entry is prepared, nothing was started; run it normally
	// (policy, approval, then Start).
	ActionRun
	// ActionAwaitApproval: the entry waits for approval; the run stays
	// interrupted until a decision.
	ActionAwaitApproval
	// ActionReconcile: a side-effect call may have acted. Interrupt with
	// kind reconciliation, running the tool's probe first if it has one.
	ActionReconcile
	// ActionRecover: a read or idempotent-write call may have acted and the
	// policy does not permit a re-run. Interrupt with kind recovery.
	ActionRecover
	// ActionRerun: the policy permits re-running this read or keyed
	// idempotent-write call. Apply [Reexecute], then [Start] (a new attempt)
	// with the same idempotency key.
	ActionRerun
)

// String returns a short lowercase name such as "reconcile".
func (a Action) String() string {
	switch a {
	case ActionNone:
		return "none"
	case ActionRun:
		return "run"
	case ActionAwaitApproval:
		return "await_approval"
	case ActionReconcile:
		return "reconcile"
	case ActionRecover:
		return "recover"
	case ActionRerun:
		return "rerun"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Recover is the recovery table of docs/design.md#recovery: what to do with an entry in state
// s of a tool with the given effect and persisted idempotency key, under
// policy p.
//
// A side-effect call (or one whose effect is not recognised) in started or
// unknown always gets [ActionReconcile], whatever the policy. A state that
// is not one of the five also gets ActionReconcile: the entry may describe
// a call that ran, so the only safe answer is to stop and show it to a
// person.
func Recover(s State, effect Effect, key string, p RecoveryPolicy) Action {
	switch s {
	case store.LedgerCommitted:
		return ActionNone
	case store.LedgerPrepared:
		return ActionRun
	case store.LedgerAwaitingApproval:
		return ActionAwaitApproval
	case store.LedgerStarted, store.LedgerUnknown:
		switch effect {
		case EffectRead:
			if p.RerunReads {
				return ActionRerun
			}
			return ActionRecover
		case EffectIdempotentWrite:
			// Without its persisted key the re-run is just a second write.
			if p.RerunIdempotentWrites && key != "" {
				return ActionRerun
			}
			return ActionRecover
		}
		return ActionReconcile
	}
	return ActionReconcile
}
