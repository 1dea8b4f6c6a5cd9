package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// EvRunsPruned is the event of one prune batch. It is not a run's event
// (RunID is empty, Seq 0: the runs it names are gone); sinks receive it
// from [Runtime.Prune] and from the sweeper of [Runtime.Work].
const EvRunsPruned = "runs.pruned"

// Retention is the policy of [Config.Retention]: finished runs (completed,
// failed, cancelled) can be removed after a while, so that the store does
// not grow forever. Removal works in bounded batches (store.RunPrune: one
// short transaction of a few hundred runs each; on PostgreSQL FOR UPDATE
// SKIP LOCKED), so writers never wait long behind it, and each batch is
// emitted as a runs.pruned event ([EvRunsPruned]).
//
// Never removed, whatever the policy:
//   - a run that is not finished (queued, running, interrupted);
//   - a finished run with a call whose outcome is unknown (ledger state
//     started or unknown): it stays for the record until someone settles
//     it with [Runtime.Decide];
//   - a run with a child that is not finished, and a child whose parent is
//     not finished;
//   - a run whose claim is live;
//   - unless Sessions is set, a run of a session still in use (a session
//     with a run that is not finished or was written after the cut-off).
//
// Session journals are never removed.
type Retention struct {
	// KeepFinished is how long finished runs are kept after their last
	// write. Zero means forever: the worker does not sweep.
	KeepFinished time.Duration
	// Sessions also removes the finished runs of sessions still in use.
	Sessions bool
	// Batch is how many runs one batch removes; zero means 500, at most
	// store.MaxPruneBatch.
	Batch int
	// Every is how often [Runtime.Work] sweeps; zero means one minute.
	Every time.Duration
}

func (r *Retention) validate() error {
	switch {
	case r.KeepFinished < 0:
		return errors.New("actoviq: Config.Retention.KeepFinished is negative")
	case r.Batch < 0 || r.Batch > store.MaxPruneBatch:
		return fmt.Errorf("actoviq: Config.Retention.Batch %d is not from 0 to %d", r.Batch, store.MaxPruneBatch)
	case r.Every < 0:
		return errors.New("actoviq: Config.Retention.Every is negative")
	}
	return nil
}

// PruneParams says what [Runtime.Prune] removes.
type PruneParams struct {
	// FinishedBefore removes finished runs last written before it;
	// required.
	FinishedBefore time.Time
	// Sessions also removes the finished runs of sessions still in use.
	Sessions bool
	// Batch is the batch size; zero means 500, at most
	// store.MaxPruneBatch.
	Batch int
	// DryRun removes nothing: it reports the first batch that would be
	// removed (and whether more would follow).
	DryRun bool
	// Sinks receive the runs.pruned event of each batch, after
	// [Config.Sinks].
	Sinks []EventSink
}

// PruneResult counts what [Runtime.Prune] removed (or, for a dry run, the
// first batch it would remove).
type PruneResult struct {
	// Runs, LedgerEntries and Events count the rows removed.
	Runs int64 `json:"runs"`
	// LedgerEntries counts the ledger entries removed with the runs.
	LedgerEntries int64 `json:"ledger_entries"`
	// Events counts the stored events removed with the runs.
	Events int64 `json:"events"`
	// Batches is how many batches ran.
	Batches int `json:"batches"`
	// DryRun says nothing was removed.
	DryRun bool `json:"dry_run,omitempty"`
	// More, for a dry run, says that more runs would follow the batch.
	More bool `json:"more,omitempty"`
	// RunIDs are the runs of a dry run's batch (not filled by a prune).
	RunIDs []string `json:"run_ids,omitempty"`
}

