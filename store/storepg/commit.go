package storepg

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/groupcommit"
)

// Group commit of run writes.
//
// A run write that finds no other in flight is sent alone: one run_write
// statement in autocommit. Run writes that arrive while
// Config.CommitLeaders are in flight queue; the next leader sends all of
// them in one pipelined transaction (BEGIN, one run_write per write,
// COMMIT: one round trip, one commit), so N concurrent writers share one
// WAL flush. Several leaders run at once, each on its own connection: the
// server runs one transaction's statements in one backend, so a single
// stream would leave every write of the process to one backend, one after
// another (64 concurrent runs with fsync on, on the loaded 2-core machine
// of docs/measured.md: about 0.6× the throughput of 64 DBOS workflows
// with one stream, about 0.8× with four, alternated runs).
//
// Nothing is weaker than a statement of its own:
//   - a write returns only after the COMMIT that holds it returned;
//   - each write's checks (revision, fence, FOR SHARE on the claim) run in
//     the shared transaction, in queue order, as if committed one by one;
//   - when one write of a batch fails, PostgreSQL aborts the transaction:
//     nothing of it is committed, and the writes of the batch are sent
//     again one by one, in order, each getting the answer it would have
//     had alone;
//   - a batch is ordered by run, so that two batches (of one process or
//     two) take the runs' advisory locks in one order and cannot deadlock
//     over them.

// runWrite is what a queued run write holds, and its answer.
type runWrite struct {
	p     *store.RunWriteParams
	order []int
	la    *ledgerArr
	res   *store.RunWriteResult
}

// pgReq is a queued run write.
type pgReq = groupcommit.Req[*runWrite]

// commitQueue is the store's queue of run writes.
type commitQueue = groupcommit.Queue[*runWrite]

// maxExtraBatches bounds the batches a leader runs after its own write.
const maxExtraBatches = 8

// maxBatch bounds the writes of one transaction.
const maxBatch = 128

// commitLeaders is the number of batches that may run at once: n, or
// by default half the pool's connections, at least 1, at most 4.
func commitLeaders(pool *pgxpool.Pool, n int) int {
	if n > 0 {
		return n
	}
	return min(max(int(pool.Config().MaxConns)/2, 1), 4)
}

func (s *Store) commitQueued(ctx context.Context, p *store.RunWriteParams, order []int, la *ledgerArr) (*store.RunWriteResult, error) {
	w := &runWrite{p: p, order: order, la: la}
	err := s.commits.Do(ctx, w)
	return w.res, err
}

func finish(r *pgReq, res *store.RunWriteResult, err error) {
	r.Val.res = res
	r.Finish(err)
}

// sendBatch runs one batch and finishes its writes; it never returns a
// write to run again.
func (s *Store) sendBatch(live []*pgReq) []*pgReq {
	// The queue hands over only writes whose context is live. A write
	// that releases its claim needs a transaction even alone (its
	// run_write and the release), so it goes the batch's way.
	if len(live) == 1 && !live[0].Val.p.Release {
		s.single(live[0])
		return nil
	}
	slices.SortStableFunc(live, func(a, b *pgReq) int {
		if c := strings.Compare(a.Val.p.Tenant, b.Val.p.Tenant); c != 0 {
			return c
		}
		return strings.Compare(a.Val.p.RunID, b.Val.p.RunID)
	})
	// The transaction belongs to the whole batch: no caller's context may
	// cut it short.
	ctx := context.WithoutCancel(live[0].Ctx)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for _, r := range live {
			finish(r, nil, err)
		}
		return nil
	}
	now := s.clock.Now()
	calls := make([]*call, len(live))
	for i, r := range live {
		calls[i] = newCall(r.Val.p, r.Val.order, r.Val.la, now)
	}
	if s.sendBatchRaw(ctx, conn, live, calls) {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	stmts := len(live) + 2
	for i, r := range live {
		b.Queue(s.q(runWriteCall), calls[i].args()...)
		if p := r.Val.p; p.Release {
			b.Queue(s.q(releaseClaim), p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch, calls[i].now)
			stmts++
		}
	}
	b.Queue("COMMIT")
	s.stats.statements.Add(int64(stmts))
	br := conn.SendBatch(ctx, b)
	results := make([]*store.RunWriteResult, len(live))
	errs := make([]error, len(live))
	failed := -1
	_, err = br.Exec()
	if err == nil {
		for i, c := range calls {
			results[i], errs[i] = c.scan(br.QueryRow())
			if c.p.Release {
				if _, rerr := br.Exec(); errs[i] == nil {
					errs[i] = rerr
				}
			}
			if errs[i] != nil && failed < 0 {
				failed = i
			}
		}
	}
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	s.settleBatch(ctx, conn, live, results, errs, failed, tag, err)
	return nil
}

