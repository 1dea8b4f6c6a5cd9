package actoviq

import (
	"context"
	"fmt"
	"slices"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// The model's answer travels with its first call's started write.
//
// When a model response asks for calls and the first of them starts at
// once (docs/design.md#the-ledger), the response's write (the run's
// checkpoint and log append, a prepared entry per call, the events) and
// the first call's started transition go to the store as one atomic,
// fenced write: commitResponse holds the first back (holdResponse) and
// the started write of that call takes it along (mergeResponse). A turn
// of n calls costs n+1 writes, not n+2 (the later calls' started writes
// carry the committed record of the call before them: drive_carry.go).
// Nothing is weaker:
//   - the started record is still in a write that returned before the
//     call's tool runs;
//   - a crash before that write leaves the run as if the model had not
//     answered: nothing of the response is stored, nothing started, and
//     the resumed drive asks the model again (it never reads a response
//     that was not stored, and no call of it exists to run);
//   - a crash after it leaves the first call started: reconciliation
//     (or the recovery policy), never a replay;
//   - the write keeps the run's revision check, each record its own
//     (a new entry: it must not exist) and the write its fence; events
//     keep their order and numbering.
//
// The first call's entry is written once, as a new entry directly in
// state started, not created prepared and moved to started in the same
// write: a store write carries at most one record per call
// ([store.RunWriteParams.Validate]), and that rule stays. Readers see
// what they saw before: the write holds the call's tool.prepared event
// (the response's events, in Events, end with it) and its tool.started
// event (its record's), numbered as before: model.response, the
// prepared events of every call in the model's order, then the first
// call's started. Its entry's revision is 1 once started, not 2; only
// revision checks read revisions, and they read the stored one. The SQL
// stores keep such a write at the rows of the two writes it replaces:
// the records before the started one in one events row, the started
// record in its own (store/internal/eventrow).
//
// It folds only when nothing can come between the response and the
// start (foldable): the first call is prepared (not malformed), its tool
// is known, is not an agent tool (a child run), needs no approval, the
// agent has no approval policy of its own (caller code, which may wait:
// never asked while a write is held), it is not a read that runs in
// parallel with the next, and its arguments are in memory. Otherwise the
// response is written alone, as before. Between the hold and the merged
// write the drive runs only its own code (the recovery rules over
// prepared calls, the call's arguments, deadline and input schema); no
// sink is called (they get the events once the write returned). Every
// other way out writes the held response alone first, so that it is
// stored as it was before: a run write (writeRun, which the end of the
// run, a cancellation and an interruption go through), any other write
// (writeResult: a record computed from a held entry expects the
// revision that write gave it), the end of runBatch (the call did not
// start), the loop's stop checks (a Close, a lost claim), and the call
// taking another path than its start (an approval, a refusal, a policy).
//
// A merged write whose outcome is not known (a connection lost during
// COMMIT) is read back as a started write alone is (drive_write.go,
// readBack): its records are all new entries, so they tell whether it
// committed, and the run is read again for its stored revision; read
// back absent, the same params are sent again. Anything else stops the
// drive with the error, the run either as if the model had not answered
// or with its first call started, and a resume goes on from whichever
// the store holds. A merged write that fails for good (fenced out, a
// conflict, a store busy past the write's budget) stores nothing: the
// resume asks the model again. A sink that panics on the merged write's
// events is recorded after it, so its sink.panicked event comes after
// the first call's tool.started, not before (the events of the write
// are emitted together once it returned).
type foldedResponse struct {
	// resp is the response's write, held for its first call's started
	// write; under mu.
	resp *store.RunWriteParams
	// respCall is that call's id, and respItems len(cp.Items) when the
	// checkpoint in resp was encoded (what its write stores of the
	// transcript: cpEncoder).
	respCall  string
	respItems int
}

// foldable reports whether the response's write may wait for the started
// write of calls[0] (see foldedResponse).
func (d *drive) foldable(ctx context.Context, calls []*store.LedgerEntry) bool {
	if len(calls) == 0 || d.staged != nil || d.runner == nil || d.agent.Approval.Policy != nil {
		return false
	}
	first := calls[0]
	if first.State != store.LedgerPrepared {
		return false // malformed: committed at once
	}
	t, ok := d.runner.Lookup(first.Tool)
	if !ok {
		return false // answered as unknown: no start
	}
	spec := t.Spec()
	if spec.RequireApproval || slices.Contains(d.agent.Approval.Effects, spec.Effect) {
		return false // asks for approval
	}
	if _, child := d.agentToolOf(first.Tool); child {
		return false // a child run: its own path (drive_child.go)
	}
	if first.Effect == tool.Read.String() && len(calls) > 1 && calls[1].State == store.LedgerPrepared && calls[1].Effect == tool.Read.String() {
		return false // reads in parallel: another call's start may come first
	}
	if _, ok := d.rawArgs[first.CallID]; !ok {
		return false
	}
	return ctx.Err() == nil && !d.pastDeadline()
}

// holdResponse keeps the response's write (writes and events, with the
// checkpoint as it is now) for the started write of its first call. The
// drive's view of the calls is their entries as the write would store
// them, at revision 0 (not stored yet).
func (d *drive) holdResponse(writes []store.LedgerWrite, events []*store.EventRecord) error {
	head, app, err := d.cpEnc.encode(d.cp)
	if err != nil {
		return fmt.Errorf("actoviq: run %s: encode checkpoint: %w", d.run.ID, err)
	}
	p := &store.RunWriteParams{Ledger: writes, Events: events, Run: &store.RunUpdate{ExpectedRevision: d.run.Revision,
		Status: store.RunRunning, Checkpoint: head, Append: app, WaitKind: waitKind(store.RunRunning, d.cp)}}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resp, d.respCall, d.respItems = p, writes[0].Entry.CallID, len(d.cp.Items)
	for _, w := range writes {
		d.ledger[w.Entry.CallID] = w.Entry
	}
	return nil
}

// mergeResponse returns the held response and p as one write when p is
// the started write of the response's first call, or nil; mu is held.
// The first call's prepared record is replaced by p's started record
// (a new entry), its prepared event goes last of the plain events and
// the started record last of the records: the numbering is the one the
// two writes had.
func (d *drive) mergeResponse(p *store.RunWriteParams) *store.RunWriteParams {
	r := d.resp
	if p.Run != nil || len(p.Events) > 0 || len(p.Ledger) != 1 {
		return nil
	}
	w := p.Ledger[0]
	if w.Entry.CallID != d.respCall || w.Entry.State != store.LedgerStarted || w.ExpectedRevision != 0 || w.Event == nil ||
		r.Ledger[0].Entry.CallID != d.respCall || r.Ledger[0].Event == nil {
		return nil
	}
	d.resp = nil
	m := &store.RunWriteParams{Run: r.Run,
		Events: append(r.Events[:len(r.Events):len(r.Events)], r.Ledger[0].Event),
		Ledger: append(r.Ledger[1:len(r.Ledger):len(r.Ledger)], w)}
	return m
}

// flushResponse writes the held response alone, if one is held.
func (d *drive) flushResponse(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushResponseLocked(ctx)
}

// flushResponseLocked is flushResponse with mu held.
func (d *drive) flushResponseLocked(ctx context.Context) error {
	r := d.resp
	if r == nil {
		return nil
	}
	d.resp = nil
	if _, err := d.writeLocked(ctx, r); err != nil {
		return err
	}
	d.cpEnc.stored = d.respItems
	return nil
}

// responseFirst writes the held response alone before p, another write
// (mu is held): a record of p built from a call's held entry (revision
// 0: not stored then) expects the revision the response's write gave
// that entry.
func (d *drive) responseFirst(ctx context.Context, p *store.RunWriteParams) error {
	r := d.resp
	if err := d.flushResponseLocked(ctx); err != nil {
		return err
	}
	for i := range p.Ledger {
		w := &p.Ledger[i]
		if w.ExpectedRevision != 0 {
			continue
		}
		for _, rw := range r.Ledger {
			if rw.Entry.CallID == w.Entry.CallID {
				if en := d.ledger[w.Entry.CallID]; en != nil {
					w.ExpectedRevision = en.Revision
				}
				break
			}
		}
	}
	return nil
}

// responseHeld reports whether a response write is held.
func (d *drive) responseHeld() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resp != nil
}
