package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

const runColumns = `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind,
	checkpoint, meta, deadline, revision, event_seq, created_at, updated_at, log_len`

// runColumnsRead is runColumns for reads: the run's last event seq is the
// largest stored seq, since a write that changes only the ledger does not
// rewrite the run row (see RunWrite).
const runColumnsRead = `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind,
	checkpoint, meta, deadline, revision,
	MAX(event_seq, COALESCE((SELECT MAX(ev.seq) FROM events ev WHERE ev.tenant = runs.tenant AND ev.run_id = runs.id), 0)),
	created_at, updated_at, log_len`

func scanRun(sc scanner) (*store.Run, error) { return scanRunRow(sc, false) }

// scanRunRow reads one run; summary means the checkpoint was not selected
// (NULL), which is then no data error.
func scanRunRow(sc scanner, summary bool) (*store.Run, error) {
	var (
		r                   store.Run
		status              string
		checkpoint, meta    sql.NullString
		deadline            sql.NullInt64
		createdAt, updateAt int64
	)
	d := decoder{kind: "run"}
	err := sc.Scan(&r.Tenant, &r.ID, &r.ParentID, &r.SessionID, &r.AgentID, &r.AgentDigest, &status, &r.WaitKind,
		&checkpoint, &meta, &deadline, &r.Revision, &r.EventSeq, &createdAt, &updateAt, &r.LogLen)
	d.id = r.ID
	if err != nil {
		return nil, d.scanErr(err)
	}
	r.Status = store.RunStatus(status)
	if !r.Status.Valid() {
		d.fail("unknown status %q", status)
	}
	if checkpoint.Valid || !summary {
		r.Checkpoint = d.json("checkpoint", checkpoint)
	}
	r.Meta = d.json("meta", meta)
	r.Deadline = fromOptMicros(deadline)
	r.CreatedAt = fromMicros(createdAt)
	r.UpdatedAt = fromMicros(updateAt)
	if err := d.result(); err != nil {
		return nil, err
	}
	return &r, nil
}

// RunCreate implements [store.Store].
func (s *Store) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	in := p.Run
	var out *store.Run
	err := s.write(ctx, func(tx querier) error {
		now := micros(s.now())
		logSeq := 0
		if len(in.Log) > 0 {
			logSeq = 1
		}
		if in.ParentID != "" {
			// In the write transaction: a prune (another write) either
			// removed the parent before, or sees this child after.
			var parent, self int
			if err := tx.QueryRowContext(ctx, `SELECT
				EXISTS (SELECT 1 FROM runs WHERE tenant = ? AND id = ?), EXISTS (SELECT 1 FROM runs WHERE tenant = ? AND id = ?)`,
				in.Tenant, in.ParentID, in.Tenant, in.ID).Scan(&parent, &self); err != nil {
				return err
			}
			if parent == 0 && self == 0 {
				return &store.NotFoundError{Kind: "parent run", ID: in.ParentID}
			}
			// The root of the parent's tree too: a prune removes a
			// finished tree root first, and a child written under a
			// removed root would be a run of a tree whose budget is gone.
			if self == 0 {
				var root string
				var rootFound int
				if err := tx.QueryRowContext(ctx, `SELECT root_id, root_id = '' OR EXISTS (SELECT 1 FROM runs t WHERE t.tenant = p.tenant AND t.id = p.root_id)
					FROM runs p WHERE p.tenant = ? AND p.id = ?`, in.Tenant, in.ParentID).Scan(&root, &rootFound); err != nil {
					return err
				}
				if rootFound == 0 {
					return &store.NotFoundError{Kind: "root run", ID: root}
				}
			}
		}
		found, err := queryOne(one(tx.QueryContext(ctx, `INSERT INTO runs (`+runColumns+`, log_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING `+runColumns,
			in.Tenant, in.ID, in.ParentID, in.SessionID, in.AgentID, in.AgentDigest, string(in.Status), store.StoredWaitKind(in.Status, in.WaitKind),
			optJSON(in.Checkpoint), optJSON(in.Meta), optMicros(in.Deadline), len(p.Events), now, now, len(in.Log), logSeq)),
			func(sc scanner) (err error) { out, err = scanRun(sc); return err })
		if err != nil {
			return err
		}
		if !found {
			return &store.ExistsError{Kind: "run", ID: in.ID}
		}
		if len(in.Log) > 0 {
			if err := appendLog(ctx, tx, in.Tenant, in.ID, 1, 0, in.Log); err != nil {
				return err
			}
			out.Log = make([]json.RawMessage, len(in.Log))
			for i, it := range in.Log {
				out.Log[i] = cloneJSON(it)
			}
		}
		if p.Holder != "" {
			// Created claimed, at the first epoch; a claim already under
			// the key refuses the create (the transaction rolls back).
			key := store.RunClaimKey(in.ID)
			c, err := tx.ExecContext(ctx, `INSERT INTO claims (`+claimColumns+`) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (tenant, key) DO NOTHING`,
				in.Tenant, key, p.Holder, store.CreatedClaimEpoch, now+p.TTL.Microseconds(), now)
			if err != nil {
				return err
			}
			if n, err := c.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				return &store.ExistsError{Kind: "claim", ID: key}
			}
		}
		if len(p.Events) > 0 {
			// Numbered from 1; the run row's event_seq says so already.
			if _, err := insertEvents(ctx, tx, in.Tenant, in.ID, 1, now, p.Events); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("create run "+in.ID, err)
	}
	return out, nil
}