// settleBatch finishes the writes of a batch that was sent on conn (its
// transaction's COMMIT answered tag, or the batch failed with err; errs
// holds each write's own error, the first at failed, or -1) and gives
// conn back.
func (s *Store) settleBatch(ctx context.Context, conn *pgxpool.Conn, live []*pgReq, results []*store.RunWriteResult, errs []error,
	failed int, tag pgconn.CommandTag, err error) {
	if err == nil && failed < 0 && tag.String() == "COMMIT" {
		conn.Release()
		s.stats.commits.Add(1)
		s.stats.batched.Add(int64(len(live)))
		for i, r := range live {
			finish(r, results[i], nil)
		}
		return
	}
	if err == nil && tag.String() == "COMMIT" {
		// Committed, but an answer did not decode: the writes are stored;
		// the one whose answer failed reports it, as it would alone.
		conn.Release()
		s.stats.commits.Add(1)
		s.stats.batched.Add(int64(len(live)))
		for i, r := range live {
			finish(r, results[i], errs[i])
		}
		return
	}
	if err == nil && failed < 0 {
		err = errors.New("group commit: COMMIT answered " + tag.String())
	}
	var pe *pgconn.PgError
	if conn.Conn().IsClosed() || (failed < 0 && !errors.As(err, &pe)) {
		// The connection broke: whether the transaction committed is not
		// known. Close it (never return it to the pool) and report the
		// error to every write, as a lost connection during a statement of
		// its own would.
		_ = conn.Hijack().Close(ctx)
		if err == nil {
			err = errs[failed]
		}
		for _, r := range live {
			finish(r, nil, err)
		}
		return
	}
	// The server answered but did not commit: nothing of the batch is
	// stored. End the failed transaction before the connection goes back.
	if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
		_ = conn.Hijack().Close(ctx)
	} else {
		conn.Release()
	}
	// Run the writes of the batch one by one, in order: each gets the
	// answer it would have had alone (the failure is rare: a conflict, a
	// fence, a full disk).
	for _, r := range live {
		s.single(r)
	}
}

// single sends r alone, as one autocommit statement (a write that
// releases its claim: one transaction of its run_write and the release).
func (s *Store) single(r *pgReq) {
	var res *store.RunWriteResult
	w := r.Val
	err := retryable(r.Ctx, func() (err error) {
		if w.p.Release {
			res, err = s.runWriteReleaseOnce(r.Ctx, w.p, w.order, w.la)
			return err
		}
		res, err = s.runWriteOnce(r.Ctx, w.p, w.order, w.la)
		return err
	})
	finish(r, res, err)
}

// releaseClaim gives a run's claim up after its write, in the write's
// transaction (store.RunWriteParams.Release), as ClaimRelease does.
// run_write checked the fence and holds the claim row FOR SHARE until the
// commit, so the row is the fence's.
const releaseClaim = `UPDATE {{schema}}.claims SET expires_at = $5, held = false
	WHERE tenant = $1 AND key = $2 AND holder = $3 AND epoch = $4`

// runWriteReleaseOnce is runWriteOnce of a write that releases its claim:
// run_write and the release in one transaction.
func (s *Store) runWriteReleaseOnce(ctx context.Context, p *store.RunWriteParams, order []int, la *ledgerArr) (*store.RunWriteResult, error) {
	var res *store.RunWriteResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		c := newCall(p, order, la, s.clock.Now())
		s.stats.statements.Add(2)
		r, err := c.scan(tx.QueryRow(ctx, s.q(runWriteCall), c.args()...))
		if err != nil {
			return runWriteErr(p, err)
		}
		if _, err := tx.Exec(ctx, s.q(releaseClaim), p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch, c.now); err != nil {
			return err
		}
		res = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.stats.commits.Add(1)
	return res, nil
}
