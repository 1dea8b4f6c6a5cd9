package storepg

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/actoviq/actoviq-go/store"
)

// The run write's own wire path.
//
// pgx encodes a query's arguments generically: for each of run_write's 46
// parameters (twenty of them arrays) it looks up an encode plan, wraps
// the value and encodes element by element, and it scans the answer the
// same way; about 20 µs of client CPU per write and most of its
// allocations (BenchmarkCallWrites, docs/measured.md). The write
// therefore sends run_write itself: its parameters encoded here in
// PostgreSQL's binary format, from the few Go types newCall gives them,
// into a reused buffer, and its answer decoded here, on the connection's
// prepared statement (pgx.Conn.Prepare, one per connection, as pgx's
// own statement cache would hold it).
//
// Nothing of the statement changes: the same text, the same parameters,
// the same answer. The encoder follows the prepared statement's parameter
// types as the server reports them: a parameter whose type it does not
// know with the value newCall gives it (run_write's signature changed),
// an answer of another shape, a pool with a tracer or a query mode other
// than pgx's default all send the write through pgx as before.

// Type OIDs of run_write's parameters and answer.
const (
	oidInt4           = 23
	oidInt8           = 20
	oidText           = 25
	oidTimestamptz    = 1184
	oidInt4Array      = 1007
	oidTextArray      = 1009
	oidInt8Array      = 1016
	oidTimestamptzArr = 1185
)

// runWriteAnswer is the type of each column of run_write's answer.
var runWriteAnswer = [...]uint32{oidText, oidText, oidText, oidText, oidText, oidTimestamptz, oidInt8, oidTimestamptz,
	oidInt8, oidTimestamptzArr, oidInt8, oidInt8}

// binaryFormat asks for every parameter and column in binary format.
var binaryFormat = []int16{pgtype.BinaryFormatCode}

