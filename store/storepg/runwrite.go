package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// runWriteCall is the whole run write: one statement, one round trip, one
// autocommit transaction (see migrations/002_run_write.sql).
const runWriteCall = `SELECT o_parent, o_session, o_agent, o_digest, o_meta, o_deadline, o_revision, o_created,
	o_first_seq, o_ledger_created, o_log_len, o_log_seq
	FROM {{schema}}.run_write($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
		$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30,
		$31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46)`

// SQLSTATEs raised by run_write.
const (
	codeRunNotFound = "AVNF0"
	codeFenced      = "AVFN0"
	codeConflict    = "AVCF0"
)

// Stats counts what the store sent and wrote, for benchmarks: each run
// write is one statement (one round trip once pgx has prepared it on the
// connection; a group commit sends several in one round trip) and writes
// RowsWritten rows (the run row when the write
// updates it, one row per ledger write and one per event).
type Stats struct {
	// RunWrites counts Store.RunWrite calls.
	RunWrites int64
	// Statements counts the SQL statements they sent.
	Statements int64
	// RowsWritten counts the rows they wrote.
	RowsWritten int64
	// Commits counts the transactions that held run writes; Batched counts
	// the run writes that shared one with others (group commit).
	Commits int64
	Batched int64
}

type counters struct {
	runWrites, statements, rows, commits, batched atomic.Int64
}

// Stats returns the counters since the store was opened.
func (s *Store) Stats() Stats {
	return Stats{RunWrites: s.stats.runWrites.Load(), Statements: s.stats.statements.Load(), RowsWritten: s.stats.rows.Load(),
		Commits: s.stats.commits.Load(), Batched: s.stats.batched.Load()}
}

// RunWrite implements [store.Store].
//
// The write is one call of the run_write function (its body as of
// migrations/022_run_write_ledger_first.sql; on the store's own wire path
// the run_write of rows of 023, the same steps with the ledger writes as
// one array of rows, rawrows.go), sent alone in autocommit or
// with other writes in one group-commit transaction (commit.go): one
// round trip, one commit. Inside it, in order:
//
//  1. a transaction-scoped advisory lock on the run, alone, which
//     serialises the writers of one run so that event numbers are gapless;
//  2. one statement: the run must exist; with a fence, the claim row
//     SELECT ... FOR SHARE (while the share lock is held a takeover, which
//     updates the row, waits for our commit or rollback, so no fenced write
//     can commit after a takeover committed); the run's largest seq;
//  3. the run CAS (UPDATE ... WHERE revision = expected);
//  4. one statement finds every entry's current revision (its latest
//     record in events, a row holding it in more, its ledger table row);
//     the first miss in input order is reported;
//  5. one INSERT of the records (one folded events row, see the eventrow
//     package, with a trailing started record in a row of its own), and
//     one of the ledger table rows of entries written without an event.
//
// A failed check raises an error, which rolls the whole statement back;
// the failure is reported in that order (not found, fenced, run conflict,
// ledger conflict).
func (s *Store) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	order := make([]int, len(p.Ledger))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return strings.Compare(p.Ledger[a].Entry.CallID, p.Ledger[b].Entry.CallID)
	})
	la, err := ledgerArrays(p.Ledger, order, len(p.Events))
	if err != nil {
		return nil, err
	}
	out, err := s.commitQueued(ctx, p, order, la)
	if err != nil {
		return nil, mapErr("write run "+p.RunID, err)
	}
	res := out
	s.stats.runWrites.Add(1)
	rows := int64(len(p.Ledger) + len(p.Events))
	if la.folded.Load() {
		// One events row for the records (and one for each tail
		// record); the ledger writes without an event have their ledger
		// table rows.
		rows = 1 + int64(la.tail)
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
	s.stats.rows.Add(rows)
	if la.logSeq > 0 {
		s.compactLater(p.Tenant, p.RunID, la.logSeq)
	}
	if p.Run != nil && p.Run.Status == store.RunQueued {
		s.notifyQueued(ctx, p.Tenant)
	}
	return res, nil
}

