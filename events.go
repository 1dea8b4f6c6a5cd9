package actoviq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// Event types of agent and meta changes.
const (
	EvAgentChanged   = "agent.changed"
	EvRunMetaChanged = "run.meta_changed"
)

// EventData is the typed payload of an [Event]. [Event.Payload] decodes
// it; a type switch over the concrete types below finds what happened:
//
//	switch d := data.(type) {
//	case *actoviq.TextDeltaData:   // model.text_delta
//	case *actoviq.ToolCallData:    // tool.*: a ledger transition
//	case *actoviq.RunEndedData:    // run.completed, interrupted, failed, cancelled
//	}
//
// An event type this build does not know decodes to [*RawEventData], so a
// program keeps working when a newer runtime wrote the events it reads.
type EventData interface {
	// EventTypes lists the event types that carry this payload.
	EventTypes() []string
}

// RawEventData is the payload of an event type this build does not know.
type RawEventData struct {
	// Type is the event's type.
	Type string
	// Data is the payload as stored.
	Data json.RawMessage
}

// EventTypes implements [EventData]; it returns the one type it holds.
func (r *RawEventData) EventTypes() []string { return []string{r.Type} }

// Payload decodes the event's Data into its typed payload (see
// [EventData]). An unknown type gives a [*RawEventData]; data that does not
// decode gives an error matching [ErrData]. The returned value is the
// caller's.
func (e Event) Payload() (EventData, error) {
	mk, ok := eventPayloads[e.Type]
	if !ok {
		return &RawEventData{Type: e.Type, Data: append(json.RawMessage(nil), e.Data...)}, nil
	}
	v := mk()
	if len(e.Data) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return nil, &store.DataError{Kind: "event " + e.Type, ID: e.ID, Err: err}
	}
	return v, nil
}

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
func (rt *Runtime) Events(ctx context.Context, runID string, p *EventsParams) ([]Event, error) {
	if p == nil {
		p = &EventsParams{}
	}
	evs, err := rt.store.EventList(ctx, &store.EventListParams{Tenant: rt.tenant, RunID: runID, AfterSeq: p.AfterSeq, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("actoviq: events of %s: %w", runID, err)
	}
	// The run is read after its events: its log only grows, so it holds
	// the items of every model.response listed.
	run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: run %s: %w", runID, err)
	}
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		data := ev.Data
		if ev.Type == EvModelResponse {
			data = rt.withItems(data, func(from, n int) ([]item.Item, bool) { return logItems(run.Log, from, n) })
		}
		out = append(out, Event{Schema: EventSchema, ID: ev.ID, Seq: ev.Seq, RunID: ev.RunID, ParentRunID: ev.ParentRunID,
			TraceID: ev.TraceID, SpanID: ev.SpanID, Type: ev.Type, Time: ev.Time, Data: data})
	}
	return out, nil
}

// withItems returns a stored model.response event's data with its Items
// filled in from the run's log (items gives the log's items [from,
// from+n)), redacted as event data is when it is stored. Data without
// ItemsAt (stored before the log existed) is returned as it is, and so is
// data whose range the log does not hold (it stays readable; Items stay
// empty).
func (rt *Runtime) withItems(data json.RawMessage, items func(from, n int) ([]item.Item, bool)) json.RawMessage {
	var x ModelResponseData
	if len(data) == 0 || json.Unmarshal(data, &x) != nil || x.ItemsAt == nil || len(x.Items) > 0 {
		return data
	}
	its, ok := items(x.ItemsAt.From, x.ItemsAt.Count)
	if !ok {
		return data
	}
	x.Items = its
	b, err := json.Marshal(&x)
	if err != nil {
		return data
	}
	return rt.redactor.MarshaledJSON(b)
}

// logItems decodes the items [from, from+n) of a run's log.
func logItems(log []json.RawMessage, from, n int) ([]item.Item, bool) {
	if from < 0 || n < 0 || from+n > len(log) {
		return nil, false
	}
	out := make([]item.Item, n)
	for i := range out {
		if json.Unmarshal(log[from+i], &out[i]) != nil {
			return nil, false
		}
	}
	return out, true
}

// EvSessionRecovered records that a run completed with the answer its own
// session append held (a crash came between that append and the run's
// completion write). Its payload is [*SessionRecoveredData].
const EvSessionRecovered = "session.recovered"