// rawOK reports whether conns of pool cfg can take the write's own path:
// pgx's default query mode (prepared statements kept per connection) and
// no tracer (which would miss the write).
func rawOK(cfg *pgx.ConnConfig) bool {
	return cfg.Tracer == nil && cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// rawStatement returns conn's prepared run_write when its parameters and
// answer are what the encoder and decoder know, or nil: the run_write of
// rows (migration 023) when the store found its row types, else the
// 46-parameter one.
func (s *Store) rawStatement(ctx context.Context, conn *pgx.Conn) *pgconn.StatementDescription {
	if !s.raw {
		return nil
	}
	if s.rows.entryArr != 0 {
		if sd := prepareRaw(ctx, conn, s.q(runWriteRowsCall)); sd != nil && s.rows.params(sd.ParamOIDs) {
			return sd
		}
	}
	return prepareRaw(ctx, conn, s.q(runWriteCall))
}

// prepareRaw prepares q on conn and returns it when its answer is
// run_write's as decodeRaw reads it.
func prepareRaw(ctx context.Context, conn *pgx.Conn, q string) *pgconn.StatementDescription {
	sd, err := conn.Prepare(ctx, q, q)
	if err != nil || len(sd.Fields) != len(runWriteAnswer) {
		return nil // pgx's path reports the error
	}
	for i, f := range sd.Fields {
		if f.DataTypeOID != runWriteAnswer[i] {
			return nil
		}
	}
	return sd
}

// execCall sends c alone, one autocommit statement, and reads its answer.
func (s *Store) execCall(ctx context.Context, c *call) (*store.RunWriteResult, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	sd := s.rawStatement(ctx, conn.Conn())
	if sd == nil {
		return c.scan(conn.QueryRow(ctx, s.q(runWriteCall), c.args()...))
	}
	enc := encPool.Get().(*paramEnc)
	defer encPool.Put(enc)
	if !c.encodeRaw(enc, sd.ParamOIDs, s.rows) {
		return c.scan(conn.QueryRow(ctx, s.q(runWriteCall), c.args()...))
	}
	return exchange(ctx, conn.Conn(), sd, enc.vals, c)
}

// sendBatchRaw sends the batch of calls (one per write of live) on conn
// its own way and settles it (settleBatch), as sendBatch does with pgx:
// BEGIN, each run_write (and the release of a write that releases its
// claim), COMMIT, in one round trip. It reports false, having sent
// nothing, when the writes must go pgx's way.
func (s *Store) sendBatchRaw(ctx context.Context, conn *pgxpool.Conn, live []*pgReq, calls []*call) bool {
	sd := s.rawStatement(ctx, conn.Conn())
	if sd == nil {
		return false
	}
	var rel *pgconn.StatementDescription
	enc := encPool.Get().(*paramEnc)
	defer encPool.Put(enc)
	// slots names what each statement is: BEGIN, call i's run_write, call
	// i's release, COMMIT; the results come in that order, and after an
	// error the server sends none for the rest.
	type slot struct {
		call    int // -1: BEGIN or COMMIT
		release bool
	}
	slots := make([]slot, 0, len(calls)+2)
	b := &pgconn.Batch{}
	b.ExecParams("BEGIN", nil, nil, nil, nil)
	slots = append(slots, slot{call: -1})
	for i, c := range calls {
		if !c.encodeRaw(enc, sd.ParamOIDs, s.rows) {
			return false
		}
		b.ExecStatement(sd, enc.vals, binaryFormat, binaryFormat)
		slots = append(slots, slot{call: i})
		if p := c.p; p.Release {
			if rel == nil {
				q := s.q(releaseClaim)
				var err error
				if rel, err = conn.Conn().Prepare(ctx, q, q); err != nil {
					return false
				}
			}
			if !enc.encode(rel.ParamOIDs, []any{p.Tenant, p.Fence.Key, p.Fence.Holder, p.Fence.Epoch, c.now}) {
				return false
			}
			b.ExecStatement(rel, enc.vals, binaryFormat, binaryFormat)
			slots = append(slots, slot{call: i, release: true})
		}
	}
	b.ExecParams("COMMIT", nil, nil, nil, nil)
	slots = append(slots, slot{call: -1})
	s.stats.statements.Add(int64(len(slots)))
	results := make([]*store.RunWriteResult, len(live))
	errs := make([]error, len(live))
	mrr := conn.Conn().PgConn().ExecBatch(ctx, b)
	var tag pgconn.CommandTag
	n := 0 // results read
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		if n >= len(slots) {
			_, _ = rr.Close()
			continue
		}
		sl := slots[n]
		n++
		switch {
		case sl.call >= 0 && !sl.release:
			results[sl.call], errs[sl.call] = readAnswer(calls[sl.call], rr)
		case sl.call >= 0:
			if _, err := rr.Close(); err != nil && errs[sl.call] == nil {
				errs[sl.call] = err
			}
		case n == len(slots):
			tag, _ = rr.Close()
		default:
			_, _ = rr.Close()
		}
	}
	err := mrr.Close()
	failed := -1
	for i, e := range errs {
		if e != nil {
			failed = i
			break
		}
	}
	if err != nil && failed < 0 && n < len(slots) && slots[n].call >= 0 {
		// The statement that got no answer but the error was call i's.
		failed = slots[n].call
		errs[failed] = err
	}
	s.settleBatch(ctx, conn, live, results, errs, failed, tag, err)
	return true
}

// readAnswer reads c's run_write answer from rr and closes rr.
func readAnswer(c *call, rr *pgconn.ResultReader) (*store.RunWriteResult, error) {
	rows, derr := c.readRaw(rr)
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	return c.answered(rows, derr)
}

// readRaw decodes the rows of rr (run_write answers one).
func (c *call) readRaw(rr *pgconn.ResultReader) (rows int, err error) {
	for rr.NextRow() {
		rows++
		if rows == 1 {
			err = c.decodeRaw(rr.Values())
		}
	}
	return rows, err
}

// answered completes the result of a statement that succeeded with rows
// rows, the first decoded with derr.
func (c *call) answered(rows int, derr error) (*store.RunWriteResult, error) {
	if rows != 1 {
		return nil, errors.New("run_write answered no row")
	}
	if derr != nil {
		return nil, derr
	}
	return c.complete()
}

// forgetStatement drops conn's prepared run_write after an error that
// says the server no longer has it or its plan changed (run_write was
// replaced), as pgx's statement cache does: the next write prepares it
// again.
func forgetStatement(ctx context.Context, conn *pgx.Conn, sd *pgconn.StatementDescription, err error) {
	switch sqlState(err) {
	case "26000", "0A000": // invalid_sql_statement_name; cached plan must not change result type
		if !conn.PgConn().IsClosed() {
			_ = conn.Deallocate(context.WithoutCancel(ctx), sd.SQL)
		}
	}
}