// RunsPrunedData is the payload of runs.pruned: one batch.
type RunsPrunedData struct {
	// FinishedBefore is the cut-off of the prune.
	FinishedBefore time.Time `json:"finished_before"`
	// RunIDs are the runs removed.
	RunIDs []string `json:"run_ids"`
	// LedgerEntries and Events count the rows removed with them.
	LedgerEntries int64 `json:"ledger_entries"`
	// Events counts the stored events removed with them.
	Events int64 `json:"events"`
	// DryRun says nothing was removed.
	DryRun bool `json:"dry_run,omitempty"`
}

// EventTypes implements [EventData].
func (*RunsPrunedData) EventTypes() []string { return []string{EvRunsPruned} }

func init() {
	eventPayloads[EvRunsPruned] = func() EventData { return new(RunsPrunedData) }
}

// Prune removes the tenant's finished runs last written before
// p.FinishedBefore, batch after batch until none is left or ctx ends, and
// emits one runs.pruned event per batch. What it never removes is listed
// at [Retention]. Memory stays bounded: a batch is read, removed and
// forgotten before the next.
func (rt *Runtime) Prune(ctx context.Context, p *PruneParams) (*PruneResult, error) {
	if p == nil || p.FinishedBefore.IsZero() {
		return nil, &store.InvalidError{Field: "FinishedBefore", Reason: "zero"}
	}
	batch := p.Batch
	if batch == 0 {
		batch = 500
	}
	res := &PruneResult{DryRun: p.DryRun}
	var after *store.RunCursor // each batch starts after the previous one: no walk over what it removed
	for {
		b, err := rt.store.RunPrune(ctx, &store.RunPruneParams{Tenant: rt.tenant, FinishedBefore: p.FinishedBefore,
			Limit: batch, Sessions: p.Sessions, DryRun: p.DryRun, After: after})
		if err != nil {
			return res, fmt.Errorf("actoviq: prune: %w", err)
		}
		res.Batches++
		res.Runs += int64(len(b.RunIDs))
		res.LedgerEntries += b.LedgerEntries
		res.Events += b.Events
		if len(b.RunIDs) > 0 {
			rt.emitPruned(ctx, p, b)
		}
		if p.DryRun {
			res.RunIDs, res.More = b.RunIDs, b.More
			return res, nil
		}
		if !b.More || len(b.RunIDs) == 0 {
			return res, nil
		}
		after = b.Last
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
}

// emitPruned hands the runs.pruned event of a batch to the sinks.
func (rt *Runtime) emitPruned(ctx context.Context, p *PruneParams, b *store.RunPruneResult) {
	data, err := json.Marshal(&RunsPrunedData{FinishedBefore: p.FinishedBefore, RunIDs: b.RunIDs,
		LedgerEntries: b.LedgerEntries, Events: b.Events, DryRun: p.DryRun})
	if err != nil {
		return
	}
	ev := Event{Schema: EventSchema, ID: rt.newID(), Type: EvRunsPruned, Time: rt.clock(), Data: data}
	for _, s := range append(append([]EventSink(nil), rt.sinks...), p.Sinks...) {
		func() {
			defer func() { _ = recover() }() // a sink's panic stops neither the prune nor the other sinks
			s.Emit(ctx, ev)
		}()
	}
}

// sweep is the worker's retention loop: every Retention.Every it prunes
// what the policy allows, until ctx ends. Errors are logged and retried at
// the next sweep.
func (rt *Runtime) sweep(ctx context.Context, o *WorkOptions) {
	pol := rt.retention
	every := pol.Every
	if every == 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := rt.Prune(ctx, &PruneParams{FinishedBefore: rt.clock().Add(-pol.KeepFinished), Sessions: pol.Sessions,
			Batch: pol.Batch, Sinks: o.Sinks})
		switch {
		case err != nil && ctx.Err() == nil:
			o.Logger.Warn("retention sweep failed", "err", err)
		case res != nil && res.Runs > 0:
			o.Logger.Info("retention sweep", "runs", res.Runs, "ledger_entries", res.LedgerEntries, "events", res.Events, "batches", res.Batches)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
