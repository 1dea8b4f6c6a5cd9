package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// The run journal (migrations/0006_run_journal.sql): a ledger transition
// and its event are one row of events, and the run's log is appended to
// run_log, one row per write, compacted off the write path.

// entryColumns are the ledger entry columns of an events row, in the order
// of ledgerColumns (so that scanLedger reads both).
const entryColumns = `tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
	attempt, args_digest, args, result, error, approval, resolution, holder, epoch, entry_rev,
	entry_created, entry_updated, started_at, committed_at`

// currentEntry selects the revision and creation time of a call's current
// entry: the latest of its latest one-record row, the latest row holding
// it in more (an entry there is at revision 1, created at the row's
// entry_updated; looked for only when no row's columns hold the call: a
// call's first record is in a row's columns or in one row's more, never
// both; event_calls, migrations/0017, indexes the calls of every row's
// more) and its ledger table row. Its arguments are ?1 tenant, ?2 run id and ?3
// call id (numbered: each is bound once).
const currentEntry = `WITH s AS (SELECT entry_rev AS rev, entry_created AS created FROM events INDEXED BY events_by_call
			WHERE tenant = ?1 AND run_id = ?2 AND call_id = ?3 ORDER BY seq DESC LIMIT 1)
	SELECT rev, created FROM (
		SELECT rev, created FROM s
		UNION ALL SELECT * FROM (SELECT 1 AS rev, e.entry_updated AS created FROM event_calls c
			JOIN events e ON e.tenant = c.tenant AND e.run_id = c.run_id AND e.seq = c.seq
			WHERE c.tenant = ?1 AND c.run_id = ?2 AND c.call_id = ?3 AND NOT EXISTS (SELECT 1 FROM s)
			ORDER BY c.seq DESC LIMIT 1)
		UNION ALL SELECT revision, created_at FROM ledger WHERE tenant = ?1 AND run_id = ?2 AND call_id = ?3)
	ORDER BY rev DESC LIMIT 1`

// foldedWrite is a write's records as one events row (see the eventrow
// package): recs in numbering order, the first in the row's columns. The
// write's last tail ledger writes (new entries, started: eventrow.Tail)
// are not in it: each is a one-record row after it.
type foldedWrite struct {
	tail                 int
	recs                 []eventrow.Record
	more                 string
	calls                any // more_calls: the JSON array of the calls in more, or nil
	crc                  int64
	approval, resolution []any // by Ledger index: the columns' decision text
	approvalBack         []*store.DecisionRecord
	resolutionBack       []*store.DecisionRecord
}

// foldWrite returns p's records as one row, or nil when p keeps one row
// per record (eventrow.Foldable, eventrow.Encode).
func foldWrite(p *store.RunWriteParams, now int64) (*foldedWrite, error) {
	tail := eventrow.Tail(p)
	if !eventrow.FoldableBefore(p, tail) {
		return nil, nil
	}
	f := &foldedWrite{tail: tail, approval: make([]any, len(p.Ledger)), resolution: make([]any, len(p.Ledger)),
		approvalBack: make([]*store.DecisionRecord, len(p.Ledger)), resolutionBack: make([]*store.DecisionRecord, len(p.Ledger))}
	stored := func(ev *store.EventRecord) *store.EventRecord {
		c := *ev
		c.Tenant, c.RunID = p.Tenant, p.RunID
		c.Data = cloneJSON(ev.Data)
		if c.Time.IsZero() {
			c.Time = fromMicros(now)
		} else {
			c.Time = store.Time(c.Time)
		}
		return &c
	}
	for _, ev := range p.Events {
		f.recs = append(f.recs, eventrow.Record{Event: stored(ev)})
	}
	for i, w := range p.Ledger[:len(p.Ledger)-tail] {
		a, aBack, err := encodeDecision(w.Entry.Approval)
		if err != nil {
			return nil, &store.InvalidError{Field: "Approval", Reason: err.Error()}
		}
		r, rBack, err := encodeDecision(w.Entry.Resolution)
		if err != nil {
			return nil, &store.InvalidError{Field: "Resolution", Reason: err.Error()}
		}
		f.approval[i], f.resolution[i], f.approvalBack[i], f.resolutionBack[i] = a, r, aBack, rBack
		if w.Event == nil {
			continue
		}
		rec := eventrow.Record{Event: stored(w.Event), Entry: w.Entry}
		if a != nil {
			rec.Approval = []byte(a.(string))
		}
		if r != nil {
			rec.Resolution = []byte(r.(string))
		}
		f.recs = append(f.recs, rec)
	}
	more, crc, calls, ok := eventrow.Encode(f.recs[1:])
	if !ok {
		return nil, nil
	}
	f.more, f.crc = more, crc
	if len(calls) == 0 {
		return f, nil // more_calls NULL: no call to find in the row
	}
	b := []byte{'['}
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, c)
	}
	f.calls = string(append(b, ']'))
	return f, nil
}

