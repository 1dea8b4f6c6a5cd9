package storepg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// An append is one statement, hence one transaction: a data-modifying CTE
// moves the session's revision (the CAS) and the main INSERT writes the
// items only from the CTE's returned row. When the CAS fails the CTE
// returns nothing and nothing is inserted.
//
// The first append (expected revision 0) inserts the sessions row with
// ON CONFLICT DO NOTHING: of two racing first appends, the second waits for
// the first's row and then inserts nothing, so exactly one wins.
const (
	sessionAppendFirst = `
		WITH s AS (
			INSERT INTO {{schema}}.sessions (tenant, session_id, revision) VALUES ($1, $2, $3)
			ON CONFLICT (tenant, session_id) DO NOTHING
			RETURNING revision
		)
		INSERT INTO {{schema}}.session_entries (tenant, session_id, seq, run_id, turn, n, crc, item)
		SELECT $1, $2, s.revision - $3 + 1, $4, $6, $3, $7, $5::text
		FROM s`
	sessionAppendNext = `
		WITH s AS (
			UPDATE {{schema}}.sessions SET revision = revision + $3
			WHERE tenant = $1 AND session_id = $2 AND revision = $6
			RETURNING revision
		)
		INSERT INTO {{schema}}.session_entries (tenant, session_id, seq, run_id, turn, n, crc, item)
		SELECT $1, $2, s.revision - $3 + 1, $4, $7, $3, $8, $5::text
		FROM s`
)

func (s *Store) sessionRevision(ctx context.Context, tenant, id string) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, s.q(`SELECT revision FROM {{schema}}.sessions WHERE tenant = $1 AND session_id = $2`),
		tenant, id).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return rev, err
}

// SessionAppend implements [store.Store]. It returns the new revision.
func (s *Store) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	if err := store.Check(p); err != nil {
		return 0, err
	}
	items := journal.Join(p.Items) // one row per append (migrations/004)
	sum := journal.Sum([]byte(items))
	n := int64(len(p.Items))
	var affected int64
	appendIn := func(q interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}) error {
		var (
			tag pgconn.CommandTag
			err error
		)
		if p.ExpectedRevision == 0 {
			tag, err = q.Exec(ctx, s.q(sessionAppendFirst), p.Tenant, p.SessionID, n, p.RunID, items, p.Turn, sum)
		} else {
			tag, err = q.Exec(ctx, s.q(sessionAppendNext), p.Tenant, p.SessionID, n, p.RunID, items, p.ExpectedRevision, p.Turn, sum)
		}
		affected = tag.RowsAffected()
		return err
	}
	var err error
	if p.Fence == nil {
		err = mapErr("append to session "+p.SessionID, retryable(ctx, func() error { return appendIn(s.pool) }))
	} else {
		// The claim row is share-locked until commit, so a takeover waits
		// for this append and a stale holder cannot append after one.
		err = s.inTx(ctx, "append to session "+p.SessionID, func(tx pgx.Tx) error {
			var holder string
			var epoch int64
			var held bool
			err := tx.QueryRow(ctx, s.q(`SELECT holder, epoch, held FROM {{schema}}.claims WHERE tenant = $1 AND key = $2 FOR SHARE`),
				p.Tenant, p.Fence.Key).Scan(&holder, &epoch, &held)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && (holder != p.Fence.Holder || epoch != p.Fence.Epoch || !held)) {
				return &store.FencedError{Key: p.Fence.Key, Holder: p.Fence.Holder, Epoch: p.Fence.Epoch, CurrentHolder: holder, CurrentEpoch: epoch,
					Released: err == nil && holder == p.Fence.Holder && epoch == p.Fence.Epoch}
			}
			if err != nil {
				return err
			}
			return appendIn(tx)
		})
	}
	if err != nil {
		return 0, err
	}
	if affected != 1 {
		actual, err := s.sessionRevision(ctx, p.Tenant, p.SessionID)
		if err != nil {
			return 0, mapErr("append to session "+p.SessionID, err)
		}
		return 0, &store.ConflictError{Kind: "session", ID: p.SessionID, Expected: p.ExpectedRevision, Actual: actual}
	}
	return p.ExpectedRevision + n, nil
}

// sessionLoadEntries reads the journal rows of a session that hold its
// items from a seq ($3: the row holding that item, and those after it) up
// to a revision ($4). Both bounds are ranges of the primary key, so a load
// of the last N items reads those rows only, whatever the session's length
// (TestSessionLoadPlan).
const sessionLoadEntries = `SELECT seq, run_id, turn, n, crc, item FROM {{schema}}.session_entries
	WHERE tenant = $1 AND session_id = $2 AND seq <= $4
	  AND seq >= COALESCE((SELECT max(seq) FROM {{schema}}.session_entries
		WHERE tenant = $1 AND session_id = $2 AND seq <= $3), 0)
	ORDER BY seq`

