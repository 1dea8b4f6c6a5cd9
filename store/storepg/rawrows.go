package storepg

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// The run_write of rows (migration 023).
//
// Most of run_write's server time was starting its statements, and each
// l_x[i] of its column arrays is an expression PostgreSQL builds per
// statement per write: the INSERT of a ledger write's records alone had
// 31. The second run_write takes the ledger writes as one array of
// run_write_entry rows (each with its event's fields) and the write's
// other events as run_write_event rows; the unnested rows' fields are
// plain columns. Same checks, rows written and answer as the 46-parameter
// run_write, which stays for pgx's generic path (args) and for binaries
// of before 023.
//
// The rows go in binary format, which names their type: the OIDs of the
// two types in the store's schema, found once by loadRowTypes.

// runWriteRowsCall is the run write of rows (one statement, as
// runWriteCall).
const runWriteRowsCall = `SELECT o_parent, o_session, o_agent, o_digest, o_meta, o_deadline, o_revision, o_created,
	o_first_seq, o_ledger_created, o_log_len, o_log_seq
	FROM {{schema}}.run_write($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
		$11, $12, $13, $14, $15, $16, $17, $18, $19)`

// runWriteRowsParams is its number of parameters.
const runWriteRowsParams = 19

// runWriteEntryFields and runWriteEventFields are the field types of
// run_write_entry and run_write_event, in order.
var (
	runWriteEntryFields = []uint32{oidInt4, oidText, oidInt8, oidInt8, oidInt8, oidText, oidText, oidText,
		oidText, oidInt8, oidText, oidText, oidText, oidText,
		oidText, oidText, oidText, oidInt8, oidTimestamptz, oidTimestamptz,
		oidInt4, oidText, oidText, oidText, oidText, oidText, oidTimestamptz, oidText}
	runWriteEventFields = []uint32{oidText, oidText, oidText, oidText, oidText, oidTimestamptz, oidText}
)

// rowTypes holds the OIDs of run_write_entry and run_write_event and of
// their array types in the store's schema; zero when they are not there
// as the encoder knows them (every write then takes the 46-parameter
// run_write).
type rowTypes struct {
	entry, entryArr, event, eventArr uint32
}

// loadRowTypes finds the row types of run_write in s's schema.
func (s *Store) loadRowTypes(ctx context.Context) rowTypes {
	rows, err := s.pool.Query(ctx, `SELECT t.typname, t.oid, t.typarray,
			array(SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
		FROM pg_type t WHERE t.typnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = $1)
			AND t.typname IN ('run_write_entry', 'run_write_event')`, s.schema)
	if err != nil {
		return rowTypes{}
	}
	defer rows.Close()
	var rt rowTypes
	for rows.Next() {
		var name string
		var oid, arr uint32
		var fields []uint32
		if rows.Scan(&name, &oid, &arr, &fields) != nil {
			return rowTypes{}
		}
		switch {
		case name == "run_write_entry" && slices.Equal(fields, runWriteEntryFields):
			rt.entry, rt.entryArr = oid, arr
		case name == "run_write_event" && slices.Equal(fields, runWriteEventFields):
			rt.event, rt.eventArr = oid, arr
		}
	}
	if rows.Err() != nil || rt.entryArr == 0 || rt.eventArr == 0 {
		return rowTypes{}
	}
	return rt
}

// params reports whether oids are the parameter types of the run_write of
// rows.
func (rt rowTypes) params(oids []uint32) bool {
	want := [...]uint32{oidText, oidText, oidTimestamptz, oidText, oidText, oidInt8, oidInt8, oidText, oidText, oidText,
		oidText, oidInt8, oidInt8, rt.entryArr, rt.eventArr, oidText, oidText, oidInt8, oidTextArray}
	return rt.entryArr != 0 && slices.Equal(oids, want[:])
}

// entriesArg and eventsArg stand for the rows parameters of a call (a
// pointer in an interface is not allocated).
type (
	entriesArg call
	eventsArg  call
)