// EvSinkPanicked records that a sink panicked on an event. The sink is
// skipped for that event; the run goes on. Its data names the sink (its
// index in the drive's sinks and its Go type), the event and the panic.
const EvSinkPanicked = "sink.panicked"

// EventSink receives run events after they are durable (transitions) or as
// they happen (deltas, attempts). Data is already redacted. Emit must not
// block for long; it is called on the run's goroutine.
type EventSink interface {
	// Emit receives one event; ev and its Data are the sink's to keep.
	Emit(ctx context.Context, ev Event)
}

// EventSinkFunc adapts a function to [EventSink].
type EventSinkFunc func(ctx context.Context, ev Event)

// Emit implements [EventSink].
func (f EventSinkFunc) Emit(ctx context.Context, ev Event) { f(ctx, ev) }

// Event is one run event in the stable envelope: the same shape on the
// wire (JSON), in the store and in every sink, versioned by Schema, so
// events stored by older builds still decode. [Event.Payload] gives Data
// as a typed value.
type Event struct {
	// Schema is the envelope's version, EventSchema.
	Schema int `json:"schema"`
	// ID is unique per event.
	ID string `json:"id"`
	// Seq orders a run's stored events from 1; 0 for ephemeral events
	// (text deltas, attempts, model requests), which are never stored.
	Seq int64 `json:"seq"`
	// RunID is the run the event belongs to.
	RunID string `json:"run_id"`
	// ParentRunID is the parent run's id for a child run.
	ParentRunID string `json:"parent_run_id,omitempty"`
	// TraceID is the run's trace id, stable across drives.
	TraceID string `json:"trace_id"`
	// SpanID is deterministic: the run's span, or one call's span in it.
	SpanID string `json:"span_id"`
	// Type is one of the Ev constants, such as EvToolStarted.
	Type string `json:"type"`
	// Time is the runtime's clock at the event.
	Time time.Time `json:"time"`
	// Data is the payload's JSON, secret-looking values redacted.
	Data json.RawMessage `json:"data,omitempty"`
}

// EventSchema is the envelope's schema version.
const EventSchema = 1

// Event types.
const (
	EvRunStarted     = "run.started"
	EvRunResumed     = "run.resumed"
	EvRunCompleted   = "run.completed"
	EvRunInterrupted = "run.interrupted"
	EvRunFailed      = "run.failed"
	EvRunCancelled   = "run.cancelled"
	EvModelRequest   = "model.request"
	EvModelResponse  = "model.response"
	EvModelAttempt   = "model.attempt"
	EvTextDelta      = "model.text_delta"
	EvToolPrepared   = "tool.prepared"
	EvToolAwaiting   = "tool.awaiting_approval"
	EvToolApproved   = "tool.approved"
	EvToolRejected   = "tool.rejected"
	EvToolStarted    = "tool.started"
	EvToolCommitted  = "tool.committed"
	EvToolUnknown    = "tool.unknown"
	EvToolSkipped    = "tool.skipped"
	EvToolProbed     = "tool.probed"
	EvToolSettled    = "tool.settled"
	EvToolReexecute  = "tool.reexecute"
	// EvToolHandle: a running call's tool recorded a handle
	// (tool.RecordHandle): a task id, a multi-round-trip round.
	EvToolHandle = "tool.handle"
	// EvToolAnswer: a person answered an input interruption.
	EvToolAnswer = "tool.answer"
	// EvToolNote: a person recorded a note on a call ([Runtime.NoteCall]).
	EvToolNote = "tool.note"
)

// EvRunReleased is the event of a run handed back to the queue.
const EvRunReleased = "run.released"

// Worker events, emitted (not stored) for metrics and logs; see
// [RunClaimedData], [RunLeaseLostData] and [LeaseShortData].
const (
	// EvRunClaimed: a worker ([Runtime.Work]) claimed a run.
	EvRunClaimed = "run.claimed"
	// EvRunLeaseLost: a drive's heartbeat found its claim taken (its
	// lease expired and another process claimed the run); the drive stops.
	EvRunLeaseLost = "run.lease_lost"
	// EvRunLeaseShort: a store round trip of a drive took longer than the
	// lease allows ([Runtime.LeaseWarning]); the drive goes on.
	EvRunLeaseShort = "run.lease_short"
)
