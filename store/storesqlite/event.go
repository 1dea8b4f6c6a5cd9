package storesqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
)

const eventColumns = `tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data`

func scanEvent(sc scanner) (*store.EventRecord, error) {
	var (
		e    store.EventRecord
		at   int64
		data sql.NullString
	)
	err := sc.Scan(&e.Tenant, &e.RunID, &e.Seq, &e.ID, &e.ParentRunID, &e.TraceID, &e.SpanID, &e.Type, &at, &data)
	d := decoder{kind: "event", id: e.RunID + "#" + strconv.FormatInt(e.Seq, 10)}
	if err != nil {
		return nil, d.scanErr(err)
	}
	e.Time = fromMicros(at)
	e.Data = d.json("data", data)
	if err := d.result(); err != nil {
		return nil, err
	}
	return &e, nil
}

// EventList implements [store.Store]: events with Seq > AfterSeq in order.
func (s *Store) EventList(ctx context.Context, p *store.EventListParams) ([]*store.EventRecord, error) {
	if err := validate(p); err != nil {
		return nil, err
	}
	// A row holding several records (first_seq set) gives them all, those
	// after AfterSeq; Limit rows give at least Limit records.
	q := `SELECT ` + eventColumns + `, first_seq, more, more_crc, more_calls, entry_updated FROM events
		WHERE tenant = ? AND run_id = ? AND seq > ? ORDER BY seq`
	args := []any{p.Tenant, p.RunID, p.AfterSeq}
	if p.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, p.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap("list events of run "+p.RunID, mapErr(ctx, err))
	}
	defer rows.Close()
	out := []*store.EventRecord{}
	for rows.Next() {
		var m multiCols
		e, err := scanEvent(m.after(rows))
		if err != nil {
			return nil, err
		}
		if !m.firstSeq.Valid {
			out = append(out, e)
			continue
		}
		recs, err := m.decode(e.Tenant, e.RunID, e.Seq)
		if err != nil {
			return nil, err
		}
		e.Seq = m.firstSeq.Int64
		if e.Seq > p.AfterSeq {
			out = append(out, e)
		}
		for _, r := range recs {
			if r.Event.Seq > p.AfterSeq {
				out = append(out, r.Event)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list events of run "+p.RunID, mapErr(ctx, err))
	}
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// multiCols are the columns of an events row that holds several records
// (see the eventrow package), scanned after the others.
type multiCols struct {
	firstSeq, crc sql.NullInt64
	more, calls   sql.NullString
	written       sql.NullInt64
}

// after returns a scanner that reads sc's row: the leading columns into
// the caller's destinations, then m's five.
func (m *multiCols) after(sc scanner) scanner {
	return scanFunc(func(dest ...any) error {
		return sc.Scan(append(dest, &m.firstSeq, &m.more, &m.crc, &m.calls, &m.written)...)
	})
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// decode returns the records of the row's more column (the row is
// tenant/runID's, its last record numbered seq).
func (m *multiCols) decode(tenant, runID string, seq int64) ([]eventrow.Record, error) {
	row := &eventrow.Row{Tenant: tenant, RunID: runID, FirstSeq: m.firstSeq.Int64, Seq: seq,
		More: []byte(m.more.String), MoreCRC: m.crc.Int64}
	bad := func(why string) error {
		return &store.DataError{Kind: "event", ID: runID + "#" + strconv.FormatInt(seq, 10), Err: errors.New(why)}
	}
	if !m.more.Valid || !m.crc.Valid || !m.written.Valid {
		return nil, bad("a row of several records lacks more, more_crc or entry_updated")
	}
	if m.calls.Valid {
		if err := json.Unmarshal([]byte(m.calls.String), &row.MoreCalls); err != nil {
			return nil, bad("more_calls: " + err.Error())
		}
	}
	row.Written = fromMicros(m.written.Int64)
	recs, err := eventrow.Decode(row)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if e := r.Entry; e != nil {
			if e.Approval != nil {
				normDecision(e.Approval)
			}
			if e.Resolution != nil {
				normDecision(e.Resolution)
			}
		}
	}
	return recs, nil
}

// insertEvents stores evs with Seq first, first+1, ... inside tx and
// returns the stored copies. A zero Time is set to now. The rows go in
// multi-row INSERTs of up to eventChunk rows.
func insertEvents(ctx context.Context, tx querier, tenant, runID string, first, now int64, evs []*store.EventRecord) ([]*store.EventRecord, error) {
	out := make([]*store.EventRecord, len(evs))
	for start := 0; start < len(evs); start += eventChunk {
		chunk := evs[start:min(start+eventChunk, len(evs))]
		args := make([]any, 0, 10*len(chunk))
		for i, ev := range chunk {
			e := *ev
			e.Tenant, e.RunID, e.Seq = tenant, runID, first+int64(start+i)
			e.Data = cloneJSON(ev.Data)
			if e.Time.IsZero() {
				e.Time = fromMicros(now)
			} else {
				e.Time = store.Time(e.Time)
			}
			args = append(args, e.Tenant, e.RunID, e.Seq, e.ID, e.ParentRunID, e.TraceID, e.SpanID, e.Type, micros(e.Time), optJSON(e.Data))
			out[start+i] = &e
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (`+eventColumns+`) VALUES `+insertValues(len(chunk), 10), args...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// eventChunk bounds the rows of one event INSERT (and so the number of
// distinct statement texts the statement cache holds for it).
const eventChunk = 16
