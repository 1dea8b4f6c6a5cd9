package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// argMemory keeps, in the runtime's memory only, the unredacted arguments
// of pending calls whose arguments held secrets, so that the runtime that
// received them can run them on a later drive of the same run (a Resume
// after an approval, a re-execute). Entries go when the call's turn is
// folded or the run ends.
type argMemory struct {
	mu   sync.Mutex
	runs map[string]map[string]json.RawMessage // run id → call id → raw args
}

func (m *argMemory) put(runID, callID string, raw json.RawMessage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[string]map[string]json.RawMessage{}
	}
	if m.runs[runID] == nil {
		m.runs[runID] = map[string]json.RawMessage{}
	}
	m.runs[runID][callID] = raw
}

func (m *argMemory) get(runID string) map[string]json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]json.RawMessage, len(m.runs[runID]))
	for k, v := range m.runs[runID] {
		out[k] = v
	}
	return out
}

func (m *argMemory) forget(runID string, callIDs ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if callIDs == nil {
		delete(m.runs, runID)
		return
	}
	for _, id := range callIDs {
		delete(m.runs[runID], id)
	}
	if len(m.runs[runID]) == 0 {
		delete(m.runs, runID)
	}
}

// sealAAD binds a sealed value to its call.
func (d *drive) sealAAD(callID, digest string) []byte {
	return []byte(d.rt.tenant + "\x00" + d.run.ID + "\x00" + callID + "\x00" + digest)
}

// keepArgs makes the unredacted arguments of a call whose persisted
// arguments lost secrets available to whoever runs it: this runtime's
// memory, and, with a codec, a sealed copy in the checkpoint (written
// with the call's ledger entry).
func (d *drive) keepArgs(callID string, raw json.RawMessage) {
	d.rawArgs[callID] = raw
	d.rt.args.put(d.run.ID, callID, raw)
	if d.rt.codec == nil {
		return
	}
	sealed, err := d.rt.codec.Seal(raw, d.sealAAD(callID, argsDigest(raw)))
	if err != nil {
		// Without a sealed copy the call behaves as without a codec.
		d.sealErr[callID] = err
		return
	}
	if d.cp.Sealed == nil {
		d.cp.Sealed = map[string]string{}
	}
	d.cp.Sealed[callID] = sealed
}

// recallArgs fills the drive's view of the pending calls' arguments from
// the runtime's memory and from the sealed copies (read runs it after
// loading the run).
func (d *drive) recallArgs() {
	if d.rawArgs == nil {
		d.rawArgs = map[string]json.RawMessage{}
	}
	if d.sealErr == nil {
		d.sealErr = map[string]error{}
	}
	if d.rt.args == nil {
		return
	}
	for id, raw := range d.rt.args.get(d.run.ID) {
		d.rawArgs[id] = raw
	}
	for id, sealed := range d.cp.Sealed {
		if _, ok := d.rawArgs[id]; ok {
			continue
		}
		en := d.ledger[id]
		if en == nil || en.State == store.LedgerCommitted {
			continue
		}
		if d.rt.codec == nil {
			d.sealErr[id] = errors.New("the run holds them sealed, but this runtime has no codec (Config.Codec; ACTOVIQ_SEAL_KEY for the command line)")
			continue
		}
		raw, err := d.rt.codec.Open(sealed, d.sealAAD(id, en.ArgsDigest))
		if err == nil && argsDigest(raw) != en.ArgsDigest {
			err = &SealKeyError{Reason: "the opened arguments do not match the call's digest"}
		}
		if err != nil {
			d.sealErr[id] = err
			continue
		}
		d.rawArgs[id] = json.RawMessage(raw)
	}
}

// forgetArgs drops what keepArgs kept for calls whose turn is folded, or
// for the whole run (no ids) when it ends.
func (d *drive) forgetArgs(callIDs ...string) {
	if d.rt.args != nil {
		d.rt.args.forget(d.run.ID, callIDs...)
	}
	if callIDs == nil {
		d.cp.Sealed = nil
		return
	}
	for _, id := range callIDs {
		delete(d.cp.Sealed, id)
	}
	if len(d.cp.Sealed) == 0 {
		d.cp.Sealed = nil
	}
}

// argsUnavailable says why a call's arguments are not available in this
// process, or "" when they are (or never held a secret).
func (d *drive) argsUnavailable(callID string) string {
	if _, ok := d.rawArgs[callID]; ok || !d.cp.Redacted[callID] {
		return ""
	}
	why := "its arguments held secrets, which are never stored in clear, and this process did not receive them"
	if err := d.sealErr[callID]; err != nil {
		return why + "; " + err.Error()
	}
	if d.rt.codec == nil {
		return why + "; no codec is configured to seal them for other processes (Config.Codec; ACTOVIQ_SEAL_KEY for the command line)"
	}
	return why + "; the run holds no sealed copy (the call was prepared by a runtime without a codec)"
}

// argsToRun returns the arguments to run a prepared call with. When they
// are not available in this process (no codec, the wrong key, or a call
// prepared by a runtime without a codec) nothing is lost: the call is not
// run and not dropped, and it returns ok false:
//   - never started: it waits for approval, with an interruption that says
//     why (approve it where the arguments are available: the runtime that
//     received the call, or one with the codec key; or reject it, and the
//     model is told it was rejected). It is never recorded as "not run"
//     here: a process with the key may still run it;
//   - started before (a re-run, a re-execute): it must run again under its
//     key, which cannot happen here; the entry becomes unknown and the run
//     stops with a reconciliation (side effect) or recovery interruption.
func (d *drive) argsToRun(ctx context.Context, en *store.LedgerEntry) (json.RawMessage, *Interruption, bool, error) {
	if raw, ok := d.rawArgs[en.CallID]; ok {
		return raw, nil, true, nil
	}
	why := d.argsUnavailable(en.CallID)
	if why == "" {
		return en.Args, nil, true, nil
	}
	if en.Attempt == 0 {
		next := cloneEntry(en)
		next.Error = mustJSON(map[string]string{"code": "arguments_unavailable", "message": why})
		if err := d.transition(ctx, en, next, ledger.AskApproval, EvToolAwaiting); err != nil {
			return nil, nil, false, err
		}
		what := "the call"
		if d.approvalValid(en) {
			what = "the call was approved but"
		}
		in := d.interruption(InterruptApproval, d.entry(en.CallID),
			fmt.Sprintf("%s cannot start in this process: %s. Approve it from a runtime that holds them (the one that received the call, or one with the codec key), or reject it", what, why), nil)
		return nil, &in, false, nil
	}
	next := cloneEntry(en)
	next.Error = mustJSON(map[string]string{"code": "arguments_unavailable", "message": why})
	if err := d.transition(ctx, en, next, ledger.Withhold, EvToolUnknown); err != nil {
		return nil, nil, false, err
	}
	in := d.argsInterruption(d.entry(en.CallID), why)
	return nil, &in, false, nil
}

// argsInterruption is the interruption of a call that must run again
// under its key (attempt > 0) but whose arguments this process lacks.
func (d *drive) argsInterruption(en *store.LedgerEntry, why string) Interruption {
	kind := InterruptRecovery
	if en.Effect != tool.Read.String() && en.Effect != tool.IdempotentWrite.String() {
		kind = InterruptReconciliation
	}
	return d.interruption(kind, en, fmt.Sprintf(
		"attempt %d of this %s call may have run, and a new attempt under its idempotency key %s cannot start in this process: %s. Resume where the arguments are available, or record the outcome (committed or failed)",
		en.Attempt, en.Effect, en.IdempotencyKey, why), nil)
}