// encodeRows encodes the parameters of the run_write of rows; as encodeRaw.
func (c *call) encodeRows(e *paramEnc, oids []uint32, rt rowTypes) bool {
	if !rt.params(oids) {
		return false
	}
	p := c.p
	e.rows = rt
	a := [...]any{p.Tenant, p.RunID, c.now, c.fenceKey, c.fenceHolder, c.fenceEpoch, c.runRev, c.status, c.checkpoint, c.meta,
		c.appendText, c.appendN, c.appendCRC,
		(*entriesArg)(c), (*eventsArg)(c), c.wait,
		c.more, c.moreCRC, c.moreCalls}
	return e.encode(oids, a[:])
}

// entries appends c's ledger writes, in lock order, as a run_write_entry[]
// (each with its event's fields, NULL when it has none).
func (e *paramEnc) entries(c *call) {
	la, ev := c.la, c.ev
	n := len(la.call)
	e.head(n, e.rows.entry, false)
	for k := range n {
		at := len(e.buf)
		e.u32(0) // the element's length, set below
		e.u32(uint32(len(runWriteEntryFields)))
		e.fInt4(la.ord[k])
		e.fText(la.call[k])
		e.fInt8(la.exp[k])
		e.fInt8(la.turn[k])
		e.fInt8(la.idx[k])
		e.fText(la.tool[k])
		e.fText(la.effect[k])
		e.fText(la.state[k])
		e.fText(la.key[k])
		e.fInt8(la.attempt[k])
		e.fText(la.digest[k])
		e.fOptText(la.args[k])
		e.fOptText(la.result[k])
		e.fOptText(la.errs[k])
		e.fOptText(la.approval[k])
		e.fOptText(la.resolution[k])
		e.fText(la.holder[k])
		e.fInt8(la.epoch[k])
		e.fOptTime(la.started[k])
		e.fOptTime(la.committed[k])
		e.fInt4(la.ev[k])
		if j := int(la.ev[k]) - 1; j >= 0 {
			e.eventFields(ev, j)
		} else {
			for _, oid := range runWriteEventFields {
				e.fNull(oid)
			}
		}
		binary.BigEndian.PutUint32(e.buf[at:], uint32(len(e.buf)-at-4))
	}
}

// events appends c's plain events (numbered first) as a run_write_event[].
func (e *paramEnc) events(c *call) {
	ev := c.ev
	n := len(c.p.Events)
	e.head(n, e.rows.event, false)
	for j := range n {
		at := len(e.buf)
		e.u32(0)
		e.u32(uint32(len(runWriteEventFields)))
		e.eventFields(ev, j)
		binary.BigEndian.PutUint32(e.buf[at:], uint32(len(e.buf)-at-4))
	}
}

// eventFields appends the fields of ev's j-th event, in
// runWriteEventFields' order.
func (e *paramEnc) eventFields(ev *evCols, j int) {
	e.fText(ev.ids[j])
	e.fText(ev.parents[j])
	e.fText(ev.traces[j])
	e.fText(ev.spans[j])
	e.fText(ev.types[j])
	e.fTime(ev.times[j])
	e.fOptText(ev.data[j])
}

// A field of a row: its type, its length (-1 for NULL), its bytes.

func (e *paramEnc) fNull(oid uint32) {
	e.u32(oid)
	e.u32(math.MaxUint32)
}

func (e *paramEnc) fText(v string) {
	e.u32(oidText)
	e.u32(uint32(len(v)))
	e.buf = append(e.buf, v...)
}

func (e *paramEnc) fOptText(v *string) {
	if v == nil {
		e.fNull(oidText)
		return
	}
	e.fText(*v)
}

func (e *paramEnc) fInt8(v int64) {
	e.u32(oidInt8)
	e.u32(8)
	e.u64(uint64(v))
}

func (e *paramEnc) fInt4(v int32) {
	e.u32(oidInt4)
	e.u32(4)
	e.u32(uint32(v))
}

func (e *paramEnc) fTime(t time.Time) {
	e.u32(oidTimestamptz)
	e.u32(8)
	e.time(t)
}

func (e *paramEnc) fOptTime(t *time.Time) {
	if t == nil {
		e.fNull(oidTimestamptz)
		return
	}
	e.fTime(*t)
}
