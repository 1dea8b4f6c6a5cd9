package actoviq

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// EventsParams filters [Runtime.Events].
type EventsParams struct {
	// AfterSeq returns only events with a larger sequence number; zero
	// means from the first event.
	AfterSeq int64
	// Limit caps how many events are returned; zero means all.
	Limit int
}

// Events reads a run's stored events in sequence order, in the envelope
// sinks receive (data already redacted as it was stored). Ephemeral events
// (text deltas, model attempts) are never stored, so they are not here. An
// unknown run, or another tenant's, matches [ErrNotFound].
func (e *Runtime) Events(ctx context.Context, runID string, p *EventsParams) ([]Event, error) {
	if p == nil {
		p = &EventsParams{}
	}
	if _, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID}); err != nil {
		return nil, fmt.Errorf("actoviq: run %s: %w", runID, err)
	}
	evs, err := e.store.EventList(ctx, &store.EventListParams{Tenant: e.tenant, RunID: runID, AfterSeq: p.AfterSeq, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("actoviq: events of %s: %w", runID, err)
	}
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		out = append(out, Event{Schema: EventSchema, ID: ev.ID, Seq: ev.Seq, RunID: ev.RunID, ParentRunID: ev.ParentRunID,
			TraceID: ev.TraceID, SpanID: ev.SpanID, Type: ev.Type, Time: ev.Time, Data: ev.Data})
	}
	return out, nil
}
