package actoviq

import (
	"context"

	"github.com/actoviq/actoviq-go/store"
)

// A call's committed write travels with the next call's first write.
//
// When a batch runs one call after another, the committed transition of a
// call is followed at once (no model call, no tool, nothing that waits in
// between) by the next call's started (or awaiting-approval, or skipped)
// transition. runBatch holds the first back and the drive sends the two
// as one atomic, fenced write: one store round trip per call instead of
// two. Nothing is weaker:
//   - the next call's started write, which now carries the committed
//     record, still returns before that call's tool runs, so a call's
//     result is durable before anything else can happen;
//   - a crash before that write leaves the call started, as a crash just
//     before its own committed write did: reconciliation, never a replay;
//   - each record keeps its own CAS (the entry's revision) and the write
//     its fence; the records and their events keep their order.
//
// Nothing of the caller's runs while a write is held: between the hold
// and the next call's first write the drive runs only its own code (the
// next call's arguments, deadline, input schema and effect rules). Sinks,
// of stored and of ephemeral events, are called after the write that
// carried the record returned (TestCarriedCommitNeverWaitsForASink); an
// agent's own approval policy (ApprovalPolicy.Policy), which may wait,
// is asked only after the held write is flushed.
//
// A held write is written alone when the next write cannot take it (it
// has events of its own, which would be numbered before it), and when
// runBatch returns without another write (the next call did not start,
// the batch ended, an interruption, an error): before the model is called
// again or the drive stops.
type carried struct {
	// holdCommit asks stageOrWrite to hold the next committed transition
	// (set by runBatch around a lone call that has a next call).
	holdCommit bool
	// carry is the held write; under mu.
	carry *store.RunWriteParams
}

// hold keeps p for the drive's next write when runBatch asked for it and
// p is a lone committed transition. It reports whether p was held.
func (d *drive) hold(p *store.RunWriteParams) bool {
	if !d.holdCommit || p.Run != nil || len(p.Events) > 0 || len(p.Ledger) != 1 || p.Ledger[0].Entry.State != store.LedgerCommitted {
		return false
	}
	d.holdCommit = false
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.carry != nil || d.resp != nil {
		// A write is held already (the call before this one's, when this
		// call was committed without starting: skipped): p goes now and
		// takes it along, never in its place. Or the model's response
		// is (drive_fold.go): p goes now, after it.
		return false
	}
	d.carry = p
	return true
}

// withCarried adds the held write to p (its records first), or writes it
// alone first when p has events of its own; mu is held.
func (d *drive) withCarried(ctx context.Context, p *store.RunWriteParams) error {
	c := d.carry
	if c == nil {
		return nil
	}
	d.carry = nil
	if len(p.Events) > 0 {
		_, err := d.writeLocked(ctx, c)
		return err
	}
	// c is spent: nothing else holds its Ledger, whose spare room (a
	// transition's write has some: oneEntryWrite) takes p's records.
	p.Ledger = append(c.Ledger, p.Ledger...)
	return nil
}

// flushCarried writes the held write, if any, alone.
func (d *drive) flushCarried(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.carry
	if c == nil {
		return nil
	}
	d.carry = nil
	_, err := d.writeLocked(ctx, c)
	return err
}

// carriedState is the state of a call as the drive knows it, its held
// committed transition included.
func (d *drive) carriedState(callID string) store.LedgerState {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.carry; c != nil && c.Ledger[0].Entry.CallID == callID {
		return c.Ledger[0].Entry.State
	}
	if en := d.ledger[callID]; en != nil {
		return en.State
	}
	return ""
}