// SessionLoad implements [store.Store]. It reads the session's revision R
// (or AsOf) and the latest snapshot at or below it first, then the entries
// after the snapshot up to R: appends only add entries above R, so the two
// reads are consistent without a transaction.
func (s *Store) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	st := &store.SessionState{Tenant: p.Tenant, SessionID: p.SessionID}
	var (
		head     int64
		snapRev  *int64
		snapData *string
	)
	// $3: the revision the snapshot may cover at most (0: none is read).
	snapAt := p.AsOf
	if snapAt == 0 {
		snapAt = math.MaxInt64
	}
	// $4: the snapshot must cover a revision above R-$4 (with Last and
	// WithSnapshot: one of the last Last revisions).
	cover := int64(math.MaxInt64)
	switch {
	case p.Last > 0 && !p.WithSnapshot:
		snapAt = -1
	case p.Last > 0:
		cover = int64(p.Last)
	}
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT s.revision, sn.revision, sn.data
		FROM {{schema}}.sessions s
		LEFT JOIN LATERAL (
			SELECT revision, data FROM {{schema}}.session_snapshots
			WHERE tenant = s.tenant AND session_id = s.session_id AND revision <= LEAST(s.revision, $3)
			  AND revision > LEAST(s.revision, $3) - $4
			ORDER BY revision DESC LIMIT 1
		) sn ON true
		WHERE s.tenant = $1 AND s.session_id = $2`), p.Tenant, p.SessionID, snapAt, cover).Scan(&head, &snapRev, &snapData)
	if errors.Is(err, pgx.ErrNoRows) {
		err, head = nil, 0
	}
	if err != nil {
		return nil, mapErr("load session "+p.SessionID, err)
	}
	if p.AsOf > head {
		return nil, &store.InvalidError{Field: "AsOf",
			Reason: fmt.Sprintf("%d exceeds the journal revision %d of session %s", p.AsOf, head, p.SessionID)}
	}
	st.Revision = head
	if p.AsOf > 0 {
		st.Revision = p.AsOf
	}
	if st.Revision == 0 {
		return st, nil
	}
	if snapRev != nil {
		d := &decoder{kind: "session snapshot", id: p.SessionID}
		st.SnapshotRevision = *snapRev
		st.Snapshot = d.json("data", snapData)
		if err := d.result(); err != nil {
			return nil, err
		}
	}
	after := st.SnapshotRevision // entries after it are loaded
	if p.Last > 0 && snapRev == nil {
		after = max(st.Revision-int64(p.Last), 0)
	}
	// The rows holding the entries after `after` (an append can straddle
	// it) up to the revision.
	rows, err := s.pool.Query(ctx, s.q(sessionLoadEntries), p.Tenant, p.SessionID, after+1, st.Revision)
	if err != nil {
		return nil, mapErr("load session "+p.SessionID, err)
	}
	defer rows.Close()
	st.Entries = make([]store.SessionEntry, 0, st.Revision-after)
	next := after + 1 // the seq the next entry must have
	for rows.Next() {
		var (
			seq     int64
			turn, n int32
			crc     *int64
			runID   *string
			item    []byte // the row's bytes, once: the entries are slices of it
		)
		if err := rows.Scan(&seq, &runID, &turn, &n, &crc, &item); err != nil {
			return nil, mapErr("load session "+p.SessionID, err)
		}
		d := &decoder{kind: "session", id: fmt.Sprintf("%s#%d", p.SessionID, seq)}
		rid := d.str("run_id", runID)
		if item == nil {
			d.fail("column item: unexpected NULL")
		}
		if err := d.result(); err != nil {
			return nil, err
		}
		items, err := journal.Split(item, int(n), crc)
		if err != nil {
			return nil, &store.DataError{Kind: "session", ID: d.id, Err: err}
		}
		for i, it := range items {
			if s := seq + int64(i); s >= next && s <= st.Revision {
				if s != next {
					return nil, &store.DataError{Kind: "session", ID: p.SessionID, Err: fmt.Errorf("journal has no item %d", next)}
				}
				st.Entries = append(st.Entries, store.SessionEntry{Seq: s, RunID: rid, Turn: int(turn), Item: it})
				next++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("load session "+p.SessionID, err)
	}
	if int64(len(st.Entries)) != st.Revision-after {
		return nil, &store.DataError{Kind: "session", ID: p.SessionID,
			Err: fmt.Errorf("journal has %d entries after revision %d, want %d", len(st.Entries), after, st.Revision-after)}
	}
	if len(st.Entries) == 0 {
		st.Entries = nil
	}
	return st, nil
}

// SessionSnapshotPut implements [store.Store]. The insert only happens when
// the session's journal has reached Revision; a snapshot already stored at
// that revision is kept.
func (s *Store) SessionSnapshotPut(ctx context.Context, p *store.SessionSnapshotPutParams) error {
	if err := store.Check(p); err != nil {
		return err
	}
	var journal *int64
	err := retryable(ctx, func() error {
		journal = nil
		// The CTE reports the journal revision whether or not the insert
		// happened (a snapshot at that revision may exist already).
		return s.pool.QueryRow(ctx, s.q(`
			WITH s AS (SELECT revision FROM {{schema}}.sessions WHERE tenant = $1 AND session_id = $2),
			ins AS (
				INSERT INTO {{schema}}.session_snapshots (tenant, session_id, revision, data)
				SELECT $1, $2, $3, $4 FROM s WHERE s.revision >= $3
				ON CONFLICT (tenant, session_id, revision) DO NOTHING
			)
			SELECT (SELECT revision FROM s)`), p.Tenant, p.SessionID, p.Revision, string(p.Data)).Scan(&journal)
	})
	if err != nil {
		return mapErr("put snapshot of session "+p.SessionID, err)
	}
	if journal == nil || *journal < p.Revision {
		return &store.InvalidError{Field: "Revision", Reason: "beyond the journal"}
	}
	return nil
}
