package storepg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
)

// evCols are the event columns of run_write ($36-$42) and of a run's
// creation.
type evCols struct {
	ids, parents, traces, spans, types []string
	times                              []time.Time
	data                               []*string
}

// eventCols returns the stored copies of evs (tenant, run, time filled
// in) and their columns.
func eventCols(tenant, runID string, evs []*store.EventRecord, now time.Time) ([]*store.EventRecord, *evCols) {
	n := len(evs)
	out := make([]*store.EventRecord, n)
	recs := make([]store.EventRecord, n) // the copies, in one allocation
	strs := make([]string, 5*n)
	e := &evCols{ids: strs[:n:n], parents: strs[n : 2*n : 2*n], traces: strs[2*n : 3*n : 3*n], spans: strs[3*n : 4*n : 4*n], types: strs[4*n:],
		times: make([]time.Time, n), data: make([]*string, n)}
	for i, ev := range evs {
		c := &recs[i]
		*c = *ev
		c.Tenant, c.RunID = tenant, runID
		c.Time = store.Time(c.Time)
		if c.Time.IsZero() {
			c.Time = now
		}
		if ev.Data != nil {
			c.Data = append([]byte(nil), ev.Data...)
			d := string(ev.Data)
			e.data[i] = &d
		}
		out[i] = c
		e.ids[i], e.parents[i], e.traces[i], e.spans[i], e.types[i], e.times[i] = c.ID, c.ParentRunID, c.TraceID, c.SpanID, c.Type, c.Time
	}
	return out, e
}

// eventArgs returns the stored copies of evs (tenant, run, time filled in)
// and the event columns of run_write at [3:10].
func eventArgs(tenant, runID string, evs []*store.EventRecord, now time.Time) ([]*store.EventRecord, []any) {
	out, e := eventCols(tenant, runID, evs, now)
	return out, []any{tenant, runID, int64(len(evs)), e.ids, e.parents, e.traces, e.spans, e.types, e.times, e.data}
}

// EventList implements [store.Store].
func (s *Store) EventList(ctx context.Context, p *store.EventListParams) ([]*store.EventRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	// A row holding several records (first_seq set) gives them all, those
	// after AfterSeq; Limit rows give at least Limit records.
	rows, err := s.pool.Query(ctx, s.q(`SELECT tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
			first_seq, more, more_crc, more_calls, entry_updated
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
			m                                                 multiCols
		)
		if err := rows.Scan(append([]any{&tenant, &runID, &seq, &id, &parent, &trace, &span, &typ, &tm, &data}, m.dest()...)...); err != nil {
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
		if m.firstSeq == nil {
			out = append(out, ev)
			continue
		}
		recs, err := m.decode(ev.Tenant, ev.RunID, ev.Seq)
		if err != nil {
			return nil, err
		}
		ev.Seq = *m.firstSeq
		if ev.Seq > p.AfterSeq {
			out = append(out, ev)
		}
		for _, r := range recs {
			if r.Event.Seq > p.AfterSeq {
				out = append(out, r.Event)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list events of run "+p.RunID, err)
	}
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// multiCols are the columns of an events row that holds several records
// (see the eventrow package): first_seq, more, more_crc, more_calls (NULL
// when more holds no ledger record) and entry_updated.
type multiCols struct {
	firstSeq, crc *int64
	more          *string
	calls         []string
	written       *time.Time
}

func (m *multiCols) dest() []any { return []any{&m.firstSeq, &m.more, &m.crc, &m.calls, &m.written} }

// decode returns the records of the row's more column (the row is
// tenant/runID's, its last record numbered seq).
func (m *multiCols) decode(tenant, runID string, seq int64) ([]eventrow.Record, error) {
	if m.firstSeq == nil || m.more == nil || m.crc == nil || m.written == nil {
		return nil, &store.DataError{Kind: "event", ID: fmt.Sprintf("%s#%d", runID, seq),
			Err: errors.New("a row of several records lacks first_seq, more, more_crc or entry_updated")}
	}
	return eventrow.Decode(&eventrow.Row{Tenant: tenant, RunID: runID, FirstSeq: *m.firstSeq, Seq: seq,
		More: []byte(*m.more), MoreCRC: *m.crc, MoreCalls: m.calls, Written: m.written.UTC()})
}
