package ledger_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
)

var (
	allStates = []ledger.State{
		store.LedgerPrepared,
		store.LedgerAwaitingApproval,
		store.LedgerStarted,
		store.LedgerUnknown,
		store.LedgerCommitted,
	}
	allEvents = []ledger.Trigger{
		ledger.AskApproval, ledger.Approve, ledger.Sign, ledger.Reject, ledger.Skip,
		ledger.Start, ledger.Commit, ledger.Lose, ledger.Settle, ledger.Reexecute, ledger.Withhold,
	}
)

// allowed is written out independently of the package's own table, from the
// drawing in docs/design.md#the-ledger and the API brief, so that a change to either shows up.
var allowed = map[string]ledger.State{
	"prepared/ask_approval":     store.LedgerAwaitingApproval,
	"prepared/skip":             store.LedgerCommitted,
	"prepared/start":            store.LedgerStarted,
	"prepared/withhold":         store.LedgerUnknown,
	"awaiting_approval/approve": store.LedgerPrepared,
	"awaiting_approval/reject":  store.LedgerCommitted,
	"awaiting_approval/sign":    store.LedgerAwaitingApproval,
	"started/commit":            store.LedgerCommitted,
	"started/lose":              store.LedgerUnknown,
	"started/settle":            store.LedgerCommitted,
	"started/reexecute":         store.LedgerPrepared,
	"unknown/settle":            store.LedgerCommitted,
	"unknown/reexecute":         store.LedgerPrepared,
}

func TestNextExhaustive(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, from := range allStates {
		for _, ev := range allEvents {
			name := string(from) + "/" + string(ev)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := ledger.Next(from, ev)
				want, ok := allowed[name]
				if ok {
					if err != nil {
						t.Fatalf("Next(%s, %s) = error %v, want %s", from, ev, err, want)
					}
					if got != want {
						t.Fatalf("Next(%s, %s) = %s, want %s", from, ev, got, want)
					}
					return
				}
				if err == nil {
					t.Fatalf("Next(%s, %s) = %s, want an error", from, ev, got)
				}
				if got != from {
					t.Errorf("on error Next returned %s, want the unchanged state %s", got, from)
				}
				if !errors.Is(err, ledger.ErrTransition) {
					t.Errorf("error %v does not match ErrTransition", err)
				}
				var te *ledger.TransitionError
				if !errors.As(err, &te) || te.From != from || te.Trigger != ev {
					t.Errorf("error %#v does not carry From=%s Trigger=%s", err, from, ev)
				}
			})
			if _, ok := allowed[name]; ok {
				seen++
			}
		}
	}
	if seen != len(allowed) {
		t.Fatalf("table lists %d transitions but only %d (state, event) pairs matched: a name is misspelt", len(allowed), seen)
	}
}

func TestNextUnknownStateAndEvent(t *testing.T) {
	t.Parallel()
	for _, from := range append([]ledger.State{"", "Prepared", "done"}, allStates...) {
		for _, ev := range []ledger.Trigger{"", "START", "retry", "re-execute"} {
			if got, err := ledger.Next(from, ev); !errors.Is(err, ledger.ErrTransition) || got != from {
				t.Errorf("Next(%q, %q) = %q, %v; want %q and ErrTransition", from, ev, got, err, from)
			}
		}
	}
	for _, ev := range allEvents {
		if _, err := ledger.Next("bogus", ev); !errors.Is(err, ledger.ErrTransition) {
			t.Errorf("Next(bogus, %s) succeeded", ev)
		}
	}
}

func TestCommittedIsFinal(t *testing.T) {
	t.Parallel()
	for _, ev := range allEvents {
		if got, err := ledger.Next(store.LedgerCommitted, ev); err == nil {
			t.Errorf("committed --%s--> %s succeeded", ev, got)
		}
	}
}

func TestPredicates(t *testing.T) {
	t.Parallel()
	for _, s := range append([]ledger.State{"", "bogus"}, allStates...) {
		if got, want := ledger.Terminal(s), s == store.LedgerCommitted; got != want {
			t.Errorf("Terminal(%q) = %v", s, got)
		}
		if got, want := ledger.MayHaveRun(s), s == store.LedgerStarted || s == store.LedgerUnknown; got != want {
			t.Errorf("MayHaveRun(%q) = %v", s, got)
		}
	}
}

func TestTransitionErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := ledger.Next(store.LedgerCommitted, ledger.Start)
	if got, want := err.Error(), `ledger: illegal transition: "start" in state "committed"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("call c1: %w", err)
	if !errors.Is(wrapped, ledger.ErrTransition) {
		t.Error("wrapped error lost ErrTransition")
	}
}

func TestEventString(t *testing.T) {
	t.Parallel()
	for _, ev := range allEvents {
		if ev.String() != string(ev) {
			t.Errorf("%q.String() = %q", string(ev), ev.String())
		}
	}
}
