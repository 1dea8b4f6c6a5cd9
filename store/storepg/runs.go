package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

const runCols = `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind,
	checkpoint, meta, deadline, revision, event_seq, created_at, updated_at, log_len`

// runColsRead is runCols for reads of a stored run: the run's last event
// seq is the largest stored seq (a write that changes only the ledger does
// not rewrite the run row; see migrations/002_run_write.sql).
const runColsRead = `tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind,
	checkpoint, meta, deadline, revision,
	greatest(event_seq, coalesce((SELECT max(ev.seq) FROM {{schema}}.events ev
		WHERE ev.tenant = runs.tenant AND ev.run_id = runs.id), 0)),
	created_at, updated_at, log_len`

// runRow holds the nullable scan targets of one runs row.
type runRow struct {
	tenant, id, parentID, sessionID, agentID, agentDigest, status *string
	waitKind                                                      *string
	summary                                                       bool // the checkpoint was not read
	checkpoint, meta                                              *string
	deadline                                                      *time.Time
	revision, eventSeq, logLen                                    *int64
	createdAt, updatedAt                                          *time.Time
}

func (r *runRow) dest() []any {
	return []any{&r.tenant, &r.id, &r.parentID, &r.sessionID, &r.agentID, &r.agentDigest, &r.status, &r.waitKind,
		&r.checkpoint, &r.meta, &r.deadline, &r.revision, &r.eventSeq, &r.createdAt, &r.updatedAt, &r.logLen}
}