// ledgerArr holds the ledger writes as column arrays, in lock order, with
// the stored form of each entry's decisions.
type ledgerArr struct {
	ord                                      []int32
	call, tool, effect, state, key, digest   []string
	holder                                   []string
	exp, turn, idx, attempt, epoch           []int64
	args, result, errs, approval, resolution []*string
	started, committed                       []*time.Time
	ev                                       []int32                 // 1-based position of the write's event in AllEvents, or 0
	approvalBack, resolutionBack             []*store.DecisionRecord // by input index
	// logSeq is set by the answer: the log row the write added, or 0.
	logSeq int64
	// folded is set when the write's records went in one events row,
	// and tail to the number of its last records that did not (one row
	// each).
	folded atomic.Bool
	tail   int
}

func ledgerArrays(ws []store.LedgerWrite, order []int, plain int) (*ledgerArr, error) {
	n := len(ws)
	// Each column at its length from the start, the columns of one type
	// cut from one array: a write of two entries (the common call write)
	// takes 8 allocations for its 20 columns.
	strs, ints, opts, times, i32 := make([]string, 7*n), make([]int64, 5*n), make([]*string, 5*n), make([]*time.Time, 2*n), make([]int32, 2*n)
	col := func(k int) []string { return strs[k*n : k*n : (k+1)*n] }
	icol := func(k int) []int64 { return ints[k*n : k*n : (k+1)*n] }
	ocol := func(k int) []*string { return opts[k*n : k*n : (k+1)*n] }
	backs := make([]*store.DecisionRecord, 2*n)
	c := &ledgerArr{ord: i32[:0:n], ev: i32[n:n], approvalBack: backs[:n:n], resolutionBack: backs[n:],
		call: col(0), tool: col(1), effect: col(2), state: col(3), key: col(4), digest: col(5), holder: col(6),
		exp: icol(0), turn: icol(1), idx: icol(2), attempt: icol(3), epoch: icol(4),
		args: ocol(0), result: ocol(1), errs: ocol(2), approval: ocol(3), resolution: ocol(4),
		started: times[:0:n], committed: times[n:n]}
	// Events are numbered plain ones first, then the ledger writes' in
	// input order (store.RunWriteParams.AllEvents).
	evPos := make([]int32, n)
	next := int32(plain)
	for i, w := range ws {
		if w.Event != nil {
			next++
			evPos[i] = next
		}
	}
	for _, i := range order {
		e := ws[i].Entry
		approval, back, err := decisionStored(e.Approval)
		if err != nil {
			return nil, err
		}
		c.approvalBack[i] = back
		resolution, back, err := decisionStored(e.Resolution)
		if err != nil {
			return nil, err
		}
		c.resolutionBack[i] = back
		c.ord = append(c.ord, int32(i))
		c.call = append(c.call, e.CallID)
		c.exp = append(c.exp, ws[i].ExpectedRevision)
		c.turn = append(c.turn, int64(e.Turn))
		c.idx = append(c.idx, int64(e.Index))
		c.tool = append(c.tool, e.Tool)
		c.effect = append(c.effect, e.Effect)
		c.state = append(c.state, string(e.State))
		c.key = append(c.key, e.IdempotencyKey)
		c.attempt = append(c.attempt, int64(e.Attempt))
		c.digest = append(c.digest, e.ArgsDigest)
		c.args = append(c.args, optText(e.Args))
		c.result = append(c.result, optText(e.Result))
		c.errs = append(c.errs, optText(e.Error))
		c.approval = append(c.approval, approval)
		c.resolution = append(c.resolution, resolution)
		c.holder = append(c.holder, e.Holder)
		c.epoch = append(c.epoch, e.Epoch)
		c.started = append(c.started, optTimeArg(e.StartedAt))
		c.committed = append(c.committed, optTimeArg(e.CommittedAt))
		c.ev = append(c.ev, evPos[i])
	}
	return c, nil
}