// writeFolded checks the ledger records of a folded write (each a new
// entry: the call must have none) and writes its one events row, numbered
// lastSeq+1 to lastSeq+len(recs); a ledger write without an event goes
// to the ledger table as in a write of one row per record, and each of
// the write's tail records is a one-record row numbered after the row.
// fence, when not nil, is checked first. It returns the stored entries
// (by Ledger index) and events (in numbering order).
func writeFolded(ctx context.Context, tx querier, p *store.RunWriteParams, f *foldedWrite, now, lastSeq int64, fence *store.Fence) ([]*store.LedgerEntry, []*store.EventRecord, error) {
	if fence != nil {
		if _, err := checkFence(ctx, tx, p.Tenant, fence); err != nil {
			return nil, nil, err
		}
	}
	var entries []*store.LedgerEntry
	if len(p.Ledger) > 0 {
		entries = make([]*store.LedgerEntry, len(p.Ledger))
	}
	// The current entries of every record's call, read at once
	// (records.go): a model response's write checked each of its calls
	// with a statement of its own.
	var calls []string
	pos := make([]int, len(p.Ledger))
	for i := range p.Ledger {
		if p.Ledger[i].Event != nil {
			pos[i] = len(calls)
			calls = append(calls, p.Ledger[i].Entry.CallID)
		}
	}
	var cur []current
	if len(calls) > 0 {
		var err error
		if _, _, cur, err = currentEntries(ctx, tx, p.Tenant, p.RunID, calls, nil); err != nil {
			return nil, nil, err
		}
	}
	head := len(p.Ledger) - f.tail
	for i := range p.Ledger[:head] {
		w := &p.Ledger[i]
		if w.Event == nil {
			e, err := ledgerRow(ctx, tx, now, w, nil)
			if err != nil {
				return nil, nil, err
			}
			entries[i] = e
			continue
		}
		if rev := cur[pos[i]].rev; rev != 0 {
			return nil, nil, &store.ConflictError{Kind: "ledger", ID: w.Entry.CallID, Expected: 0, Actual: rev}
		}
		e := w.Entry
		out := *e
		out.Args, out.Result, out.Error = cloneJSON(e.Args), cloneJSON(e.Result), cloneJSON(e.Error)
		out.Approval, out.Resolution = f.approvalBack[i], f.resolutionBack[i]
		out.StartedAt, out.CommittedAt = store.Time(e.StartedAt), store.Time(e.CommittedAt)
		out.Revision, out.CreatedAt, out.UpdatedAt = 1, fromMicros(now), fromMicros(now)
		entries[i] = &out
	}
	n := int64(len(f.recs))
	evs := make([]*store.EventRecord, n, n+int64(f.tail))
	for i, r := range f.recs {
		r.Event.Seq = lastSeq + 1 + int64(i)
		evs[i] = r.Event
	}
	first := f.recs[0]
	ev := first.Event
	args := []any{p.Tenant, p.RunID, lastSeq + n, ev.ID, ev.ParentRunID, ev.TraceID, ev.SpanID, ev.Type, micros(ev.Time), optJSON(ev.Data)}
	if e := first.Entry; e != nil {
		// The first record is a ledger one only when the write has no
		// plain event: then it is the first ledger write with an event.
		j := firstLedger(p)
		args = append(args, e.CallID, e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey, e.Attempt, e.ArgsDigest,
			optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), f.approval[j], f.resolution[j],
			e.Holder, e.Epoch, 1, now, now, optMicros(e.StartedAt), optMicros(e.CommittedAt))
	} else {
		args = append(args, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, now, nil, nil)
	}
	args = append(args, lastSeq+1, f.more, f.crc, f.calls)
	_, err := tx.ExecContext(ctx, `INSERT INTO events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
			call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error, approval,
			resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at,
			first_seq, more, more_crc, more_calls)
		VALUES `+insertValues(1, 35), args...)
	if isForeignKey(err) {
		return nil, nil, &store.NotFoundError{Kind: "run", ID: p.RunID}
	}
	if err != nil {
		return nil, nil, err
	}
	if f.calls != nil {
		// The row's calls in the index of calls in more (0017).
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_calls (tenant, run_id, call_id, seq)
			SELECT ?1, ?2, value, ?3 FROM json_each(?4)`, p.Tenant, p.RunID, lastSeq+n, f.calls); err != nil {
			return nil, nil, err
		}
	}
	if head < len(p.Ledger) {
		// The tail records: a row each, after the row's (their revisions
		// checked as any record's; the fence was checked above). They
		// all have events: their calls are the last of calls.
		es, tevs, err := insertRecords(ctx, tx, now, p.Tenant, p.RunID, p.Ledger[head:], cur[pos[head]:], lastSeq+int64(len(evs))+1)
		if err != nil {
			return nil, nil, err
		}
		copy(entries[head:], es)
		evs = append(evs, tevs...)
	}
	killpoint.Reached(killpoint.EventRowWrite)
	return entries, evs, nil
}

// firstLedger returns the index in p.Ledger of the first ledger write with
// an event.
func firstLedger(p *store.RunWriteParams) int {
	for i, w := range p.Ledger {
		if w.Event != nil {
			return i
		}
	}
	return -1
}

// entryRecord writes a ledger transition and its event as one events row,
// numbered seq (0: after the run's last event, in the same statement). The
// row is written only if the call's current revision is the expected one
// and, when fence is not nil, the claim holds; otherwise the reason is
// read in the same transaction.
func entryRecord(ctx context.Context, tx querier, now int64, seq int64, w *store.LedgerWrite, fence *store.Fence) (*store.LedgerEntry, *store.EventRecord, error) {
	e := w.Entry
	r, err := newEntryRec(now, w)
	if err != nil {
		return nil, nil, err
	}
	out, stored, approval, resolution := &r.out, &r.stored, r.approval, r.resolution
	// Numbered parameters: those of the conditions (tenant, run, call,
	// expected revision, fence) come first and each is bound once. With
	// positional ones, the call's lookup used parameters past the 31st,
	// which SQLite tracks as one: every execution re-prepared the
	// statement (a quarter of the write's CPU on the pure-Go driver).
	seqExpr := `?4`
	if seq == 0 {
		seqExpr = `COALESCE((SELECT MAX(seq) FROM events WHERE tenant = ?1 AND run_id = ?2), 0) + 1`
	}
	cond := ""
	var fKey, fHolder, fEpoch any
	if fence != nil {
		cond = ` AND EXISTS (SELECT 1 FROM claims WHERE tenant = ?1 AND key = ?6 AND holder = ?7 AND epoch = ?8 AND held = 1)`
		fKey, fHolder, fEpoch = fence.Key, fence.Holder, fence.Epoch
	}
	args := []any{e.Tenant, e.RunID, e.CallID, seq, w.ExpectedRevision, fKey, fHolder, fEpoch, now,
		stored.ID, stored.ParentRunID, stored.TraceID, stored.SpanID, stored.Type, micros(stored.Time), optJSON(stored.Data),
		e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey, e.Attempt, e.ArgsDigest,
		optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), approval, resolution, e.Holder, e.Epoch, out.Revision,
		optMicros(e.StartedAt), optMicros(e.CommittedAt)}
	var created int64
	found, err := queryOne(one(tx.QueryContext(ctx, `INSERT INTO events (tenant, run_id, seq, id, parent_run_id,
			trace_id, span_id, type, time, data, call_id, turn, idx, tool, effect, state, idempotency_key, attempt,
			args_digest, args, result, error, approval, resolution, holder, epoch, entry_rev, entry_created,
			entry_updated, started_at, committed_at)
		SELECT ?1, ?2, `+seqExpr+`, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?3, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24,
			?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, COALESCE(cur.created, ?9), ?9, ?33, ?34
		FROM (SELECT 1) LEFT JOIN (`+currentEntry+`) cur
		WHERE COALESCE(cur.rev, 0) = ?5`+cond+`
		RETURNING seq, entry_created`, args...)),
		func(sc scanner) error { return sc.Scan(&stored.Seq, &created) })
	if isForeignKey(err) {
		return nil, nil, &store.NotFoundError{Kind: "run", ID: e.RunID}
	}
	if err != nil {
		return nil, nil, err
	}
	if found {
		out.CreatedAt = fromMicros(created)
		return out, stored, nil
	}
	return nil, nil, entryMiss(ctx, tx, w, fence)
}

// entryRec is a ledger write as stored: its entry and event as a write
// returns them, and its decisions as the columns hold them.
type entryRec struct {
	out                  store.LedgerEntry
	stored               store.EventRecord
	approval, resolution any
}

// newEntryRec returns w as stored at now (its entry's CreatedAt and its
// event's Seq still to be set).
func newEntryRec(now int64, w *store.LedgerWrite) (*entryRec, error) {
	e, ev := w.Entry, w.Event
	approval, approvalBack, err := encodeDecision(e.Approval)
	if err != nil {
		return nil, &store.InvalidError{Field: "Approval", Reason: err.Error()}
	}
	resolution, resolutionBack, err := encodeDecision(e.Resolution)
	if err != nil {
		return nil, &store.InvalidError{Field: "Resolution", Reason: err.Error()}
	}
	r := &entryRec{out: *e, stored: *ev, approval: approval, resolution: resolution}
	out := &r.out
	out.Args, out.Result, out.Error = cloneJSON(e.Args), cloneJSON(e.Result), cloneJSON(e.Error)
	out.Approval, out.Resolution = approvalBack, resolutionBack
	out.StartedAt, out.CommittedAt = store.Time(e.StartedAt), store.Time(e.CommittedAt)
	out.UpdatedAt = fromMicros(now)
	out.Revision = w.ExpectedRevision + 1
	stored := &r.stored
	stored.Tenant, stored.RunID = e.Tenant, e.RunID
	stored.Data = cloneJSON(ev.Data)
	if stored.Time.IsZero() {
		stored.Time = fromMicros(now)
	} else {
		stored.Time = store.Time(stored.Time)
	}
	return r, nil
}

// entryMiss explains a ledger write that changed nothing: the fence, the
// run, or the revision.
func entryMiss(ctx context.Context, tx querier, w *store.LedgerWrite, fence *store.Fence) error {
	e := w.Entry
	if fence != nil {
		if _, err := checkFence(ctx, tx, e.Tenant, fence); err != nil {
			return err
		}
	}
	actual, _, err := entryRevision(ctx, tx, e.Tenant, e.RunID, e.CallID)
	if err != nil {
		return err
	}
	if actual == 0 {
		if err := runExists(ctx, tx, e.Tenant, e.RunID); err != nil {
			return err
		}
	}
	return &store.ConflictError{Kind: "ledger", ID: e.CallID, Expected: w.ExpectedRevision, Actual: actual}
}

// entryRevision returns a call's current revision and creation time (0
// when it has no entry).
func entryRevision(ctx context.Context, tx querier, tenant, runID, callID string) (rev, created int64, err error) {
	err = tx.QueryRowContext(ctx, currentEntry, tenant, runID, callID).Scan(&rev, &created)
	if err == sql.ErrNoRows {
		return 0, 0, nil
	}
	return rev, created, err
}

// ledgerRow writes an entry without an event of its own to the ledger
// table (an event of the write describes it), after the same checks.
func ledgerRow(ctx context.Context, tx querier, now int64, w *store.LedgerWrite, fence *store.Fence) (*store.LedgerEntry, error) {
	e := w.Entry
	if fence != nil {
		if _, err := checkFence(ctx, tx, e.Tenant, fence); err != nil {
			return nil, err
		}
	}
	rev, created, err := entryRevision(ctx, tx, e.Tenant, e.RunID, e.CallID)
	if err != nil {
		return nil, err
	}
	if rev != w.ExpectedRevision {
		if rev == 0 {
			if err := runExists(ctx, tx, e.Tenant, e.RunID); err != nil {
				return nil, err
			}
		}
		return nil, &store.ConflictError{Kind: "ledger", ID: e.CallID, Expected: w.ExpectedRevision, Actual: rev}
	}
	if rev == 0 {
		created = now
	}
	approval, approvalBack, err := encodeDecision(e.Approval)
	if err != nil {
		return nil, &store.InvalidError{Field: "Approval", Reason: err.Error()}
	}
	resolution, resolutionBack, err := encodeDecision(e.Resolution)
	if err != nil {
		return nil, &store.InvalidError{Field: "Resolution", Reason: err.Error()}
	}
	out := *e
	out.Args, out.Result, out.Error = cloneJSON(e.Args), cloneJSON(e.Result), cloneJSON(e.Error)
	out.Approval, out.Resolution = approvalBack, resolutionBack
	out.StartedAt, out.CommittedAt = store.Time(e.StartedAt), store.Time(e.CommittedAt)
	out.Revision, out.CreatedAt, out.UpdatedAt = rev+1, fromMicros(created), fromMicros(now)
	_, err = tx.ExecContext(ctx, `INSERT INTO ledger (`+ledgerColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, run_id, call_id) DO UPDATE SET turn = excluded.turn, idx = excluded.idx,
			tool = excluded.tool, effect = excluded.effect, state = excluded.state,
			idempotency_key = excluded.idempotency_key, attempt = excluded.attempt,
			args_digest = excluded.args_digest, args = excluded.args, result = excluded.result,
			error = excluded.error, approval = excluded.approval, resolution = excluded.resolution,
			holder = excluded.holder, epoch = excluded.epoch, revision = excluded.revision,
			created_at = excluded.created_at, updated_at = excluded.updated_at,
			started_at = excluded.started_at, committed_at = excluded.committed_at`,
		e.Tenant, e.RunID, e.CallID, e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey,
		e.Attempt, e.ArgsDigest, optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), approval, resolution,
		e.Holder, e.Epoch, out.Revision, created, now, optMicros(e.StartedAt), optMicros(e.CommittedAt))
	if isForeignKey(err) {
		return nil, &store.NotFoundError{Kind: "run", ID: e.RunID}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// appendLog stores items as the log row seq of a run, starting at log
// index first.
func appendLog(ctx context.Context, tx querier, tenant, runID string, seq, first int64, items []json.RawMessage) error {
	text := journal.Join(items)
	_, err := tx.ExecContext(ctx, `INSERT INTO run_log (tenant, run_id, seq, first, n, crc, items) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		tenant, runID, seq, first, len(items), journal.SumString(text), text)
	if err == nil {
		killpoint.Reached(killpoint.JournalWrite)
	}
	return err
}

// loadLog reads a run's log of n items, checking every row's checksum and
// that the rows follow each other.
func loadLog(ctx context.Context, q querier, tenant, runID string, n int) ([]json.RawMessage, error) {
	if n == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT seq, first, n, crc, items FROM run_log WHERE tenant = ? AND run_id = ? ORDER BY seq`, tenant, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]json.RawMessage, 0, n)
	for rows.Next() {
		var (
			seq, first, k, crc int64
			text               []byte
		)
		if err := rows.Scan(&seq, &first, &k, &crc, &text); err != nil {
			return nil, err
		}
		if first != int64(len(out)) {
			return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log row %d starts at item %d, want %d", seq, first, len(out))}
		}
		its, err := journal.Split(text, int(k), &crc)
		if err != nil {
			return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log row %d: %w", seq, err)}
		}
		out = append(out, its...)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, &store.DataError{Kind: "run", ID: runID, Err: fmt.Errorf("log holds %d items, the run says %d", len(out), n)}
	}
	return out, nil
}