// decodeRaw reads run_write's answer, in binary format, into c.
func (c *call) decodeRaw(v [][]byte) error {
	if len(v) != len(runWriteAnswer) {
		return errors.New("run_write answered an unexpected shape")
	}
	c.parent, c.session, c.agent, c.digest, c.metaOut = rawText(v[0]), rawText(v[1]), rawText(v[2]), rawText(v[3]), rawText(v[4])
	var err error
	c.deadline, err = rawTime(v[5])
	if err != nil {
		return err
	}
	if c.revision, err = rawInt8(v[6]); err != nil {
		return err
	}
	if c.created, err = rawTime(v[7]); err != nil {
		return err
	}
	if c.firstSeq, err = rawInt8(v[8]); err != nil {
		return err
	}
	if c.ledgerCreated, err = rawTimes(v[9], c.ledgerCreated[:0]); err != nil {
		return err
	}
	if c.logLen, err = rawInt8(v[10]); err != nil {
		return err
	}
	c.logSeq, err = rawInt8(v[11])
	return err
}

func rawText(b []byte) pgtype.Text {
	if b == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: string(b), Valid: true}
}

func rawInt8(b []byte) (pgtype.Int8, error) {
	if b == nil {
		return pgtype.Int8{}, nil
	}
	if len(b) != 8 {
		return pgtype.Int8{}, errors.New("run_write answered a bigint of " + itoa(len(b)) + " bytes")
	}
	return pgtype.Int8{Int64: int64(binary.BigEndian.Uint64(b)), Valid: true}, nil
}

// y2k is PostgreSQL's epoch, in microseconds after Unix's.
const y2k = 946_684_800 * 1_000_000

func rawTime(b []byte) (pgtype.Timestamptz, error) {
	if b == nil {
		return pgtype.Timestamptz{}, nil
	}
	if len(b) != 8 {
		return pgtype.Timestamptz{}, errors.New("run_write answered a timestamptz of " + itoa(len(b)) + " bytes")
	}
	us := int64(binary.BigEndian.Uint64(b))
	switch us {
	case math.MaxInt64:
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, nil
	case math.MinInt64:
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, nil
	}
	return pgtype.Timestamptz{Time: time.Unix(y2k/1_000_000+us/1_000_000, (y2k%1_000_000*1_000)+(us%1_000_000*1_000)), Valid: true}, nil
}

var errBadTimes = errors.New("run_write answered a malformed timestamptz[]")

// rawTimes decodes a one-dimensional timestamptz[] (NULL is nil).
func rawTimes(b []byte, out []pgtype.Timestamptz) ([]pgtype.Timestamptz, error) {
	if b == nil {
		return nil, nil
	}
	if out == nil {
		out = []pgtype.Timestamptz{}
	}
	bad := errBadTimes
	if len(b) < 12 {
		return nil, bad
	}
	ndim, elem := int32(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint32(b[8:])
	if elem != oidTimestamptz {
		return nil, bad
	}
	switch ndim {
	case 0:
		return out[:0], nil
	case 1:
	default:
		return nil, bad
	}
	if len(b) < 20 {
		return nil, bad
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:])))
	b = b[20:]
	if n < 0 || len(b) < 4*n {
		return nil, bad
	}
	for range n {
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l == -1 {
			out = append(out, pgtype.Timestamptz{})
			continue
		}
		if l != 8 || len(b) < 8 {
			return nil, bad
		}
		t, err := rawTime(b[:8])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		b = b[8:]
	}
	return out, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// paramEnc holds one write's parameters in binary format.
type paramEnc struct {
	buf  []byte
	ends []int // end of each value in buf, -1 for NULL
	vals [][]byte
	rows rowTypes // the row types of the run_write of rows (rawrows.go)
}

var encPool = sync.Pool{New: func() any { return &paramEnc{buf: make([]byte, 0, 4096)} }}

// encode encodes args as parameters of the types oids, and reports
// whether it knew every pair of type and value.
func (e *paramEnc) encode(oids []uint32, args []any) bool {
	if len(oids) != len(args) {
		return false
	}
	e.buf, e.ends, e.vals = e.buf[:0], e.ends[:0], e.vals[:0]
	for i, a := range args {
		null, ok := e.value(oids[i], a)
		if !ok {
			return false
		}
		if null {
			e.ends = append(e.ends, -1)
		} else {
			e.ends = append(e.ends, len(e.buf))
		}
	}
	start := 0
	for _, end := range e.ends {
		if end < 0 {
			e.vals = append(e.vals, nil)
			continue
		}
		e.vals = append(e.vals, e.buf[start:end:end])
		start = end
	}
	if cap(e.buf) > 1<<20 { // one huge write does not keep its buffer
		e.buf = make([]byte, 0, 4096)
	}
	return true
}