// decisionStored encodes a decision as it is stored and returns the value
// a read gives back.
func decisionStored(dec *store.DecisionRecord) (*string, *store.DecisionRecord, error) {
	if dec == nil {
		return nil, nil, nil
	}
	b, err := json.Marshal(dec)
	if err != nil {
		return nil, nil, &store.InvalidError{Field: "Decision", Reason: err.Error()}
	}
	var back store.DecisionRecord
	if err := json.Unmarshal(b, &back); err != nil {
		return nil, nil, &store.InvalidError{Field: "Decision", Reason: err.Error()}
	}
	t := string(b)
	return &t, &back, nil
}

func optText(b json.RawMessage) *string {
	if b == nil {
		return nil
	}
	t := string(b)
	return &t
}

func optTimeArg(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := store.Time(t)
	return &u
}

// call is one run_write call: its parameters and what its answer fills in.
type call struct {
	p     *store.RunWriteParams
	order []int
	la    *ledgerArr
	now   time.Time
	res   *store.RunWriteResult

	// run_write's parameters besides la's (see args).
	fenceKey, fenceHolder                  *string
	fenceEpoch, runRev, appendN, appendCRC *int64
	status, checkpoint, meta, appendText   *string
	ev                                     *evCols
	wait                                   string
	more                                   *string
	moreCRC                                *int64
	moreCalls                              []string

	// run_write's answer. pgtype values, not pointers: pgx plans the
	// scan of each column at every row (it does not keep plans across
	// queries), and a pointer to a pointer goes through its reflection
	// wrappers: about 4-7 µs per write for the twelve columns, against
	// 0.5 µs for these.
	parent, session, agent, digest, metaOut pgtype.Text
	deadline, created                       pgtype.Timestamptz
	revision, firstSeq, logLen, logSeq      pgtype.Int8
	ledgerCreated                           pgtype.FlatArray[pgtype.Timestamptz]
}

// args returns run_write's parameters, for pgx. encodeRaw encodes the
// same list (TestRawParamsMatchPgx compares the two).
func (c *call) args() []any {
	p, la, e := c.p, c.la, c.ev
	return []any{p.Tenant, p.RunID, c.now, c.fenceKey, c.fenceHolder, c.fenceEpoch, c.runRev, c.status, c.checkpoint, c.meta,
		c.appendText, c.appendN, c.appendCRC,
		la.ord, la.call, la.exp, la.turn, la.idx, la.tool, la.effect, la.state, la.key, la.attempt, la.digest,
		la.args, la.result, la.errs, la.approval, la.resolution, la.holder, la.epoch, la.started, la.committed, la.ev,
		int32(len(p.Events)),
		e.ids, e.parents, e.traces, e.spans, e.types, e.times, e.data, c.wait,
		c.more, c.moreCRC, c.moreCalls}
}

// encodeRaw encodes run_write's parameters (args) into e, for parameters
// of the types oids, and reports whether the encoder knew them all. The
// list is a local array that does not escape: its values are not
// allocated, as those of args are. The parameters of the run_write of
// rows (rt's types, rawrows.go) are encoded by encodeRows.
func (c *call) encodeRaw(e *paramEnc, oids []uint32, rt rowTypes) bool {
	if len(oids) == runWriteRowsParams {
		return c.encodeRows(e, oids, rt)
	}
	p, la, ev := c.p, c.la, c.ev
	a := [...]any{p.Tenant, p.RunID, c.now, c.fenceKey, c.fenceHolder, c.fenceEpoch, c.runRev, c.status, c.checkpoint, c.meta,
		c.appendText, c.appendN, c.appendCRC,
		la.ord, la.call, la.exp, la.turn, la.idx, la.tool, la.effect, la.state, la.key, la.attempt, la.digest,
		la.args, la.result, la.errs, la.approval, la.resolution, la.holder, la.epoch, la.started, la.committed, la.ev,
		int32(len(p.Events)),
		ev.ids, ev.parents, ev.traces, ev.spans, ev.types, ev.times, ev.data, c.wait,
		c.more, c.moreCRC, c.moreCalls}
	return e.encode(oids, a[:])
}

