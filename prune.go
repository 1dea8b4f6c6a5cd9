package actoviq

import (
	"bytes"
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
// short transaction each, sized to take about BatchTime; on PostgreSQL FOR
// UPDATE SKIP LOCKED), paced with a pause after each, so writers never
// wait long behind it, and each batch is emitted as a runs.pruned event
// ([EvRunsPruned]).
//
// Never removed, whatever the policy:
//   - a run that is not finished (queued, running, interrupted);
//   - a finished run with a call whose outcome is unknown (ledger state
//     started or unknown): it stays for the record until someone settles
//     it with [Runtime.Decide];
//   - a run of a tree that is not finished: while any run of a tree (a
//     top-level run and every descendant) is not finished, none of them is
//     removed, so that a running grandchild still finds its tree's root
//     and budget (which counts the turns and tokens of every branch);
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
	// Batch is the largest batch; zero means 500, at most
	// store.MaxPruneBatch.
	Batch int
	// BatchTime is how long one batch may hold the store (the batch size
	// adapts to it, and the sweep pauses twice as long after each batch:
	// see [PruneParams].BatchTime); zero means 20 ms.
	BatchTime time.Duration
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
	case r.BatchTime < 0:
		return errors.New("actoviq: Config.Retention.BatchTime is negative")
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
	// Batch is the largest batch; zero means 500, at most
	// store.MaxPruneBatch. The batches of a prune are usually smaller:
	// see BatchTime.
	Batch int
	// BatchTime is how long one batch may hold the store: the batch size
	// adapts, from 1 run up to Batch, so that a batch takes about this
	// long; zero means 20 ms. After each batch the prune pauses twice as
	// long as the batch took, so that other writers (workers, on SQLite
	// waiting for its single write lock) have the store at least two
	// thirds of the time. A batch costs a fixed part (its commit: an
	// fsync, longer on a loaded server) besides its runs; when a batch of
	// a few runs alone takes longer than BatchTime, the batches grow until
	// they take about twice that fixed part, instead of one run each.
	BatchTime time.Duration
	// Unpaced runs the batches back to back, without the pause and at
	// size Batch: for a store nobody else writes to.
	Unpaced bool
	// DryRun removes nothing: it reads the first [MaxDryRunIDs] runs that
	// would be removed, oldest first, in batches of Batch, and reports
	// them with their counts; More says that more would go. It costs what
	// the first batches of the prune cost, whatever the store holds: it
	// used to walk every batch to count every run (108 s on PostgreSQL with
	// 1,000,000 finished runs).
	DryRun bool
	// Sinks receive the runs.pruned event of each batch, after
	// [Config.Sinks].
	Sinks []EventSink
}

// MaxDryRunIDs is the most runs a dry run reads and reports
// (PruneResult.RunIDs); when more would go, it says so (PruneResult.More)
// without counting them.
const MaxDryRunIDs = 1000

// PruneResult counts what [Runtime.Prune] removed (or, for a dry run,
// would remove).
type PruneResult struct {
	// Runs, LedgerEntries and Events count the rows removed (for a dry
	// run, those of RunIDs).
	Runs int64 `json:"runs"`
	// LedgerEntries counts the ledger entries removed with the runs.
	LedgerEntries int64 `json:"ledger_entries"`
	// Events counts the stored events removed with the runs.
	Events int64 `json:"events"`
	// Batches is how many batches ran.
	Batches int `json:"batches"`
	// DryRun says nothing was removed.
	DryRun bool `json:"dry_run,omitempty"`
	// More, for a dry run, says that more runs than RunIDs (the first
	// [MaxDryRunIDs]) would be removed: the dry run stopped there, and its
	// counts are of RunIDs only.
	More bool `json:"more,omitempty"`
	// RunIDs are the runs a dry run would remove, oldest first, at most
	// [MaxDryRunIDs] (not filled by a prune).
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
// forgotten before the next. Batches are short and paced (see
// PruneParams.BatchTime), so that writers never wait long behind a prune.
func (rt *Runtime) Prune(ctx context.Context, p *PruneParams) (*PruneResult, error) {
	if p == nil || p.FinishedBefore.IsZero() {
		return nil, &store.InvalidError{Field: "FinishedBefore", Reason: "zero"}
	}
	if p.Batch < 0 || p.Batch > store.MaxPruneBatch || p.BatchTime < 0 {
		return nil, &store.InvalidError{Field: "Batch", Reason: fmt.Sprintf("%d is not from 0 to %d, or BatchTime is negative", p.Batch, store.MaxPruneBatch)}
	}
	maxBatch := p.Batch
	if maxBatch == 0 {
		maxBatch = 500
	}
	target := p.BatchTime
	if target == 0 {
		target = 20 * time.Millisecond
	}
	paced := !p.Unpaced && !p.DryRun // a dry run only reads
	batch := maxBatch
	if paced {
		batch = min(maxBatch, 50) // a first batch that cannot hold the store long; it grows
	}
	res := &PruneResult{DryRun: p.DryRun}
	var after *store.RunCursor // each batch starts after the previous one: no walk over what it removed
	var fixed time.Duration    // a batch's fixed cost: the time of the last batch of a few runs
	for {
		if p.DryRun {
			batch = min(maxBatch, MaxDryRunIDs-len(res.RunIDs))
		}
		t0 := time.Now()
		b, err := rt.store.RunPrune(ctx, &store.RunPruneParams{Tenant: rt.tenant, FinishedBefore: p.FinishedBefore,
			Limit: batch, Sessions: p.Sessions, DryRun: p.DryRun, After: after})
		took := time.Since(t0)
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
			res.RunIDs = append(res.RunIDs, b.RunIDs...)
			if b.More && len(res.RunIDs) >= MaxDryRunIDs {
				res.More = true
				return res, nil
			}
		}
		if !b.More || len(b.RunIDs) == 0 {
			return res, nil
		}
		after = b.Last
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if paced {
			if batch <= smallBatch {
				fixed = took
			}
			batch = nextBatch(batch, maxBatch, took, target, fixed)
			t := time.NewTimer(max(2*took, time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return res, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// smallBatch is the largest batch whose time is taken as a batch's fixed
// cost (its commit), the time of its runs left out.
const smallBatch = 4

// nextBatch is the size of the batch after one of n runs that took took:
// about what fits in target, at most doubling, from 1 to maxBatch. A
// batch takes fixed (0: unknown) plus a time per run; when the fixed cost
// is longer than target, the goal is twice it, scaled on the time above
// it. Without the fixed cost,
// batches whose commit alone takes longer than target shrank to one run
// each: a prune on PostgreSQL (fsync on, load 20) removed 5 runs a second.
func nextBatch(n, maxBatch int, took, target, fixed time.Duration) int {
	if fixed <= target {
		// A commit that fits in target: proportional. (Scaling the time
		// above a fixed part measured during a stall shrank SQLite's
		// batches: 400-680 runs/s against 720-850.)
		fixed = 0
	}
	goal := max(target, 2*fixed)
	if took <= fixed || took <= 0 {
		return min(2*n, maxBatch)
	}
	next := int(float64(n) * float64(goal-fixed) / float64(took-fixed))
	return max(1, min(next, 2*n, maxBatch))
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
		ev.Data = bytes.Clone(data) // each sink's to keep
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
			Batch: pol.Batch, BatchTime: pol.BatchTime, Sinks: o.Sinks})
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