// RunGet implements [store.Store].
func (s *Store) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	var out *store.Run
	// The run row and its log are read in one transaction: one snapshot.
	err := s.read(ctx, func(tx querier) error {
		found, err := queryOne(one(tx.QueryContext(ctx, `SELECT `+runColumnsRead+` FROM runs WHERE tenant = ? AND id = ?`, p.Tenant, p.ID)),
			func(sc scanner) (err error) { out, err = scanRun(sc); return err })
		if err != nil {
			return err
		}
		if !found {
			return &store.NotFoundError{Kind: "run", ID: p.ID}
		}
		out.Log, err = loadLog(ctx, tx, p.Tenant, p.ID, out.LogLen)
		return err
	})
	if err != nil {
		return nil, wrap("get run "+p.ID, err)
	}
	return out, nil
}

// RunClaimNext implements [store.Store]: selecting the run, taking its
// claim and marking it running are one write transaction, so two callers
// (also in two processes) never get the same run.
func (s *Store) RunClaimNext(ctx context.Context, p *store.RunClaimNextParams) (*store.Run, *store.Claim, error) {
	if err := validate(p); err != nil {
		return nil, nil, err
	}
	var (
		run   *store.Run
		claim *store.Claim
	)
	err := s.write(ctx, func(tx querier) error {
		now := s.now()
		var id string
		q, args := claimPickQuery(p, now)
		err := tx.QueryRowContext(ctx, q, args...).Scan(&id)
		if err == sql.ErrNoRows {
			return &store.NotFoundError{Kind: "queued run", ID: p.Tenant}
		}
		if err != nil {
			return err
		}
		claim, err = claimAcquire(ctx, tx, now, p.Tenant, store.RunClaimKey(id), p.Holder, p.TTL)
		if err != nil {
			return err
		}
		_, err = queryOne(one(tx.QueryContext(ctx, `UPDATE runs SET status = 'running', wait_kind = '', revision = revision + 1, updated_at = ?,
				event_seq = MAX(event_seq, COALESCE((SELECT MAX(seq) FROM events WHERE tenant = ? AND run_id = ?), 0))
			WHERE tenant = ? AND id = ? RETURNING `+runColumns, micros(now), p.Tenant, id, p.Tenant, id)),
			func(sc scanner) (err error) { run, err = scanRun(sc); return err })
		if err != nil {
			return err
		}
		run.Log, err = loadLog(ctx, tx, p.Tenant, id, run.LogLen)
		return err
	})
	if err != nil {
		return nil, nil, wrap("claim next run", err)
	}
	return run, claim, nil
}

// claimPickQuery is the statement that picks the run RunClaimNext takes.
// r.status IN (...) is the partial index runs_active's condition, written
// the same way so that SQLite uses it: the claim walks queued and running
// runs only, oldest first, never a finished or interrupted one.
func claimPickQuery(p *store.RunClaimNextParams, now time.Time) (string, []any) {
	q := `SELECT r.id FROM runs r INDEXED BY runs_active
		LEFT JOIN claims c ON c.tenant = r.tenant AND c.key = 'run:' || r.id
		WHERE r.tenant = ? AND r.status IN ('queued', 'running') AND (c.key IS NULL OR c.expires_at <= ?)
		AND (r.status = 'queued' OR (? AND r.status = 'running' AND (c.key IS NOT NULL OR r.updated_at <= ?)))`
	args := []any{p.Tenant, micros(now), p.Stale, micros(now.Add(-p.TTL))}
	if len(p.AgentIDs) > 0 {
		q += ` AND r.agent_id IN (?` + strings.Repeat(`, ?`, len(p.AgentIDs)-1) + `)`
		for _, a := range p.AgentIDs {
			args = append(args, a)
		}
	}
	return q + ` ORDER BY r.created_at, r.id LIMIT 1`, args
}
