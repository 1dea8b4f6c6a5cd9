package ledger_test

import (
	"fmt"
	"testing"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
)

// wantRecover is the docs/design.md#recovery table restated independently of Recover.
func wantRecover(s ledger.State, effect string, key string, p ledger.RecoveryPolicy) ledger.Action {
	switch s {
	case store.LedgerCommitted:
		return ledger.ActionNone
	case store.LedgerPrepared:
		return ledger.ActionRun
	case store.LedgerAwaitingApproval:
		return ledger.ActionAwaitApproval
	case store.LedgerStarted, store.LedgerUnknown:
		if effect == "read" {
			if p.RerunReads {
				return ledger.ActionRerun
			}
			return ledger.ActionRecover
		}
		if effect == "idempotent-write" {
			if p.RerunIdempotentWrites && key != "" {
				return ledger.ActionRerun
			}
			return ledger.ActionRecover
		}
		return ledger.ActionReconcile
	}
	return ledger.ActionReconcile
}

var (
	allEffects = []string{"read", "idempotent-write", "side-effect",
		// Anything else is a side-effect.
		"", "Read", "READ", "idempotent_write", "write", "sideeffect", "read ", "unknown"}
	allPolicies = []ledger.RecoveryPolicy{
		{},
		{RerunReads: true},
		{RerunIdempotentWrites: true},
		{RerunReads: true, RerunIdempotentWrites: true},
	}
	allKeys = []string{"", "run-1:call-1"}
)

func TestRecoverExhaustive(t *testing.T) {
	t.Parallel()
	for _, s := range append([]ledger.State{"", "bogus"}, allStates...) {
		for _, effect := range allEffects {
			for _, p := range allPolicies {
				for _, key := range allKeys {
					got := ledger.Recover(s, effect, key, p)
					want := wantRecover(s, effect, key, p)
					if got != want {
						t.Errorf("Recover(%q, %q, key=%q, %+v) = %s, want %s", s, effect, key, p, got, want)
					}
					sideEffect := effect != "read" && effect != "idempotent-write"
					if sideEffect && got == ledger.ActionRerun {
						t.Errorf("Recover(%q, %q, key=%q, %+v) re-runs a side-effect", s, effect, key, p)
					}
					if got == ledger.ActionRun && s != store.LedgerPrepared {
						t.Errorf("Recover(%q, ...) = run outside prepared", s)
					}
					if got == ledger.ActionRerun && !ledger.MayHaveRun(s) {
						t.Errorf("Recover(%q, ...) = rerun outside started/unknown", s)
					}
				}
			}
		}
	}
}

// TestRecoverSpecRows pins the rows of the docs/design.md#recovery table by name, so
// a reader can check them against the contract without reading wantRecover.
func TestRecoverSpecRows(t *testing.T) {
	t.Parallel()
	all := ledger.RecoveryPolicy{RerunReads: true, RerunIdempotentWrites: true}
	tests := []struct {
		s      ledger.State
		effect string
		key    string
		p      ledger.RecoveryPolicy
		want   ledger.Action
	}{
		{store.LedgerCommitted, "side-effect", "k", all, ledger.ActionNone},
		{store.LedgerPrepared, "side-effect", "k", ledger.RecoveryPolicy{}, ledger.ActionRun},
		{store.LedgerAwaitingApproval, "read", "k", all, ledger.ActionAwaitApproval},
		{store.LedgerStarted, "side-effect", "k", all, ledger.ActionReconcile},
		{store.LedgerUnknown, "side-effect", "k", all, ledger.ActionReconcile},
		{store.LedgerUnknown, "", "k", all, ledger.ActionReconcile},
		{store.LedgerStarted, "read", "", ledger.RecoveryPolicy{}, ledger.ActionRecover},
		{store.LedgerStarted, "read", "", ledger.RecoveryPolicy{RerunReads: true}, ledger.ActionRerun},
		{store.LedgerUnknown, "read", "", ledger.RecoveryPolicy{RerunIdempotentWrites: true}, ledger.ActionRecover},
		{store.LedgerUnknown, "idempotent-write", "k", ledger.RecoveryPolicy{RerunReads: true}, ledger.ActionRecover},
		{store.LedgerUnknown, "idempotent-write", "k", ledger.RecoveryPolicy{RerunIdempotentWrites: true}, ledger.ActionRerun},
		{store.LedgerStarted, "idempotent-write", "", all, ledger.ActionRecover},
	}
	for _, tt := range tests {
		if got := ledger.Recover(tt.s, tt.effect, tt.key, tt.p); got != tt.want {
			t.Errorf("Recover(%s, %q, %q, %+v) = %s, want %s", tt.s, tt.effect, tt.key, tt.p, got, tt.want)
		}
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	want := map[ledger.Action]string{
		ledger.ActionNone:          "none",
		ledger.ActionRun:           "run",
		ledger.ActionAwaitApproval: "await_approval",
		ledger.ActionReconcile:     "reconcile",
		ledger.ActionRecover:       "recover",
		ledger.ActionRerun:         "rerun",
		ledger.Action(42):          "Action(42)",
		ledger.Action(-1):          "Action(-1)",
	}
	for a, s := range want {
		if a.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(a), a.String(), s)
		}
	}
	if got := fmt.Sprint(ledger.ActionReconcile); got != "reconcile" {
		t.Errorf("fmt.Sprint = %q", got)
	}
}
