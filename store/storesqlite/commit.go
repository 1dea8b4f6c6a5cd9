package storesqlite

import (
	"context"
	"sync/atomic"

	"github.com/actoviq/actoviq-go/store/internal/groupcommit"
)

// Group commit.
//
// Every write of a Store goes through its commit queue. A writer that finds
// no commit in progress leads: it takes every write queued so far, runs
// them one after the other in one BEGIN IMMEDIATE transaction, each inside
// its own SAVEPOINT, and commits once. Writes that arrive while a commit is
// syncing wait for the next batch, so N concurrent writers pay about one
// fsync per batch instead of N.
//
// Nothing is weaker than a transaction of its own:
//   - a write returns only after the COMMIT that holds it is durable
//     (synchronous=FULL), and its error if that COMMIT failed;
//   - every check a write makes (revision, fence) runs inside the batch's
//     transaction under the write lock, after the writes queued before it,
//     exactly as if they had committed one by one in queue order;
//   - a write that fails is rolled back to its savepoint and returns its
//     error; the others are unaffected;
//   - if the transaction itself is lost (an I/O error, or SQLite rolled it
//     back), the writes of the batch that had not failed are run again in a
//     new batch; nothing of the lost transaction was committed.
//
// A batch of one write is a plain transaction, without savepoints, and its
// statements run on the caller's context as before.

// counters count what the store did, for benchmarks.
type counters struct {
	runWrites, rows, commits, batched atomic.Int64
}

// Stats counts a Store's work since it was opened.
type Stats struct {
	// RunWrites is the number of successful [Store.RunWrite] calls.
	RunWrites int64
	// RowsWritten is the number of rows those writes inserted or updated:
	// the run row when the write updates it, one per ledger write, one per
	// event.
	RowsWritten int64
	// Commits is the number of write transactions committed (all writes,
	// not only run writes); Batched is the number of writes they held.
	Commits int64
	Batched int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{RunWrites: s.stats.runWrites.Load(), RowsWritten: s.stats.rows.Load(),
		Commits: s.stats.commits.Load(), Batched: s.stats.batched.Load()}
}

// writeReq is a queued write: the function that makes it.
type writeReq = groupcommit.Req[func(tx querier) error]

// commitQueue is the store's queue of writes (see the group commit above).
type commitQueue = groupcommit.Queue[func(tx querier) error]

// maxExtraBatches bounds the batches a leader runs after its own write.
const maxExtraBatches = 8

// maxBatch bounds the writes of one transaction.
const maxBatch = 256

// write runs fn in a write transaction (BEGIN IMMEDIATE ... COMMIT),
// possibly shared with other writes of this Store (see the group commit
// above). Every check a write depends on is made inside fn, so no decision
// crosses a transaction boundary. An error from fn rolls fn's writes back.
// fn may run more than once (when a shared transaction is lost); each run
// starts from nothing.
func (s *Store) write(ctx context.Context, fn func(tx querier) error) error {
	return s.commits.Do(ctx, fn)
}

func finish(r *writeReq, err error) { r.Finish(err) }

// runBatch runs the writes of one transaction and finishes them, except
// those it returns: they must run again in a new transaction.
func (s *Store) runBatch(batch []*writeReq) (retry []*writeReq) {
	live := batch // the queue hands over only writes whose context is live
	if len(live) == 1 {
		r := live[0]
		finish(r, s.writeOne(r.Ctx, r.Val))
		return nil
	}
	// The transaction belongs to the whole batch: no caller's context may
	// interrupt it.
	bctx := context.WithoutCancel(live[0].Ctx)
	w, err := s.acquire(bctx)
	if err != nil {
		for _, r := range live {
			finish(r, mapErr(r.Ctx, err))
		}
		return nil
	}
	defer w.release()
	if err := w.begin(bctx); err != nil {
		for _, r := range live {
			finish(r, mapErr(r.Ctx, err))
		}
		return nil
	}
	q := wtx{w: w, ctx: bctx}
	var ok []*writeReq
	for i, r := range live {
		if _, err := q.ExecContext(bctx, "SAVEPOINT w"); err != nil {
			w.rollback(bctx)
			return append(ok, live[i:]...)
		}
		ferr := r.Val(q)
		if ferr == nil {
			if _, err := q.ExecContext(bctx, "RELEASE w"); err != nil {
				w.rollback(bctx)
				return append(ok, live[i:]...)
			}
			ok = append(ok, r)
			continue
		}
		// Undo this write only. If that is impossible, the transaction is
		// gone: this write failed, the others run again.
		if _, err := q.ExecContext(bctx, "ROLLBACK TO w"); err != nil {
			w.rollback(bctx)
			finish(r, mapErr(r.Ctx, ferr))
			return append(ok, live[i+1:]...)
		}
		if _, err := q.ExecContext(bctx, "RELEASE w"); err != nil {
			w.rollback(bctx)
			finish(r, mapErr(r.Ctx, ferr))
			return append(ok, live[i+1:]...)
		}
		finish(r, mapErr(r.Ctx, ferr))
	}
	if err := w.commit(bctx); err != nil {
		w.rollback(bctx) // no-op when SQLite already ended it
		for _, r := range ok {
			finish(r, mapErr(r.Ctx, err))
		}
		return nil
	}
	s.stats.commits.Add(1)
	s.stats.batched.Add(int64(len(ok)))
	for _, r := range ok {
		finish(r, nil)
	}
	return nil
}

// writeOne runs fn alone in one write transaction on the caller's context.
func (s *Store) writeOne(ctx context.Context, fn func(tx querier) error) error {
	// The write connection (writer.go): when COMMIT fails (a busy or full
	// database), SQLite may keep the transaction open; it is rolled back,
	// or the connection dropped, before the next write uses it.
	w, err := s.acquire(ctx)
	if err != nil {
		return mapErr(ctx, err)
	}
	defer w.release()
	if err := w.begin(ctx); err != nil {
		return mapErr(ctx, err)
	}
	// ctx bounds the wait for the write lock (BEGIN IMMEDIATE, above);
	// the statements of the transaction, which wait for nobody once it
	// holds the lock, run to their end, as those of a batch do: the
	// driver watches a statement's context on a goroutine of its own,
	// one per statement, a tenth of a write's CPU (BenchmarkCallWrites).
	// A write whose context ended meanwhile is committed and answered, as
	// one that ended during COMMIT is.
	if err := fn(wtx{w: w, ctx: context.WithoutCancel(ctx)}); err != nil {
		w.rollback(ctx)
		return mapErr(ctx, err)
	}
	if err := w.commit(ctx); err != nil {
		w.rollback(ctx) // no-op when SQLite already ended it
		return mapErr(ctx, err)
	}
	s.stats.commits.Add(1)
	s.stats.batched.Add(1)
	return nil
}
