package storesqlite

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/actoviq/actoviq-go/store"
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
	q := `SELECT ` + eventColumns + ` FROM events WHERE tenant = ? AND run_id = ? AND seq > ? ORDER BY seq`
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
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list events of run "+p.RunID, mapErr(ctx, err))
	}
	return out, nil
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
