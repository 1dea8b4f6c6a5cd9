package storesqlite

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/actoviq/actoviq-go/store"
)

// The hot write: ledger transitions, each with its event, and nothing
// else (a call's started write, alone or carrying the call before's
// committed record).
//
// entryRecord checks and writes a record in one INSERT ... SELECT whose
// condition reads the call's current entry (currentEntry) and whose
// RETURNING gives its number. SQLite runs such a statement through
// temporary b-trees: the SELECT reads the table it inserts into, so its
// row is first copied aside; the RETURNING rows are held in another; the
// current entry's CTE and ORDER BY in two more; each opened, filled and
// closed per statement. entryRecords makes the same checks for all the
// write's records in one SELECT of plain index lookups (each arm reads
// one row by index, in index order; no temporary b-tree, see
// TestRecordCheckPlan), then inserts the rows with one INSERT ... VALUES.
// The write lock is held from BEGIN IMMEDIATE to COMMIT, so what the
// SELECT read is what the INSERT writes after, as in one statement.

// maxChecked bounds the calls of one check statement and the rows of one
// INSERT (the calls of a check are parameters ?6 on, below SQLite's 32nd:
// see entryRecord on parameters past the 31st); a write of more takes
// several.
const maxChecked = 16

// recordCheckSQL[n] is the check of n records (recordCheck).
var recordCheckSQL [maxChecked + 1]struct {
	once sync.Once
	q    string
}

// recordCheck returns the statement that reads, for n records of a run,
// in rows (k, a, b): k = -1, the run's largest event seq (0 if none) and
// whether the claim ?3/?4/?5 holds (1 when ?3 is NULL: no fence); then,
// for the call ?(6+i) of record i, k = i and a revision and creation
// time from each of the places currentEntry reads (its latest one-record
// row, the latest row holding it in more, its ledger table row), for the
// places that have one. The current entry is the one with the largest
// revision, as in currentEntry (a call's first record is in a row's
// columns or in one row's more, never both: the two never tie).
// Arguments: ?1 tenant, ?2 run id, ?3 fence key, ?4 holder, ?5 epoch,
// ?6... the calls.
func recordCheck(n int) string {
	c := &recordCheckSQL[n]
	c.once.Do(func() {
		var b strings.Builder
		b.WriteString(`SELECT -1, COALESCE((SELECT MAX(seq) FROM events WHERE tenant = ?1 AND run_id = ?2), 0),
	?3 IS NULL OR EXISTS (SELECT 1 FROM claims WHERE tenant = ?1 AND key = ?3 AND holder = ?4 AND epoch = ?5 AND held = 1)`)
		for i := range n {
			k, call := strconv.Itoa(i), "?"+strconv.Itoa(6+i)
			b.WriteString(`
UNION ALL SELECT ` + k + `, * FROM (SELECT entry_rev, entry_created FROM events INDEXED BY events_by_call
	WHERE tenant = ?1 AND run_id = ?2 AND call_id = ` + call + ` ORDER BY seq DESC LIMIT 1)
UNION ALL SELECT ` + k + `, * FROM (SELECT 1, e.entry_updated FROM event_calls c
	JOIN events e ON e.tenant = c.tenant AND e.run_id = c.run_id AND e.seq = c.seq
	WHERE c.tenant = ?1 AND c.run_id = ?2 AND c.call_id = ` + call + ` ORDER BY c.seq DESC LIMIT 1)
UNION ALL SELECT ` + k + `, revision, created_at FROM ledger WHERE tenant = ?1 AND run_id = ?2 AND call_id = ` + call)
		}
		c.q = b.String()
	})
	return c.q
}

// entryInsertSQL[n] inserts n records (entryRecords).
var entryInsertSQL [maxChecked + 1]struct {
	once sync.Once
	q    string
}

func entryInsert(n int) string {
	c := &entryInsertSQL[n]
	c.once.Do(func() {
		c.q = `INSERT INTO events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
	call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error, approval,
	resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
VALUES ` + insertValues(n, 31)
	})
	return c.q
}

// current is a call's current entry as recordCheck reads it.
type current struct {
	rev, created int64
	found        bool
}

