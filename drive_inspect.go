package actoviq

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// childLedger reads (once per Get) the ledger of a child run whose call
// interrupted its parent.
func (rt *Runtime) childLedger(ctx context.Context, cache map[string]map[string]*store.LedgerEntry, runID string) (map[string]*store.LedgerEntry, error) {
	if l, ok := cache[runID]; ok {
		return l, nil
	}
	entries, err := rt.store.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.tenant, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: ledger of child run %s: %w", runID, err)
	}
	l := map[string]*store.LedgerEntry{}
	for _, en := range entries {
		l[en.CallID] = en
	}
	cache[runID] = l
	return l, nil
}

// unsettled lists the calls a finished run left started or unknown, with
// the evidence of the interruption that stopped it when there is one.
func (rt *Runtime) unsettled(run *store.Run, cp *checkpoint, entries []*store.LedgerEntry) []Interruption {
	var out []Interruption
	// The view is read-only, but building an interruption redacts its
	// text, which needs the runtime (its redactor and clock).
	d := &drive{rt: rt, cp: cp, run: run}
	for _, en := range entries {
		if !ledger.MayHaveRun(en.State) {
			continue
		}
		if in := d.openInterruption(en.CallID); in != nil && in.State == en.State {
			out = append(out, *in)
			continue
		}
		kind := InterruptReconciliation
		if en.Effect != tool.SideEffect.String() {
			kind = InterruptRecovery
		}
		out = append(out, d.interruption(kind, en, fmt.Sprintf(
			"the run ended %s while this call was %s; it will not run again, but what happened can be recorded (committed or failed)",
			run.Status, en.State), nil))
	}
	return out
}
