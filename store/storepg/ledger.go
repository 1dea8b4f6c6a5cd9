package storepg

import (
	"time"

	"github.com/actoviq/actoviq-go/store"
)

const ledgerCols = `tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
	attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
	revision, created_at, updated_at, started_at, committed_at`

type ledgerRow struct {
	tenant, runID, callID                        *string
	turn, idx                                    *int64
	tool, effect, state, idemKey                 *string
	attempt                                      *int64
	argsDigest, args, result, err                *string
	approval, resolution, holder                 *string
	epoch, revision                              *int64
	createdAt, updatedAt, startedAt, committedAt *time.Time
}

func (r *ledgerRow) dest() []any {
	return []any{&r.tenant, &r.runID, &r.callID, &r.turn, &r.idx, &r.tool, &r.effect, &r.state, &r.idemKey,
		&r.attempt, &r.argsDigest, &r.args, &r.result, &r.err, &r.approval, &r.resolution, &r.holder, &r.epoch,
		&r.revision, &r.createdAt, &r.updatedAt, &r.startedAt, &r.committedAt}
}

func (r *ledgerRow) entry() (*store.LedgerEntry, error) {
	d := &decoder{kind: "ledger"}
	if r.runID != nil && r.callID != nil {
		d.id = *r.runID + "/" + *r.callID
	}
	e := &store.LedgerEntry{
		Tenant:         d.str("tenant", r.tenant),
		RunID:          d.str("run_id", r.runID),
		CallID:         d.str("call_id", r.callID),
		Turn:           d.int("turn", r.turn),
		Index:          d.int("idx", r.idx),
		Tool:           d.str("tool", r.tool),
		Effect:         d.str("effect", r.effect),
		State:          store.LedgerState(d.str("state", r.state)),
		IdempotencyKey: d.str("idempotency_key", r.idemKey),
		Attempt:        d.int("attempt", r.attempt),
		ArgsDigest:     d.str("args_digest", r.argsDigest),
		Args:           d.optJSON("args", r.args),
		Result:         d.optJSON("result", r.result),
		Error:          d.optJSON("error", r.err),
		Approval:       d.decision("approval", r.approval),
		Resolution:     d.decision("resolution", r.resolution),
		Holder:         d.str("holder", r.holder),
		Epoch:          d.i64("epoch", r.epoch),
		Revision:       d.i64("revision", r.revision),
		CreatedAt:      d.tm("created_at", r.createdAt),
		UpdatedAt:      d.tm("updated_at", r.updatedAt),
		StartedAt:      optTime(r.startedAt),
		CommittedAt:    optTime(r.committedAt),
	}
	if !e.State.Valid() && r.state != nil {
		d.fail("unknown state %q", e.State)
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return e, nil
}
