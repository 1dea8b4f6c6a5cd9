package ledger_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
)

// Where a worker can die while it drives one call through Start.
const (
	crashBeforeStartDurable    = iota // Start computed, its write never returned: the tool is not invoked
	crashAfterStartDurable            // started is durable, the tool was not invoked yet
	crashDuringTool                   // the tool body ran (maybe partly), nothing recorded
	crashAfterToolBeforeCommit        // the tool returned, the commit write never landed
	crashAfterCommit                  // committed is durable, then the worker died
	noCrashCommit                     // normal completion
	noCrashLost                       // the worker survived but lost the outcome (transport failure, timeout)
	numRunOutcomes
)

// callModel is one logical tool call driven only through Next and Recover,
// with the durable ledger state as the only thing that survives a crash.
type callModel struct {
	effect string
	key    string

	durable   ledger.State
	committed bool // committed was reached once

	executions      int // times the tool body ran
	starts          int // successful Start transitions (attempts)
	reexecDecisions int // operator re-execute decisions that took effect
	policyReruns    int // re-runs granted by a RecoveryPolicy
}

func sideEffect(effect string) bool { return effect != "read" && effect != "idempotent-write" }

// apply is the engine's "CAS the new state" step: it writes only what Next
// allows, and checks the two structural rules on every write.
func (m *callModel) apply(t *rapid.T, ev ledger.Trigger) bool {
	from := m.durable
	to, err := ledger.Next(from, ev)
	if err != nil {
		if to != from {
			t.Fatalf("Next(%s, %s) failed but moved to %s", from, ev, to)
		}
		return false
	}
	if from == store.LedgerCommitted {
		t.Fatalf("transition out of committed succeeded: %s --%s--> %s", from, ev, to)
	}
	if ev == ledger.Start {
		if from != store.LedgerPrepared {
			t.Fatalf("Start applied from %s", from)
		}
		m.starts++
	}
	m.durable = to
	return true
}

// run drives a prepared call through Start and the tool, dying at a random
// point. The tool body runs only after started is durable: that is the
// engine's contract this model encodes.
func (m *callModel) run(t *rapid.T) {
	if m.durable != store.LedgerPrepared {
		t.Fatalf("run from %s", m.durable)
	}
	switch rapid.IntRange(0, 2).Draw(t, "policy") {
	case 1: // the permission policy asks a person first
		if !m.apply(t, ledger.AskApproval) {
			t.Fatalf("AskApproval from prepared refused")
		}
		return
	case 2: // unknown tool, invalid arguments or denied: an error result, no execution
		if rapid.IntRange(0, 4).Draw(t, "skip") == 0 {
			if !m.apply(t, ledger.Skip) {
				t.Fatalf("Skip from prepared refused")
			}
			return
		}
	}
	point := rapid.IntRange(0, numRunOutcomes-1).Draw(t, "crash point")
	if point == crashBeforeStartDurable {
		if _, err := ledger.Next(m.durable, ledger.Start); err != nil {
			t.Fatalf("Start from prepared refused: %v", err)
		}
		return // the write never returned; durable stays prepared
	}
	if !m.apply(t, ledger.Start) {
		t.Fatalf("Start from prepared refused")
	}
	if point == crashAfterStartDurable {
		return
	}
	m.executions++ // the tool body runs
	switch point {
	case crashDuringTool, crashAfterToolBeforeCommit:
		return
	case noCrashLost:
		if !m.apply(t, ledger.Lose) {
			t.Fatalf("Lose from started refused")
		}
	case crashAfterCommit, noCrashCommit:
		if !m.apply(t, ledger.Commit) {
			t.Fatalf("Commit from started refused")
		}
	}
}

// resume is what a worker does after a restart: ask Recover, and run only
// when it says so.
func (m *callModel) resume(t *rapid.T) {
	p := ledger.RecoveryPolicy{
		RerunReads:            rapid.Bool().Draw(t, "rerun reads"),
		RerunIdempotentWrites: rapid.Bool().Draw(t, "rerun idempotent writes"),
	}
	switch a := ledger.Recover(m.durable, m.effect, m.key, p); a {
	case ledger.ActionRun:
		m.run(t)
	case ledger.ActionRerun:
		if sideEffect(m.effect) {
			t.Fatalf("Recover granted a re-run of effect %q", m.effect)
		}
		if m.effect == "idempotent-write" && m.key == "" {
			t.Fatalf("Recover granted a re-run of an unkeyed idempotent-write")
		}
		if !m.apply(t, ledger.Reexecute) {
			t.Fatalf("Reexecute from %s refused after ActionRerun", m.durable)
		}
		m.policyReruns++
		m.run(t)
	case ledger.ActionNone, ledger.ActionAwaitApproval, ledger.ActionReconcile, ledger.ActionRecover:
		// Nothing runs: the result is appended, or the run stays interrupted.
	default:
		t.Fatalf("Recover returned %s", a)
	}
}

// decide is an operator decision, offered whether or not it is legal; an
// illegal one must be refused without changing anything.
func (m *callModel) decide(t *rapid.T) {
	ev := rapid.SampledFrom([]ledger.Trigger{ledger.Settle, ledger.Reexecute, ledger.Approve, ledger.Reject}).Draw(t, "decision")
	if m.apply(t, ev) && ev == ledger.Reexecute {
		m.reexecDecisions++
	}
}

func (m *callModel) check(t *rapid.T) {
	if m.committed && m.durable != store.LedgerCommitted {
		t.Fatalf("left committed for %s", m.durable)
	}
	if m.durable == store.LedgerCommitted {
		m.committed = true
		for _, ev := range allEvents {
			if to, err := ledger.Next(m.durable, ev); err == nil {
				t.Fatalf("committed --%s--> %s succeeded", ev, to)
			}
		}
	}
	if sideEffect(m.effect) {
		if m.executions > 1+m.reexecDecisions {
			t.Fatalf("side-effect %q ran %d times with %d re-execute decisions", m.effect, m.executions, m.reexecDecisions)
		}
		if m.policyReruns != 0 {
			t.Fatalf("side-effect %q re-run by policy %d times", m.effect, m.policyReruns)
		}
	}
	if m.executions > 1+m.reexecDecisions+m.policyReruns {
		t.Fatalf("%q ran %d times with %d decisions and %d policy re-runs", m.effect, m.executions, m.reexecDecisions, m.policyReruns)
	}
	if m.executions > m.starts {
		t.Fatalf("the tool ran %d times but was started only %d times", m.executions, m.starts)
	}
}

func TestNoSideEffectRunsTwiceWithoutReexecute(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		m := &callModel{
			effect:  rapid.SampledFrom([]string{"side-effect", "read", "idempotent-write", "", "Side-Effect", "mystery"}).Draw(t, "effect"),
			key:     rapid.SampledFrom([]string{"", "run-1:call-1"}).Draw(t, "key"),
			durable: store.LedgerPrepared,
		}
		t.Repeat(map[string]func(*rapid.T){
			"resume": m.resume,
			"decide": m.decide,
			"":       m.check,
		})
	})
}
