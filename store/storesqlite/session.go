package storesqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// Sessions are an append-only journal (session_journal, one row per
// append: seq is its first item's revision, n its number of items) with a sessions row holding the revision that appends
// CAS on, and snapshots keyed by the revision they cover.

// SessionAppend implements [store.Store].
func (s *Store) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	if err := validate(p); err != nil {
		return 0, err
	}
	newRev := p.ExpectedRevision + int64(len(p.Items))
	err := s.write(ctx, func(tx querier) error {
		if p.Fence != nil {
			if _, err := checkFence(ctx, tx, p.Tenant, p.Fence); err != nil {
				return err
			}
		}
		now := micros(s.now())
		var (
			res sql.Result
			err error
		)
		if p.ExpectedRevision == 0 {
			res, err = tx.ExecContext(ctx, `INSERT INTO sessions (tenant, session_id, revision, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, p.Tenant, p.SessionID, newRev, now, now)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE sessions SET revision = ?, updated_at = ?
				WHERE tenant = ? AND session_id = ? AND revision = ?`, newRev, now, p.Tenant, p.SessionID, p.ExpectedRevision)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			actual, err := sessionRevision(ctx, tx, p.Tenant, p.SessionID)
			if err != nil {
				return err
			}
			return &store.ConflictError{Kind: "session", ID: p.SessionID, Expected: p.ExpectedRevision, Actual: actual}
		}
		// One row for the whole append (see migrations/0003).
		row := journal.Join(p.Items)
		_, err = tx.ExecContext(ctx, `INSERT INTO session_journal (tenant, session_id, seq, run_id, turn, n, crc, item)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.Tenant, p.SessionID, p.ExpectedRevision+1, p.RunID, p.Turn, len(p.Items),
			journal.Sum([]byte(row)), row)
		return err
	})
	if err != nil {
		return 0, wrap("append to session "+p.SessionID, err)
	}
	return newRev, nil
}

// sessionRevision reads a session's revision inside tx; 0 if it has none.
func sessionRevision(ctx context.Context, tx querier, tenant, id string) (int64, error) {
	var rev int64
	err := tx.QueryRowContext(ctx, `SELECT revision FROM sessions WHERE tenant = ? AND session_id = ?`, tenant, id).Scan(&rev)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return rev, err
}

// sessionLoadQuery reads the journal rows of a session that hold its
// items from a seq (the row holding that item, and those after it) up to a
// revision. Both bounds are ranges of the
// primary key, so a load of the last N items reads those rows only,
// whatever the session's length (TestSessionLoadPlan).
const sessionLoadQuery = `SELECT seq, run_id, turn, n, crc, item FROM session_journal
	WHERE tenant = ? AND session_id = ? AND seq <= ? AND seq >= COALESCE((SELECT MAX(seq) FROM session_journal
		WHERE tenant = ? AND session_id = ? AND seq <= ?), 0)
	ORDER BY seq`

// SessionLoad implements [store.Store]. It reads in one snapshot of the
// database, so the revision, snapshot and entries agree.
func (s *Store) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	st := &store.SessionState{Tenant: p.Tenant, SessionID: p.SessionID, Entries: []store.SessionEntry{}}
	err := s.read(ctx, func(tx querier) error {
		var err error
		if st.Revision, err = sessionRevision(ctx, tx, p.Tenant, p.SessionID); err != nil {
			return err
		}
		if p.AsOf > st.Revision {
			return &store.InvalidError{Field: "AsOf",
				Reason: fmt.Sprintf("%d exceeds the journal revision %d of session %s", p.AsOf, st.Revision, p.SessionID)}
		}
		if p.AsOf > 0 {
			st.Revision = p.AsOf
		}
		if st.Revision == 0 {
			return nil
		}
		d := decoder{kind: "session", id: p.SessionID}
		after := st.Revision - int64(p.Last) // entries after it are loaded
		if p.Last == 0 || p.WithSnapshot {
			// The latest snapshot at or below the revision; with Last,
			// only one that covers some of the last Last revisions.
			cover := int64(-1)
			if p.Last > 0 {
				cover = after
			}
			var data sql.NullString
			_, err = queryOne(one(tx.QueryContext(ctx, `SELECT revision, data FROM session_snapshots
				WHERE tenant = ? AND session_id = ? AND revision <= ? AND revision > ? ORDER BY revision DESC LIMIT 1`,
				p.Tenant, p.SessionID, st.Revision, cover)),
				func(sc scanner) error {
					if err := sc.Scan(&st.SnapshotRevision, &data); err != nil {
						return d.scanErr(err)
					}
					st.Snapshot = d.reqJSON("snapshot", data)
					return d.result()
				})
			if err != nil {
				return err
			}
			if p.Last == 0 || st.Snapshot != nil {
				after = st.SnapshotRevision
			}
		}
		after = max(after, 0)
		// The rows holding the items after `after` up to the revision (an
		// append can straddle `after`): a range of the primary key.
		rows, err := tx.QueryContext(ctx, sessionLoadQuery, p.Tenant, p.SessionID, st.Revision, p.Tenant, p.SessionID, after+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		if n := st.Revision - after; n > 0 {
			st.Entries = make([]store.SessionEntry, 0, n)
		}
		next := after + 1 // the seq the next entry must have
		for rows.Next() {
			var (
				seq, n int64
				runID  string
				turn   int
				crc    sql.NullInt64
				row    []byte
			)
			if err := rows.Scan(&seq, &runID, &turn, &n, &crc, &row); err != nil {
				return d.scanErr(err)
			}
			var sum *int64
			if crc.Valid {
				sum = &crc.Int64
			}
			items, err := journal.Split(row, int(n), sum)
			if err != nil {
				d.fail("journal row %d: %v", seq, err)
				return d.result()
			}
			for i, it := range items {
				if s := seq + int64(i); s >= next && s <= st.Revision {
					if s != next {
						d.fail("journal has no item %d", next)
						return d.result()
					}
					st.Entries = append(st.Entries, store.SessionEntry{Seq: s, RunID: runID, Turn: turn, Item: it})
					next++
				}
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if next != st.Revision+1 {
			d.fail("journal ends at item %d, want %d", next-1, st.Revision)
			return d.result()
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap("load session "+p.SessionID, err)
	}
	return st, nil
}

// SessionSnapshotPut implements [store.Store].
func (s *Store) SessionSnapshotPut(ctx context.Context, p *store.SessionSnapshotPutParams) error {
	if err := validate(p); err != nil {
		return err
	}
	err := s.write(ctx, func(tx querier) error {
		rev, err := sessionRevision(ctx, tx, p.Tenant, p.SessionID)
		if err != nil {
			return err
		}
		if p.Revision > rev {
			return &store.InvalidError{Field: "Revision",
				Reason: fmt.Sprintf("%d exceeds the journal revision %d of session %s", p.Revision, rev, p.SessionID)}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO session_snapshots (tenant, session_id, revision, data, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, p.Tenant, p.SessionID, p.Revision, string(p.Data), micros(s.now()))
		return err
	})
	return wrap("put snapshot of session "+p.SessionID, err)
}
