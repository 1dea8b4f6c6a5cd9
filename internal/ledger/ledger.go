package ledger

import (
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// State is the state of a ledger entry; the constants live in package store
// (store.LedgerPrepared and so on) because the store persists them.
type State = store.LedgerState

// Trigger is something that happens to a tool call and may move its entry.
type Trigger string

// The triggers. The comment on each gives the only transitions it allows.
const (
	// AskApproval: prepared → awaiting_approval (the policy says ask).
	AskApproval Trigger = "ask_approval"
	// Approve: awaiting_approval → prepared.
	Approve Trigger = "approve"
	// Sign: awaiting_approval → awaiting_approval. One approval of several
	// an approvals policy asks for was recorded; the call still waits for
	// the others.
	Sign Trigger = "sign"
	// Reject: awaiting_approval → committed, with an error result; the tool
	// never ran.
	Reject Trigger = "reject"
	// Skip: prepared → committed, with an error result and no execution
	// (unknown tool, invalid arguments, denied by policy).
	Skip Trigger = "skip"
	// Start: prepared → started. Written, and the write returned, before the
	// tool is invoked.
	Start Trigger = "start"
	// Commit: started → committed, with the tool's result or its own error
	// result.
	Commit Trigger = "commit"
	// Lose: started → unknown (crash, transport failure, timeout of running
	// work): the tool may have acted and nobody knows.
	Lose Trigger = "lose"
	// Settle: started or unknown → committed, by an operator decision
	// (committed or failed) or a probe that answered committed.
	Settle Trigger = "settle"
	// Withhold: prepared → unknown, only for an entry that started before
	// (Attempt ≥ 1: a re-run or re-execute was granted) and whose new
	// attempt cannot start in this process because its arguments are not
	// available here. The earlier attempt's outcome is still unknown, and
	// the entry goes back to waiting for a decision.
	Withhold Trigger = "withhold"
	// Reexecute: started or unknown → prepared, only by an explicit
	// re-execute decision or an explicit recovery policy. The next Start
	// increments the attempt; the idempotency key stays the same.
	Reexecute Trigger = "reexecute"
)

// String returns the trigger's wire form, e.g. "ask_approval".
func (e Trigger) String() string { return string(e) }

// ErrTransition matches (with errors.Is) every *TransitionError.
var ErrTransition = errors.New("ledger: illegal transition")

// TransitionError reports a trigger that is not allowed in a state. The
// entry must not be written; an engine that gets one has a bug or raced a
// decision, and should reload the entry.
type TransitionError struct {
	From    State
	Trigger Trigger
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("ledger: illegal transition: %q in state %q", string(e.Trigger), string(e.From))
}

// Is makes errors.Is(err, ErrTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrTransition }

type edge struct {
	from State
	ev   Trigger
}

// transitions is the whole machine. Anything not listed is illegal,
// including every trigger in committed and every trigger in a state that is
// not one of the five.
var transitions = map[edge]State{
	{store.LedgerPrepared, AskApproval}:     store.LedgerAwaitingApproval,
	{store.LedgerPrepared, Skip}:            store.LedgerCommitted,
	{store.LedgerPrepared, Start}:           store.LedgerStarted,
	{store.LedgerPrepared, Withhold}:        store.LedgerUnknown,
	{store.LedgerAwaitingApproval, Approve}: store.LedgerPrepared,
	{store.LedgerAwaitingApproval, Reject}:  store.LedgerCommitted,
	{store.LedgerAwaitingApproval, Sign}:    store.LedgerAwaitingApproval,
	{store.LedgerStarted, Commit}:           store.LedgerCommitted,
	{store.LedgerStarted, Lose}:             store.LedgerUnknown,
	{store.LedgerStarted, Settle}:           store.LedgerCommitted,
	{store.LedgerStarted, Reexecute}:        store.LedgerPrepared,
	{store.LedgerUnknown, Settle}:           store.LedgerCommitted,
	{store.LedgerUnknown, Reexecute}:        store.LedgerPrepared,
}

// Next returns the state an entry in state from moves to on ev, or a
// *TransitionError (matching [ErrTransition]) when the pair is not allowed.
// On error the returned state is from, unchanged.
func Next(from State, ev Trigger) (State, error) {
	if to, ok := transitions[edge{from, ev}]; ok {
		return to, nil
	}
	return from, &TransitionError{From: from, Trigger: ev}
}

// Terminal reports whether s is committed, the state no trigger leaves.
func Terminal(s State) bool { return s == store.LedgerCommitted }

// MayHaveRun reports whether the tool may have acted in state s (started or
// unknown): such an entry must not be run again without a recorded decision
// or an explicit recovery policy.
func MayHaveRun(s State) bool { return s == store.LedgerStarted || s == store.LedgerUnknown }