func (r *runRow) run() (*store.Run, error) {
	d := &decoder{kind: "run"}
	if r.id != nil {
		d.id = *r.id
	}
	run := &store.Run{
		Tenant:      d.str("tenant", r.tenant),
		ID:          d.str("id", r.id),
		ParentID:    d.str("parent_id", r.parentID),
		SessionID:   d.str("session_id", r.sessionID),
		AgentID:     d.str("agent_id", r.agentID),
		AgentDigest: d.str("agent_digest", r.agentDigest),
		Status:      store.RunStatus(d.str("status", r.status)),
		WaitKind:    d.str("wait_kind", r.waitKind),
		Meta:        d.optJSON("meta", r.meta),
		Deadline:    optTime(r.deadline),
		Revision:    d.i64("revision", r.revision),
		EventSeq:    d.i64("event_seq", r.eventSeq),
		CreatedAt:   d.tm("created_at", r.createdAt),
		UpdatedAt:   d.tm("updated_at", r.updatedAt),
		LogLen:      int(d.i64("log_len", r.logLen)),
	}
	if !r.summary || r.checkpoint != nil {
		run.Checkpoint = d.json("checkpoint", r.checkpoint)
	}
	if !run.Status.Valid() && r.status != nil {
		d.fail("unknown status %q", run.Status)
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return run, nil
}

// scanRun reads one run from row; pgx.ErrNoRows passes through.
func scanRun(row pgx.Row) (*store.Run, error) {
	var r runRow
	if err := row.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.run()
}

// scanRunLog reads one run and its log (columns runColsRead + logCols).
func scanRunLog(row pgx.Row) (*store.Run, error) {
	var (
		r runRow
		l logArrays
	)
	if err := row.Scan(append(r.dest(), l.dest()...)...); err != nil {
		return nil, err
	}
	run, err := r.run()
	if err != nil {
		return nil, err
	}
	run.Log, err = l.fold(run.ID, run.LogLen)
	if err != nil {
		return nil, err
	}
	return run, nil
}

func collectRuns(rows pgx.Rows, summary bool) ([]*store.Run, error) {
	defer rows.Close()
	out := []*store.Run{}
	var bad error // the first row that does not decode; it hides no other
	for rows.Next() {
		r := runRow{summary: summary}
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, err
		}
		run, err := r.run()
		if errors.Is(err, store.ErrData) {
			if bad == nil {
				bad = err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, bad
}

// RunCreate implements [store.Store]. The run starts at revision 1 with
// CreatedAt and UpdatedAt set by the clock; a nil checkpoint is stored as {}.
//
// A root run is created by one statement, its own transaction; creations
// that arrive while Config.CommitLeaders others are in flight share one
// transaction, as run writes do ([Store.RunWrite]): each returns after
// the COMMIT that holds it, with the answer it would have had alone. A
// child is created in a transaction of its own that first locks its
// parent's row.
func (s *Store) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	r := p.Run
	cp := r.Checkpoint
	if cp == nil {
		cp = json.RawMessage("{}")
	}
	now := s.clock.Now()
	var (
		logText *string
		logSum  int64
		logSeq  int64
		run     *store.Run
	)
	if len(r.Log) > 0 {
		t := journal.Join(r.Log)
		logText, logSum, logSeq = &t, journal.SumString(t), 1
	}
	// The run row, its first log row, its claim and its first events in
	// one statement. The claim's INSERT has no ON CONFLICT: a claim
	// already under the key fails the statement (claims_pkey), so the run
	// is not created either.
	create := s.q(`
			WITH r AS (INSERT INTO {{schema}}.runs (` + runCols + `, log_seq)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $16, $8, $9, $10, 1, $20, $11, $11, $12, $13)
				ON CONFLICT (tenant, id) DO NOTHING
				RETURNING ` + runCols + `),
			l AS (INSERT INTO {{schema}}.run_log (tenant, run_id, seq, first, n, crc, items)
				SELECT tenant, id, 1, 0, $12, $14, $15 FROM r WHERE $15::text IS NOT NULL),
			c AS (INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
				SELECT tenant, $17::text, $18::text, ` + strconv.Itoa(store.CreatedClaimEpoch) + `, $19::timestamptz, $11 FROM r WHERE $18::text <> ''),
			e AS (INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
				SELECT r.tenant, r.id, x.ord, x.id, x.parent, x.trace, x.span, x.type, x.time, x.data
				FROM r, unnest($21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::timestamptz[], $27::text[])
					WITH ORDINALITY AS x(id, parent, trace, span, type, time, data, ord))
			SELECT * FROM r`)
	var expires time.Time
	if p.Holder != "" {
		expires = store.Time(now.Add(p.TTL))
	} else {
		expires = now
	}
	_, ev := eventArgs(r.Tenant, r.ID, p.Events, now)
	args := []any{r.Tenant, r.ID, r.ParentID, r.SessionID, r.AgentID, r.AgentDigest, string(r.Status),
		string(cp), jsonArg(r.Meta), timeArg(r.Deadline), now, int64(len(r.Log)), logSeq, logSum, logText,
		store.StoredWaitKind(r.Status, r.WaitKind), store.RunClaimKey(r.ID), p.Holder, expires, int64(len(p.Events)),
		ev[3], ev[4], ev[5], ev[6], ev[7], ev[8], ev[9]}
	var noParent *store.NotFoundError
	var err error
	if r.ParentID == "" {
		// A root run: one statement, whose commit it may share with other
		// creations (creates.go).
		run, err = s.createQueued(ctx, create, args)
	} else {
		err = retryable(ctx, func() error {
			// A child: its parent's row is locked (FOR KEY SHARE) until the
			// child is written, so a prune, which locks the runs it removes
			// FOR UPDATE SKIP LOCKED and then looks again for children in a
			// new snapshot, either removed the parent first (the child is
			// refused) or keeps it.
			return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				// missing refuses the child for want of kind id, unless the
				// run itself already exists (then the create's own refusal
				// below says so).
				missing := func(kind, id string) error {
					var self bool
					if err := tx.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {{schema}}.runs WHERE tenant = $1 AND id = $2)`),
						r.Tenant, r.ID).Scan(&self); err != nil {
						return err
					}
					if self {
						return pgx.ErrNoRows // exists: refused below
					}
					noParent = &store.NotFoundError{Kind: kind, ID: id}
					return noParent
				}
				var one int
				var root string
				err := tx.QueryRow(ctx, s.q(`SELECT root_id FROM {{schema}}.runs WHERE tenant = $1 AND id = $2 FOR KEY SHARE`),
					r.Tenant, r.ParentID).Scan(&root)
				if err == nil && root != "" {
					// The root of the parent's tree too, locked the same
					// way: a prune removes a finished tree's root first, and a
					// child written under a removed root would be a run of a
					// tree whose budget is gone.
					err = tx.QueryRow(ctx, s.q(`SELECT 1 FROM {{schema}}.runs WHERE tenant = $1 AND id = $2 FOR KEY SHARE`),
						r.Tenant, root).Scan(&one)
					if errors.Is(err, pgx.ErrNoRows) {
						return missing("root run", root)
					}
				}
				if errors.Is(err, pgx.ErrNoRows) {
					return missing("parent run", r.ParentID)
				}
				if err != nil {
					return err
				}
				run, err = scanRun(tx.QueryRow(ctx, create, args...))
				return err
			})
		})
	}
	if noParent != nil && errors.Is(err, store.ErrNotFound) {
		return nil, noParent
	}
	if err == nil && len(r.Log) > 0 {
		run.Log = make([]json.RawMessage, len(r.Log))
		for i, it := range r.Log {
			run.Log[i] = cloneRaw(it)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.ExistsError{Kind: "run", ID: r.ID}
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "claims_pkey" {
		return nil, &store.ExistsError{Kind: "claim", ID: store.RunClaimKey(r.ID)}
	}
	if err != nil {
		return nil, mapErr(fmt.Sprintf("create run %s", r.ID), err)
	}
	if run.Status == store.RunQueued {
		s.notifyQueued(ctx, run.Tenant)
	}
	return run, nil
}

// RunGet implements [store.Store].
func (s *Store) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	run, err := scanRunLog(s.pool.QueryRow(ctx, s.q(`SELECT `+runColsRead+logCols+` FROM {{schema}}.runs WHERE tenant = $1 AND id = $2`),
		p.Tenant, p.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: p.ID}
	}
	if err != nil {
		return nil, mapErr("get run "+p.ID, err)
	}
	return run, nil
}

// limitArg is a LIMIT parameter: 0 (no limit) is NULL, which PostgreSQL
// reads as LIMIT ALL.
func limitArg(n int) any {
	if n <= 0 {
		return nil
	}
	return int64(n)
}

// claimNextPick picks the oldest claimable run from the partial index
// runs_active (queued and running runs only, so that neither a claim nor
// an idle poll reads a finished or interrupted run): queued, or (with $3, the
// Stale flag) running with an expired or released claim, or running with no
// claim row and not updated since $4. $5 is the agent filter (NULL or empty:
// any). SKIP LOCKED lets concurrent workers pass over each other's picks
// instead of queueing behind them.
const claimNextPick = `
	SELECT r.id FROM {{schema}}.runs r
	LEFT JOIN {{schema}}.claims c ON c.tenant = r.tenant AND c.key = 'run:' || r.id
	WHERE r.tenant = $1 AND r.status IN ('queued', 'running')
	  AND (c.key IS NULL OR c.expires_at <= $2)
	  AND (r.status = 'queued' OR ($3 AND (c.key IS NOT NULL OR r.updated_at <= $4)))
	  AND (coalesce(cardinality($5::text[]), 0) = 0 OR r.agent_id = ANY($5::text[]))
	ORDER BY r.created_at, r.id
	LIMIT 1
	FOR UPDATE OF r SKIP LOCKED`

// RunClaimNext implements [store.Store]. One transaction picks the oldest
// queued run whose claim is not live (FOR UPDATE SKIP LOCKED, so concurrent
// callers skip rows another caller is taking), takes its claim with a new
// epoch and marks it running. If a live claim appears between the pick and
// the claim (someone called ClaimAcquire), the transaction is rolled back
// and the pick is made again.
func (s *Store) RunClaimNext(ctx context.Context, p *store.RunClaimNextParams) (*store.Run, *store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, nil, err
	}
	var (
		run   *store.Run
		claim *store.Claim
	)
	errRace := errors.New("claim taken between pick and claim")
	for attempt := 0; ; attempt++ {
		now := s.clock.Now()
		err := s.inTx(ctx, "claim next run", func(tx pgx.Tx) error {
			var id string
			err := tx.QueryRow(ctx, s.q(claimNextPick), p.Tenant, now, p.Stale, now.Add(-p.TTL), p.AgentIDs).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return &store.NotFoundError{Kind: "queued run", ID: p.Tenant}
			}
			if err != nil {
				return err
			}
			claim, err = scanClaim(tx.QueryRow(ctx, s.q(claimUpsert), p.Tenant, store.RunClaimKey(id), p.Holder,
				store.Time(now.Add(p.TTL)), now, true))
			if errors.Is(err, pgx.ErrNoRows) {
				return errRace
			}
			if err != nil {
				return err
			}
			run, err = scanRunLog(tx.QueryRow(ctx, s.q(`
				UPDATE {{schema}}.runs SET status = 'running', wait_kind = '', revision = revision + 1, updated_at = $3
				WHERE tenant = $1 AND id = $2
				RETURNING `+runColsRead+logCols), p.Tenant, id, now))
			return err
		})
		if errors.Is(err, errRace) && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return run, claim, nil
	}
}
