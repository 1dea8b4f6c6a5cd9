package storepg

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/groupcommit"
)

// Group commit of run creations.
//
// A root run's creation is one statement (its row, first log row, claim
// and first events) and, alone, one commit. Creations that arrive while
// one is in flight queue, and the next leader sends them in one
// pipelined transaction (BEGIN, one create per run in run order,
// COMMIT): a fleet that starts 64 runs at once pays a few commits for
// them, not 64 that each wait for a connection behind the run writes'
// transactions. As for run writes (commit.go), nothing is weaker than a
// statement of its own: each creation returns after the COMMIT that holds
// it; a create that finds its run already there answers so and stores
// nothing, as alone; when a statement fails (a claim already under the
// key, a full disk) the transaction is rolled back and the creations of
// the batch are sent again one by one, each getting the answer it would
// have had alone; a broken connection is reported to every creation of
// the batch (their outcome unknown), as to a statement of its own.
// Children are not queued: their creation locks the parent's row first
// (RunCreate).

// runCreate is a queued creation and its answer.
type runCreate struct {
	query string
	args  []any
	run   *store.Run
}

type createReq = groupcommit.Req[*runCreate]

// createQueued creates a root run through the store's creation queue.
func (s *Store) createQueued(ctx context.Context, query string, args []any) (*store.Run, error) {
	c := &runCreate{query: query, args: args}
	if s.creates.Run == nil { // a Store made without newStore (tests of old schemas)
		err := retryable(ctx, func() (err error) {
			c.run, err = scanRun(s.pool.QueryRow(ctx, c.query, c.args...))
			return err
		})
		return c.run, err
	}
	err := s.creates.Do(ctx, c)
	return c.run, err
}

// createOne sends a creation alone: one autocommit statement.
func (s *Store) createOne(r *createReq) {
	c := r.Val
	err := retryable(r.Ctx, func() (err error) {
		c.run, err = scanRun(s.pool.QueryRow(r.Ctx, c.query, c.args...))
		return err
	})
	r.Finish(err)
}

// sendCreates runs one batch of creations and finishes them.
func (s *Store) sendCreates(live []*createReq) []*createReq {
	if len(live) == 1 {
		s.createOne(live[0])
		return nil
	}
	// In run order, so that two batches insert their runs' keys in one
	// order (args[0], args[1]: tenant, run id).
	slices.SortStableFunc(live, func(a, b *createReq) int {
		if c := strings.Compare(a.Val.args[0].(string), b.Val.args[0].(string)); c != 0 {
			return c
		}
		return strings.Compare(a.Val.args[1].(string), b.Val.args[1].(string))
	})
	ctx := context.WithoutCancel(live[0].Ctx)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for _, r := range live {
			r.Finish(err)
		}
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, r := range live {
		b.Queue(r.Val.query, r.Val.args...)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	errs := make([]error, len(live))
	var failed error // a statement's own error: the server aborted the transaction
	_, err = br.Exec()
	if err == nil {
		for i, r := range live {
			r.Val.run, errs[i] = scanRun(br.QueryRow())
			var pe *pgconn.PgError
			if errs[i] != nil && errors.As(errs[i], &pe) && failed == nil {
				failed = errs[i]
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
	if err == nil && failed == nil && tag.String() == "COMMIT" {
		conn.Release()
		for i, r := range live {
			r.Finish(errs[i]) // nil, or the run exists already (no row), or an answer that did not decode
		}
		return nil
	}
	if err == nil {
		err = failed
	}
	var pe *pgconn.PgError
	if conn.Conn().IsClosed() || err == nil || !errors.As(err, &pe) {
		// The connection broke: whether the transaction committed is not
		// known; the connection is not returned to the pool.
		_ = conn.Hijack().Close(ctx)
		if err == nil {
			err = errors.New("group commit of run creations: COMMIT answered " + tag.String())
		}
		for _, r := range live {
			r.Val.run = nil
			r.Finish(err)
		}
		return nil
	}
	// The server answered but did not commit: nothing of the batch is
	// stored. End the transaction, then send each creation alone.
	if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
		_ = conn.Hijack().Close(ctx)
	} else {
		conn.Release()
	}
	for _, r := range live {
		r.Val.run = nil
		s.createOne(r)
	}
	return nil
}