// currentEntries reads, under the write lock, the run's largest event
// seq, whether fence's claim holds (true when fence is nil) and the
// current entry of each of calls (recordCheck, maxChecked calls a
// statement).
func currentEntries(ctx context.Context, tx querier, tenant, runID string, calls []string, fence *store.Fence) (lastSeq int64, held bool, cur []current, err error) {
	cur = make([]current, len(calls))
	for start := 0; start == 0 || start < len(calls); start += maxChecked {
		chunk := calls[start:min(start+maxChecked, len(calls))]
		args := make([]any, 5, 5+len(chunk))
		args[0], args[1] = tenant, runID
		if fence != nil && start == 0 {
			args[2], args[3], args[4] = fence.Key, fence.Holder, fence.Epoch
		}
		for _, c := range chunk {
			args = append(args, c)
		}
		rows, err := tx.QueryContext(ctx, recordCheck(len(chunk)), args...)
		if err != nil {
			return 0, false, nil, err
		}
		for rows.Next() {
			var k, a, b int64
			if err := rows.Scan(&k, &a, &b); err != nil {
				rows.Close()
				return 0, false, nil, err
			}
			if k < 0 {
				if start == 0 {
					lastSeq, held = a, b != 0
				}
				continue
			}
			if c := &cur[start+int(k)]; !c.found || a > c.rev {
				*c = current{rev: a, created: b, found: true}
			}
		}
		if err := rows.Close(); err != nil {
			return 0, false, nil, err
		}
		if err := rows.Err(); err != nil {
			return 0, false, nil, err
		}
	}
	return lastSeq, held, cur, nil
}

// entryRecords writes p's ledger writes (each with an event, the write's
// only records) as one events row each, numbered after the run's last
// event, as entryRecord does each: every record is written only if its
// call's current revision is the expected one and, when fence is not
// nil, the claim holds; otherwise nothing is written and the first reason
// in the order entryRecord would meet it is returned (the fence, then
// each record's revision, or the run). It returns the stored entries and
// events, in p's order.
func entryRecords(ctx context.Context, tx querier, now int64, p *store.RunWriteParams, fence *store.Fence) ([]*store.LedgerEntry, []*store.EventRecord, error) {
	calls := make([]string, len(p.Ledger))
	for i := range p.Ledger {
		calls[i] = p.Ledger[i].Entry.CallID
	}
	lastSeq, held, cur, err := currentEntries(ctx, tx, p.Tenant, p.RunID, calls, fence)
	if err != nil {
		return nil, nil, err
	}
	if !held {
		if _, err := checkFence(ctx, tx, p.Tenant, fence); err != nil {
			return nil, nil, err
		}
		return nil, nil, &store.FencedError{Key: fence.Key, Holder: fence.Holder, Epoch: fence.Epoch}
	}
	return insertRecords(ctx, tx, now, p.Tenant, p.RunID, p.Ledger, cur, lastSeq+1)
}

// insertRecords checks ws (each with an event) against cur, their calls'
// current entries read under the write lock, in order (the revision, and
// the run when the call has no entry), and writes them as one-record
// rows numbered from seq on. On a failed check nothing is written.
func insertRecords(ctx context.Context, tx querier, now int64, tenant, runID string, ws []store.LedgerWrite, cur []current, seq int64) ([]*store.LedgerEntry, []*store.EventRecord, error) {
	for i := range ws {
		w := &ws[i]
		if cur[i].rev != w.ExpectedRevision {
			if cur[i].rev == 0 {
				if err := runExists(ctx, tx, tenant, runID); err != nil {
					return nil, nil, err
				}
			}
			return nil, nil, &store.ConflictError{Kind: "ledger", ID: w.Entry.CallID, Expected: w.ExpectedRevision, Actual: cur[i].rev}
		}
	}
	n := len(ws)
	entries := make([]*store.LedgerEntry, n)
	events := make([]*store.EventRecord, n)
	for start := 0; start < n; start += maxChecked {
		chunk := ws[start:min(start+maxChecked, n)]
		vals := make([]any, 0, 31*len(chunk))
		for j := range chunk {
			i := start + j
			r, err := newEntryRec(now, &ws[i])
			if err != nil {
				return nil, nil, err
			}
			created := now
			if cur[i].found {
				created = cur[i].created
			}
			e, ev := &r.out, &r.stored
			e.CreatedAt, ev.Seq = fromMicros(created), seq+int64(i)
			vals = append(vals, tenant, runID, ev.Seq, ev.ID, ev.ParentRunID, ev.TraceID, ev.SpanID, ev.Type, micros(ev.Time), optJSON(ev.Data),
				e.CallID, e.Turn, e.Index, e.Tool, e.Effect, string(e.State), e.IdempotencyKey, e.Attempt, e.ArgsDigest,
				optJSON(e.Args), optJSON(e.Result), optJSON(e.Error), r.approval, r.resolution, e.Holder, e.Epoch, e.Revision,
				created, now, optMicros(e.StartedAt), optMicros(e.CommittedAt))
			entries[i], events[i] = e, ev
		}
		_, err := tx.ExecContext(ctx, entryInsert(len(chunk)), vals...)
		if isForeignKey(err) {
			return nil, nil, &store.NotFoundError{Kind: "run", ID: runID}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return entries, events, nil
}