func (e *paramEnc) u32(v uint32) { e.buf = binary.BigEndian.AppendUint32(e.buf, v) }
func (e *paramEnc) u64(v uint64) { e.buf = binary.BigEndian.AppendUint64(e.buf, v) }

func (e *paramEnc) time(t time.Time) {
	e.u64(uint64(t.Unix()*1_000_000 + int64(t.Nanosecond())/1_000 - y2k))
}

// head writes an array's header: n elements of type elem, hasNull. An
// empty array has one dimension of length 0, as pgx sends it.
func (e *paramEnc) head(n int, elem uint32, hasNull bool) {
	e.u32(1)
	if hasNull {
		e.u32(1)
	} else {
		e.u32(0)
	}
	e.u32(elem)
	e.u32(uint32(n))
	e.u32(1) // lower bound
}

// value appends a; null reports a NULL, ok that the pair was known.
func (e *paramEnc) value(oid uint32, a any) (null, ok bool) {
	if a == nil {
		return true, true
	}
	switch v := a.(type) {
	case *entriesArg:
		if oid == 0 || oid != e.rows.entryArr {
			return false, false
		}
		e.entries((*call)(v))
		return false, true
	case *eventsArg:
		if oid == 0 || oid != e.rows.eventArr {
			return false, false
		}
		e.events((*call)(v))
		return false, true
	}
	switch oid {
	case oidText:
		switch v := a.(type) {
		case string:
			e.buf = append(e.buf, v...)
			return false, true
		case *string:
			if v == nil {
				return true, true
			}
			e.buf = append(e.buf, *v...)
			return false, true
		}
	case oidInt8:
		switch v := a.(type) {
		case int64:
			e.u64(uint64(v))
			return false, true
		case *int64:
			if v == nil {
				return true, true
			}
			e.u64(uint64(*v))
			return false, true
		}
	case oidInt4:
		if v, ok := a.(int32); ok {
			e.u32(uint32(v))
			return false, true
		}
	case oidTimestamptz:
		switch v := a.(type) {
		case time.Time:
			e.time(v)
			return false, true
		case *time.Time:
			if v == nil {
				return true, true
			}
			e.time(*v)
			return false, true
		}
	case oidTextArray:
		switch v := a.(type) {
		case []string:
			if v == nil {
				return true, true
			}
			e.head(len(v), oidText, false)
			for _, x := range v {
				e.u32(uint32(len(x)))
				e.buf = append(e.buf, x...)
			}
			return false, true
		case []*string:
			if v == nil {
				return true, true
			}
			hasNull := false
			for _, x := range v {
				hasNull = hasNull || x == nil
			}
			e.head(len(v), oidText, hasNull)
			for _, x := range v {
				if x == nil {
					e.u32(math.MaxUint32) // -1: NULL
					continue
				}
				e.u32(uint32(len(*x)))
				e.buf = append(e.buf, *x...)
			}
			return false, true
		}
	case oidInt8Array:
		if v, ok := a.([]int64); ok {
			if v == nil {
				return true, true
			}
			e.head(len(v), oidInt8, false)
			for _, x := range v {
				e.u32(8)
				e.u64(uint64(x))
			}
			return false, true
		}
	case oidInt4Array:
		if v, ok := a.([]int32); ok {
			if v == nil {
				return true, true
			}
			e.head(len(v), oidInt4, false)
			for _, x := range v {
				e.u32(4)
				e.u32(uint32(x))
			}
			return false, true
		}
	case oidTimestamptzArr:
		switch v := a.(type) {
		case []time.Time:
			if v == nil {
				return true, true
			}
			e.head(len(v), oidTimestamptz, false)
			for _, x := range v {
				e.u32(8)
				e.time(x)
			}
			return false, true
		case []*time.Time:
			if v == nil {
				return true, true
			}
			hasNull := false
			for _, x := range v {
				hasNull = hasNull || x == nil
			}
			e.head(len(v), oidTimestamptz, hasNull)
			for _, x := range v {
				if x == nil {
					e.u32(math.MaxUint32)
					continue
				}
				e.u32(8)
				e.time(*x)
			}
			return false, true
		}
	}
	return false, false
}
