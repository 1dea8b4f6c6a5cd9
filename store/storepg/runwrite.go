package storepg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// runUpdate is the run CAS. It runs after eventsInsert in the same
// transaction, so the returned event_seq includes this write's events.
const runUpdate = `
	UPDATE {{schema}}.runs SET status = $4, checkpoint = $5, meta = COALESCE($6, meta),
		revision = revision + 1, updated_at = $7
	WHERE tenant = $1 AND id = $2 AND revision = $3
	RETURNING ` + runCols

// RunWrite implements [store.Store].
//
// The write is one read-committed transaction of two round trips: one
// pipelined batch that starts with BEGIN, then COMMIT. The batch holds, in
// order:
//
//  1. a read of the run's revision (the run must exist);
//  2. with a fence, SELECT ... FOR SHARE of the claim row: while we hold that
//     share lock a takeover (which updates the row) waits for our commit or
//     rollback, so no fenced write can commit after a takeover committed;
//  3. the event append (gapless sequence numbers from the run row's counter);
//  4. the run CAS (UPDATE ... WHERE revision = expected);
//  5. one ledger insert (ON CONFLICT DO NOTHING) or ledger CAS per entry, in
//     call-id order so that concurrent writers lock rows in the same order.
//
// Statements 3 to 5 run speculatively: their results are only kept if 1 and
// 2 passed and every CAS matched; otherwise the transaction is rolled back
// and the first failure is reported (not found, fenced, then conflicts, in
// that order). A CAS that matched no row reads the actual revision in the
// same transaction for the ConflictError.
func (s *Store) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	// Encode outside the retry loop; only the clock is read per attempt.
	order := make([]int, len(p.Ledger))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return strings.Compare(p.Ledger[a].Entry.CallID, p.Ledger[b].Entry.CallID)
	})

	var res *store.RunWriteResult
	err := retryable(ctx, func() error {
		var err error
		res, err = s.runWriteTx(ctx, p, order)
		return err
	})
	if err != nil {
		return nil, mapErr("write run "+p.RunID, err)
	}
	return res, nil
}

// runWriteTx is one attempt: BEGIN travels in the batch, so the write is
// two round trips (the batch, then COMMIT or ROLLBACK). A connection whose
// transaction state is in doubt is closed, never returned to the pool.
func (s *Store) runWriteTx(ctx context.Context, p *store.RunWriteParams, order []int) (res *store.RunWriteResult, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			if _, rerr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				_ = conn.Hijack().Close(context.WithoutCancel(ctx))
				return
			}
		}
		conn.Release()
	}()
	res, err = s.runWrite(ctx, conn, p, order)
	if err != nil {
		return nil, err
	}
	// COMMIT of a transaction that failed answers ROLLBACK, not an error.
	tag, err := conn.Exec(ctx, "COMMIT")
	if err != nil {
		return nil, err
	}
	committed = true
	if tag.String() != "COMMIT" {
		return nil, fmt.Errorf("commit answered %q", tag.String())
	}
	return res, nil
}

// batcher is a connection or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// runWrite queues BEGIN and the write's statements in one batch and reads
// their results; the caller commits or rolls back.
func (s *Store) runWrite(ctx context.Context, tx batcher, p *store.RunWriteParams, order []int) (*store.RunWriteResult, error) {
	now := s.clock.Now()
	res := &store.RunWriteResult{}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(s.q(`SELECT revision FROM {{schema}}.runs WHERE tenant = $1 AND id = $2`), p.Tenant, p.RunID)
	if f := p.Fence; f != nil {
		b.Queue(s.q(`SELECT holder, epoch FROM {{schema}}.claims WHERE tenant = $1 AND key = $2 FOR SHARE`), p.Tenant, f.Key)
	}
	if len(p.Events) > 0 {
		var args []any
		res.Events, args = eventArgs(p.Tenant, p.RunID, p.Events, now)
		b.Queue(s.q(eventsInsert), args...)
	}
	if u := p.Run; u != nil {
		cp := u.Checkpoint
		if cp == nil {
			cp = []byte("{}")
		}
		b.Queue(s.q(runUpdate), p.Tenant, p.RunID, u.ExpectedRevision, string(u.Status), string(cp), jsonArg(u.Meta), now)
	}
	for _, i := range order {
		w := p.Ledger[i]
		args, err := ledgerArgs(w.Entry, now)
		if err != nil {
			return nil, err
		}
		if w.ExpectedRevision == 0 {
			b.Queue(s.q(ledgerInsert), args...)
		} else {
			b.Queue(s.q(ledgerUpdate), append(args, w.ExpectedRevision)...)
		}
	}

	// Read every result in queue order, remembering the first failure of
	// each kind; decide after the batch is closed.
	var (
		notFound   bool
		fenced     *store.FencedError
		runCAS     bool // the run CAS matched no row
		ledgerMiss = -1 // input index of the first ledger CAS that missed
	)
	br := tx.SendBatch(ctx, b)
	err := func() error {
		if _, err := br.Exec(); err != nil { // BEGIN
			return err
		}
		var rev int64
		if err := br.QueryRow().Scan(&rev); errors.Is(err, pgx.ErrNoRows) {
			notFound = true
		} else if err != nil {
			return err
		}
		if f := p.Fence; f != nil {
			var holder string
			var epoch int64
			err := br.QueryRow().Scan(&holder, &epoch)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				fenced = &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch}
			case err != nil:
				return err
			case holder != f.Holder || epoch != f.Epoch:
				fenced = &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch, CurrentHolder: holder, CurrentEpoch: epoch}
			}
		}
		if len(p.Events) > 0 {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			if len(seqs) != len(p.Events) {
				notFound = true // the run row was not there to count on
			} else {
				first := slices.Min(seqs)
				for i, ev := range res.Events {
					ev.Seq = first + int64(i)
				}
			}
		}
		if p.Run != nil {
			run, err := scanRun(br.QueryRow())
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				runCAS = true
			case err != nil:
				return err
			default:
				res.Run = run
			}
		}
		if len(order) > 0 {
			res.Ledger = make([]*store.LedgerEntry, len(p.Ledger))
		}
		for _, i := range order {
			e, err := scanLedger(br.QueryRow())
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				if ledgerMiss < 0 || i < ledgerMiss {
					ledgerMiss = i
				}
			case err != nil:
				return err
			default:
				res.Ledger[i] = e
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}

	switch {
	case notFound:
		return nil, &store.NotFoundError{Kind: "run", ID: p.RunID}
	case fenced != nil:
		return nil, fenced
	case runCAS:
		var actual int64
		if err := tx.QueryRow(ctx, s.q(`SELECT revision FROM {{schema}}.runs WHERE tenant = $1 AND id = $2`),
			p.Tenant, p.RunID).Scan(&actual); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		return nil, &store.ConflictError{Kind: "run", ID: p.RunID, Expected: p.Run.ExpectedRevision, Actual: actual}
	case ledgerMiss >= 0:
		w := p.Ledger[ledgerMiss]
		var actual int64
		if err := tx.QueryRow(ctx, s.q(`SELECT revision FROM {{schema}}.ledger WHERE tenant = $1 AND run_id = $2 AND call_id = $3`),
			p.Tenant, p.RunID, w.Entry.CallID).Scan(&actual); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		return nil, &store.ConflictError{Kind: "ledger", ID: p.RunID + "/" + w.Entry.CallID, Expected: w.ExpectedRevision, Actual: actual}
	}
	return res, nil
}