// compactLater merges the log rows a write of row seq closes (see
// journal.Span), on a goroutine of the store, off the write's path.
func (s *Store) compactLater(tenant, runID string, seq int64) {
	s.compactor.Later(seq, killpoint.CompactEvery, func(lo, hi int64) {
		// A failed merge changes nothing; the rows stay as they are.
		_ = s.compact(context.Background(), tenant, runID, lo, hi)
	})
}

// compact merges a run's log rows with seq in (lo, hi] into one row with
// seq hi.
func (s *Store) compact(ctx context.Context, tenant, runID string, lo, hi int64) error {
	return s.write(ctx, func(tx querier) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, first, n, crc, items FROM run_log
			WHERE tenant = ? AND run_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, tenant, runID, lo, hi)
		if err != nil {
			return err
		}
		var m journal.Merge
		for rows.Next() {
			var (
				seq, f, k, crc int64
				text           []byte
			)
			if err := rows.Scan(&seq, &f, &k, &crc, &text); err != nil {
				rows.Close()
				return err
			}
			if err := m.Add(seq, f, k, crc, text); err != nil {
				rows.Close()
				return &store.DataError{Kind: "run", ID: runID, Err: err}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		first, n, merged, ok := m.Row()
		if !ok {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_log WHERE tenant = ? AND run_id = ? AND seq > ? AND seq <= ?`,
			tenant, runID, lo, hi); err != nil {
			return err
		}
		killpoint.Reached(killpoint.Compaction)
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_log (tenant, run_id, seq, first, n, crc, items) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			tenant, runID, hi, first, n, journal.Sum(merged), string(merged)); err != nil {
			return err
		}
		killpoint.Reached(killpoint.CompactionCommit)
		return nil
	})
}
