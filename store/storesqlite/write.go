package storesqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/actoviq/actoviq-go/store"
)

// RunWrite implements [store.Store]. The fence check, the run's revision
// CAS, the ledger CASes and the event sequence are all decided inside one
// BEGIN IMMEDIATE transaction together with the writes; any failure rolls
// all of it back.
//
// The fence is a condition of the first write statement (AND EXISTS over
// the claim row) rather than a separate read: the write lock is held from
// BEGIN to COMMIT, so checking it once, in the first statement, covers the
// whole transaction, and a ledger transition is a single UPDATE. When a
// conditional statement changes nothing, the cause (fence, missing run,
// revision) is read in the same transaction for the error.
//
// Events are numbered after the run's largest stored seq (the write lock
// serialises writers): a write that changes only the ledger does not
// rewrite the run row, whose checkpoint can be large.
func (s *Store) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var res struct {
		store.RunWriteResult
		logSeq int64 // the log row this write added, 0 if none
		folded bool  // the write's records went in one events row
		tail   int   // and so many more in one row each (eventrow.Tail)
	}
	nLedgerEvents := 0
	for _, w := range p.Ledger {
		if w.Event != nil {
			nLedgerEvents++
		}
	}
	err := s.write(ctx, func(tx querier) error {
		res.RunWriteResult, res.logSeq, res.folded, res.tail = store.RunWriteResult{}, 0, false, 0
		now := micros(s.now())
		folded, err := foldWrite(p, now)
		if err != nil {
			return err
		}
		fence := p.Fence // still to be enforced by the next write statement
		cond, fargs := fenceCond(p.Tenant, fence)
		// whyNot explains a conditional statement that changed nothing.
		whyNot := func(orElse func() error) error {
			if fence != nil {
				if _, err := checkFence(ctx, tx, p.Tenant, fence); err != nil {
					return err
				}
			}
			return orElse()
		}
		n := int64(len(p.Events) + nLedgerEvents)
		var lastSeq int64 // the run's largest event seq before this write
		// Ledger transitions, each with its event, and nothing else (the
		// hot path: a call's started write, alone or carrying the call
		// before's committed record): each record takes its number inside
		// its INSERT, after the one before it, one statement fewer.
		inInsert := folded == nil && n > 0 && int(n) == len(p.Ledger) && p.Run == nil && len(p.Events) == 0
		if n > 0 && !inInsert {
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events WHERE tenant = ? AND run_id = ?`,
				p.Tenant, p.RunID).Scan(&lastSeq); err != nil {
				return err
			}
		}
		if u := p.Run; u != nil {
			wait := store.StoredWaitKind(u.Status, u.WaitKind)
			var logSeqInc int64
			if len(u.Append) > 0 {
				logSeqInc = 1
			}
			args := append([]any{string(u.Status), wait, optJSON(u.Checkpoint), u.Meta != nil, optJSON(u.Meta), lastSeq + n,
				len(u.Append), logSeqInc, now, p.Tenant, p.RunID, u.ExpectedRevision}, fargs...)
			var (
				run      store.Run
				meta     sql.NullString
				deadline sql.NullInt64
				created  int64
				logSeq   int64
			)
			found, err := queryOne(one(tx.QueryContext(ctx, `UPDATE runs SET status = ?, wait_kind = ?, checkpoint = ?,
				meta = CASE WHEN ? THEN ? ELSE meta END, revision = revision + 1,
				event_seq = MAX(event_seq, ?), log_len = log_len + ?, log_seq = log_seq + ?, updated_at = ?
				WHERE tenant = ? AND id = ? AND revision = ?`+cond+`
				RETURNING parent_id, session_id, agent_id, agent_digest, meta, deadline, revision, created_at, log_len, log_seq`, args...)),
				func(sc scanner) error {
					return sc.Scan(&run.ParentID, &run.SessionID, &run.AgentID, &run.AgentDigest, &meta, &deadline,
						&run.Revision, &created, &run.LogLen, &logSeq)
				})
			if err != nil {
				return err
			}
			if !found {
				return whyNot(func() error {
					var actual int64
					err := tx.QueryRowContext(ctx, `SELECT revision FROM runs WHERE tenant = ? AND id = ?`, p.Tenant, p.RunID).Scan(&actual)
					if err == sql.ErrNoRows {
						return &store.NotFoundError{Kind: "run", ID: p.RunID}
					}
					if err != nil {
						return err
					}
					return &store.ConflictError{Kind: "run", ID: p.RunID, Expected: u.ExpectedRevision, Actual: actual}
				})
			}
			if len(u.Append) > 0 {
				if err := appendLog(ctx, tx, p.Tenant, p.RunID, logSeq, int64(run.LogLen-len(u.Append)), u.Append); err != nil {
					return err
				}
				res.logSeq = logSeq
			}
			d := decoder{kind: "run", id: p.RunID}
			run.Tenant, run.ID, run.Status, run.WaitKind = p.Tenant, p.RunID, u.Status, wait
			run.Checkpoint = cloneJSON(u.Checkpoint)
			run.Meta = d.json("meta", meta)
			run.Deadline = fromOptMicros(deadline)
			run.EventSeq = lastSeq + n
			run.CreatedAt, run.UpdatedAt = fromMicros(created), fromMicros(now)
			if err := d.result(); err != nil {
				return err
			}
			res.Run, fence = &run, nil
		}
		if folded != nil {
			res.Ledger, res.Events, err = writeFolded(ctx, tx, p, folded, now, lastSeq, fence)
			if err != nil {
				return err
			}
			res.folded, res.tail = true, folded.tail
		} else if inInsert {
			res.Ledger, res.Events, err = entryRecords(ctx, tx, now, p, fence)
			if err != nil {
				return err
			}
		} else {
			if n > 0 {
				res.Events = make([]*store.EventRecord, 0, n)
			}
			// The first ledger write carries the fence; the run's existence
			// follows from the foreign key or is checked when a write fails.
			var ledgerEvents []*store.EventRecord
			if len(p.Ledger) > 0 {
				res.Ledger = make([]*store.LedgerEntry, len(p.Ledger))
				seq := lastSeq + int64(len(p.Events))
				for i := range p.Ledger {
					w := &p.Ledger[i]
					var (
						e   *store.LedgerEntry
						ev  *store.EventRecord
						err error
					)
					if w.Event != nil {
						next := int64(0)
						if !inInsert {
							seq++
							next = seq
						}
						e, ev, err = entryRecord(ctx, tx, now, next, w, fence)
						ledgerEvents = append(ledgerEvents, ev)
					} else {
						e, err = ledgerRow(ctx, tx, now, w, fence)
					}
					if err != nil {
						return err
					}
					res.Ledger[i], fence = e, nil
				}
			}
			if len(p.Events) > 0 {
				if fence != nil {
					// An events-only write: check the fence; the run's
					// existence follows from the foreign key.
					if _, err := checkFence(ctx, tx, p.Tenant, fence); err != nil {
						return err
					}
				}
				evs, err := insertEvents(ctx, tx, p.Tenant, p.RunID, lastSeq+1, now, p.Events)
				if isForeignKey(err) {
					return &store.NotFoundError{Kind: "run", ID: p.RunID}
				}
				if err != nil {
					return err
				}
				res.Events = append(res.Events, evs...)
			}
			res.Events = append(res.Events, ledgerEvents...)
		}
		if p.Release {
			// The claim is given up with the write, as ClaimRelease would;
			// the fence was checked above, under the write lock.
			if _, err := tx.ExecContext(ctx, `UPDATE claims SET expires_at = MIN(expires_at, ?), held = 0
				WHERE tenant = ? AND key = ? AND holder = ? AND epoch = ?`,
				now, p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("write run "+p.RunID, err)
	}
	rows := int64(len(p.Ledger) + len(p.Events))
	if res.folded {
		// One events row for the records (and one for each tail
		// record); the ledger writes without an event have their ledger
		// table rows.
		rows = 1 + int64(res.tail)
		for _, w := range p.Ledger {
			if w.Event == nil {
				rows++
			}
		}
	}
	if p.Run != nil {
		rows++
		if len(p.Run.Append) > 0 {
			rows++
		}
	}
	s.stats.runWrites.Add(1)
	s.stats.rows.Add(rows)
	if res.logSeq > 0 {
		s.compactLater(p.Tenant, p.RunID, res.logSeq)
	}
	return &res.RunWriteResult, nil
}

// fenceCond returns the SQL condition (to append after a WHERE clause) and
// its arguments that hold only while f's claim has f's holder and epoch;
// nothing when f is nil.
func fenceCond(tenant string, f *store.Fence) (string, []any) {
	if f == nil {
		return "", nil
	}
	return ` AND EXISTS (SELECT 1 FROM claims WHERE tenant = ? AND key = ? AND holder = ? AND epoch = ? AND held = 1)`,
		[]any{tenant, f.Key, f.Holder, f.Epoch}
}

// runExists returns a NotFoundError when the run does not exist.
func runExists(ctx context.Context, tx querier, tenant, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE tenant = ? AND id = ?`, tenant, id).Scan(&one)
	if err == sql.ErrNoRows {
		return &store.NotFoundError{Kind: "run", ID: id}
	}
	return err
}

// insertValues returns "(?, ..., ?), (...)" for rows rows of cols columns.
func insertValues(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}