func textPtr(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func int8Ptr(v pgtype.Int8) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func timePtr(v pgtype.Timestamptz) *time.Time {
	if !v.Valid {
		return nil
	}
	return &v.Time
}

// newCall builds the parameters of run_write for p, with the time of now.
func newCall(p *store.RunWriteParams, order []int, la *ledgerArr, now time.Time) *call {
	c := &call{p: p, order: order, la: la, now: store.Time(now), res: &store.RunWriteResult{}}
	if f := p.Fence; f != nil {
		c.fenceKey, c.fenceHolder, c.fenceEpoch = &f.Key, &f.Holder, &f.Epoch
	}
	if u := p.Run; u != nil {
		c.wait = store.StoredWaitKind(u.Status, u.WaitKind)
		c.runRev = &u.ExpectedRevision
		st := string(u.Status)
		c.status = &st
		cp := "{}"
		if u.Checkpoint != nil {
			cp = string(u.Checkpoint)
		}
		c.checkpoint, c.meta = &cp, optText(u.Meta)
		if len(u.Append) > 0 {
			text := journal.Join(u.Append)
			n, sum := int64(len(u.Append)), journal.SumString(text)
			c.appendText, c.appendN, c.appendCRC = &text, &n, &sum
		}
	}
	c.res.Events, c.ev = eventCols(p.Tenant, p.RunID, p.AllEvents(), c.now)
	tail := eventrow.Tail(p) // run_write keeps them in rows of their own (migration 021)
	if eventrow.FoldableBefore(p, tail) {
		if text, crc, calls, ok := foldedRecords(p, la, c.res.Events, tail); ok {
			c.more, c.moreCRC, c.moreCalls = &text, &crc, calls
		}
	}
	if c.more != nil {
		la.tail = tail // before folded: RunWrite reads it after folded
	}
	la.folded.Store(c.more != nil)
	return c
}

// foldedRecords returns the more column of p's records in one events row
// (see the eventrow package): the records after the first of evs (the
// stored events, in numbering order), with their entries, but p's last
// tail ledger writes (eventrow.Tail: one row each, after the row). ok is
// false when the records keep one row each.
func foldedRecords(p *store.RunWriteParams, la *ledgerArr, evs []*store.EventRecord, tail int) (text string, crc int64, calls []string, ok bool) {
	pos := make([]int, len(p.Ledger)) // input index -> lock order
	for k, i := range la.ord {
		pos[i] = k
	}
	recs := make([]eventrow.Record, 0, len(evs))
	for _, ev := range evs[:len(p.Events)] {
		recs = append(recs, eventrow.Record{Event: ev})
	}
	next := len(p.Events)
	for i, w := range p.Ledger[:len(p.Ledger)-tail] {
		if w.Event == nil {
			continue
		}
		r := eventrow.Record{Event: evs[next], Entry: w.Entry}
		next++
		if a := la.approval[pos[i]]; a != nil {
			r.Approval = []byte(*a)
		}
		if d := la.resolution[pos[i]]; d != nil {
			r.Resolution = []byte(*d)
		}
		recs = append(recs, r)
	}
	return eventrow.Encode(recs[1:])
}

// scan reads run_write's answer and completes the result.
func (c *call) scan(row pgx.Row) (*store.RunWriteResult, error) {
	err := row.Scan(&c.parent, &c.session, &c.agent, &c.digest, &c.metaOut, &c.deadline, &c.revision, &c.created,
		&c.firstSeq, &c.ledgerCreated, &c.logLen, &c.logSeq)
	if err != nil {
		return nil, err
	}
	return c.complete()
}

// complete builds the result from run_write's answer, once scanned.
func (c *call) complete() (*store.RunWriteResult, error) {
	p, res := c.p, c.res
	if !c.firstSeq.Valid || len(c.ledgerCreated) != len(c.order) {
		return nil, errors.New("run_write answered an unexpected shape")
	}
	firstSeq := c.firstSeq.Int64
	for i, ev := range res.Events {
		ev.Seq = firstSeq + int64(i)
	}
	if u := p.Run; u != nil {
		d := &decoder{kind: "run", id: p.RunID}
		cp := json.RawMessage("{}")
		if u.Checkpoint != nil {
			cp = cloneRaw(u.Checkpoint)
		}
		res.Run = &store.Run{
			Tenant: p.Tenant, ID: p.RunID,
			ParentID: d.str("parent_id", textPtr(c.parent)), SessionID: d.str("session_id", textPtr(c.session)),
			AgentID: d.str("agent_id", textPtr(c.agent)), AgentDigest: d.str("agent_digest", textPtr(c.digest)),
			Status: u.Status, WaitKind: store.StoredWaitKind(u.Status, u.WaitKind), Checkpoint: cp, Meta: d.optJSON("meta", textPtr(c.metaOut)),
			Deadline: optTime(timePtr(c.deadline)), Revision: d.i64("revision", int8Ptr(c.revision)),
			EventSeq: firstSeq - 1 + int64(len(res.Events)), CreatedAt: d.tm("created_at", timePtr(c.created)), UpdatedAt: c.now,
			LogLen: int(d.i64("log_len", int8Ptr(c.logLen))),
		}
		if len(u.Append) > 0 && c.logSeq.Valid {
			c.la.logSeq = c.logSeq.Int64
		}
		if err := d.result(); err != nil {
			return nil, err
		}
	}
	if len(c.order) > 0 {
		res.Ledger = make([]*store.LedgerEntry, len(p.Ledger))
		for k, i := range c.order {
			w := p.Ledger[i]
			out := *w.Entry
			out.Args, out.Result, out.Error = cloneRaw(out.Args), cloneRaw(out.Result), cloneRaw(out.Error)
			out.Approval, out.Resolution = c.la.approvalBack[i], c.la.resolutionBack[i]
			out.StartedAt, out.CommittedAt = store.Time(out.StartedAt), store.Time(out.CommittedAt)
			out.Revision = w.ExpectedRevision + 1
			out.UpdatedAt = c.now
			if !c.ledgerCreated[k].Valid {
				return nil, errors.New("run_write answered no created_at for a ledger write")
			}
			out.CreatedAt = store.Time(c.ledgerCreated[k].Time)
			res.Ledger[i] = &out
		}
	}
	return res, nil
}

func (s *Store) runWriteOnce(ctx context.Context, p *store.RunWriteParams, order []int, la *ledgerArr) (*store.RunWriteResult, error) {
	c := newCall(p, order, la, s.clock.Now())
	s.stats.statements.Add(1)
	s.stats.commits.Add(1)
	res, err := s.execCall(ctx, c)
	if err != nil {
		return nil, runWriteErr(p, err)
	}
	return res, nil
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// runWriteErr turns run_write's own SQLSTATEs into the store's errors.
func runWriteErr(p *store.RunWriteParams, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case codeRunNotFound:
		return &store.NotFoundError{Kind: "run", ID: p.RunID}
	case codeFenced:
		var d struct {
			Holder   *string `json:"holder"`
			Epoch    *int64  `json:"epoch"`
			Released bool    `json:"released"`
		}
		_ = json.Unmarshal([]byte(pe.Detail), &d)
		f := p.Fence
		fe := &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch, Released: d.Released}
		if d.Holder != nil {
			fe.CurrentHolder = *d.Holder
		}
		if d.Epoch != nil {
			fe.CurrentEpoch = *d.Epoch
		}
		return fe
	case codeConflict:
		var d struct {
			Kind     string `json:"kind"`
			ID       string `json:"id"`
			Expected int64  `json:"expected"`
			Actual   int64  `json:"actual"`
		}
		if json.Unmarshal([]byte(pe.Detail), &d) != nil {
			return err
		}
		id := p.RunID
		if d.Kind == "ledger" {
			id = p.RunID + "/" + d.ID
		}
		return &store.ConflictError{Kind: d.Kind, ID: id, Expected: d.Expected, Actual: d.Actual}
	}
	return err
}
