package storepg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/actoviq/actoviq-go/store"
)

// Group commit of run writes.
//
// A run write that finds no other in flight is sent alone: one run_write
// statement in autocommit. Run writes that arrive while one is in flight
// queue; the next leader sends all of them in one pipelined transaction
// (BEGIN, one run_write per write, COMMIT: one round trip, one commit), so
// N concurrent writers share one WAL flush.
//
// Nothing is weaker than a statement of its own:
//   - a write returns only after the COMMIT that holds it returned;
//   - each write's checks (revision, fence, FOR SHARE on the claim) run in
//     the shared transaction, in queue order, as if committed one by one;
//   - when one write of a batch fails, PostgreSQL aborts the transaction:
//     nothing of it is committed, and the writes of the batch are sent
//     again one by one, in order, each getting the answer it would have
//     had alone;
//   - a batch is ordered by run, so that two batches (of two processes)
//     take the runs' advisory locks in one order and cannot deadlock.

type pgReq struct {
	ctx   context.Context
	p     *store.RunWriteParams
	order []int
	la    *ledgerArr
	res   *store.RunWriteResult
	err   error
	done  chan struct{}
	lead  chan struct{}
}

type commitQueue struct {
	mu      sync.Mutex
	queue   []*pgReq
	leading bool
}

// maxExtraBatches bounds the batches a leader runs after its own write.
const maxExtraBatches = 8

// maxBatch bounds the writes of one transaction.
const maxBatch = 128

func (s *Store) commitQueued(ctx context.Context, p *store.RunWriteParams, order []int, la *ledgerArr) (*store.RunWriteResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := &pgReq{ctx: ctx, p: p, order: order, la: la, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	q := &s.commits
	q.mu.Lock()
	q.queue = append(q.queue, req)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	if !lead {
		select {
		case <-req.done:
			return req.res, req.err
		case <-req.lead:
		}
	}
	s.lead(req)
	<-req.done
	return req.res, req.err
}

// lead runs batches until self is done and the queue is empty, then ends
// the lead. Handing the lead to another goroutine costs a wake-up, and on
// a loaded machine that gap leaves the database idle while writes wait;
// so the leader keeps going, but after maxExtraBatches batches beyond its
// own it hands the lead to the oldest queued write, so that its caller is
// not held back by others' writes for long.
func (s *Store) lead(self *pgReq) {
	q := &s.commits
	extra := 0 // batches run after self's
	for {
		q.mu.Lock()
		done := false
		select {
		case <-self.done:
			done = true
		default:
		}
		if done && (len(q.queue) == 0 || extra >= maxExtraBatches) {
			if len(q.queue) > 0 {
				q.queue[0].lead <- struct{}{}
			} else {
				q.leading = false
			}
			q.mu.Unlock()
			return
		}
		if done {
			extra++
		}
		n := min(len(q.queue), maxBatch)
		batch := q.queue[:n:n]
		q.queue = append([]*pgReq(nil), q.queue[n:]...)
		q.mu.Unlock()
		s.sendBatch(batch)
	}
}

func (r *pgReq) finish(res *store.RunWriteResult, err error) {
	r.res, r.err = res, err
	close(r.done)
}

// sendBatch runs one batch and finishes its writes.
func (s *Store) sendBatch(batch []*pgReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.finish(nil, err) // never sent
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		s.single(live[0])
		return
	}
	slices.SortStableFunc(live, func(a, b *pgReq) int {
		if c := strings.Compare(a.p.Tenant, b.p.Tenant); c != 0 {
			return c
		}
		return strings.Compare(a.p.RunID, b.p.RunID)
	})
	// The transaction belongs to the whole batch: no caller's context may
	// cut it short.
	ctx := context.WithoutCancel(live[0].ctx)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for _, r := range live {
			r.finish(nil, err)
		}
		return
	}
	now := s.clock.Now()
	calls := make([]*call, len(live))
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for i, r := range live {
		calls[i] = newCall(r.p, r.order, r.la, now)
		b.Queue(s.q(runWriteCall), calls[i].args...)
	}
	b.Queue("COMMIT")
	s.stats.statements.Add(int64(len(live) + 2))
	br := conn.SendBatch(ctx, b)
	results := make([]*store.RunWriteResult, len(live))
	errs := make([]error, len(live))
	failed := -1
	_, err = br.Exec()
	if err == nil {
		for i, c := range calls {
			results[i], errs[i] = c.scan(br.QueryRow())
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
	if err == nil && failed < 0 && tag.String() == "COMMIT" {
		conn.Release()
		s.stats.commits.Add(1)
		s.stats.batched.Add(int64(len(live)))
		for i, r := range live {
			r.finish(results[i], nil)
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
			r.finish(results[i], errs[i])
		}
		return
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
			r.finish(nil, err)
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

// single sends r alone, as one autocommit statement.
func (s *Store) single(r *pgReq) {
	var res *store.RunWriteResult
	err := retryable(r.ctx, func() (err error) {
		res, err = s.runWriteOnce(r.ctx, r.p, r.order, r.la)
		return err
	})
	r.finish(res, err)
}
