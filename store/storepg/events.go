package storepg

import (
	"context"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// eventArgs returns the stored copies of evs (tenant, run, time filled in)
// and the event columns of run_write at [3:10].
func eventArgs(tenant, runID string, evs []*store.EventRecord, now time.Time) ([]*store.EventRecord, []any) {
	n := len(evs)
	out := make([]*store.EventRecord, n)
	ids, parents, traces, spans, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	times, data := make([]time.Time, n), make([]*string, n)
	for i, ev := range evs {
		c := *ev
		c.Tenant, c.RunID = tenant, runID
		c.Time = store.Time(c.Time)
		if c.Time.IsZero() {
			c.Time = now
		}
		if ev.Data != nil {
			c.Data = append([]byte(nil), ev.Data...)
			d := string(ev.Data)
			data[i] = &d
		}
		out[i] = &c
		ids[i], parents[i], traces[i], spans[i], types[i], times[i] = c.ID, c.ParentRunID, c.TraceID, c.SpanID, c.Type, c.Time
	}
	return out, []any{tenant, runID, int64(n), ids, parents, traces, spans, types, times, data}
}

// EventList implements [store.Store].
func (s *Store) EventList(ctx context.Context, p *store.EventListParams) ([]*store.EventRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data
		FROM {{schema}}.events WHERE tenant = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`),
		p.Tenant, p.RunID, p.AfterSeq, limitArg(p.Limit))
	if err != nil {
		return nil, mapErr("list events of run "+p.RunID, err)
	}
	defer rows.Close()
	var out []*store.EventRecord
	for rows.Next() {
		var (
			tenant, runID, id, parent, trace, span, typ, data *string
			seq                                               *int64
			tm                                                *time.Time
		)
		if err := rows.Scan(&tenant, &runID, &seq, &id, &parent, &trace, &span, &typ, &tm, &data); err != nil {
			return nil, mapErr("list events of run "+p.RunID, err)
		}
		d := &decoder{kind: "event", id: p.RunID}
		if seq != nil {
			d.id = fmt.Sprintf("%s#%d", p.RunID, *seq)
		}
		ev := &store.EventRecord{
			Tenant:      d.str("tenant", tenant),
			RunID:       d.str("run_id", runID),
			Seq:         d.i64("seq", seq),
			ID:          d.str("id", id),
			ParentRunID: d.str("parent_run_id", parent),
			TraceID:     d.str("trace_id", trace),
			SpanID:      d.str("span_id", span),
			Type:        d.str("type", typ),
			Time:        d.tm("time", tm),
			Data:        d.optJSON("data", data),
		}
		if err := d.result(); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list events of run "+p.RunID, err)
	}
	return out, nil
}
