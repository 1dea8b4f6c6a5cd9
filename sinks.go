package actoviq

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// bareDrive is a drive without an agent, for writes made on a run nobody
// drives ([Runtime.Decide], [Runtime.Cancel]). Its events reach every
// configured sink, like those of a drive.
func (e *Runtime) bareDrive() *drive {
	return &drive{e: e, ledger: map[string]*store.LedgerEntry{}, sinks: append([]EventSink(nil), e.sinks...)}
}

// EvSinkPanicked records that a sink panicked on an event. The sink is
// skipped for that event; the run goes on. Its data names the sink (its
// index in the drive's sinks and its Go type), the event and the panic.
const EvSinkPanicked = "sink.panicked"

// SinkPanickedData is the payload of sink.panicked: a sink panicked on an
// event; it was recovered and skipped for that event.
type SinkPanickedData struct {
	// Sink is the sink's index among the drive's sinks (Config.Sinks, then
	// the sinks given to the call); SinkType its Go type.
	Sink     int    `json:"sink"`
	SinkType string `json:"sink_type"`
	// EventID and EventType name the event it panicked on.
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	// Panic is the recovered value, as text.
	Panic string `json:"panic"`
}

// EventTypes implements [EventData].
func (*SinkPanickedData) EventTypes() []string { return []string{EvSinkPanicked} }

func init() {
	eventPayloads[EvSinkPanicked] = func() EventData { return new(SinkPanickedData) }
}

// emitSafe hands ev to every sink. A sink that panics is recovered: the
// other sinks still get the event, and the panic is recorded as a
// [EvSinkPanicked] event by the drive's next write (or right after the
// write that emitted ev).
func (d *drive) emitSafe(ctx context.Context, ev Event) {
	for i, s := range d.sinks {
		func() {
			defer func() {
				if p := recover(); p != nil {
					d.panicMu.Lock()
					d.sinkPanics = append(d.sinkPanics, SinkPanickedData{Sink: i, SinkType: fmt.Sprintf("%T", s),
						EventID: ev.ID, EventType: ev.Type, Panic: fmt.Sprint(p)})
					d.panicMu.Unlock()
				}
			}()
			s.Emit(ctx, ev)
		}()
	}
}

// recordSinkPanics stores the recovered sink panics as events, under the
// drive's fence, and emits them. A sink that panics on those is skipped and
// not recorded again, so a sink that always panics cannot loop. The caller
// holds d.mu.
func (d *drive) recordSinkPanics(ctx context.Context, fence *store.Fence) {
	d.panicMu.Lock()
	ps := d.sinkPanics
	d.sinkPanics = nil
	d.panicMu.Unlock()
	if len(ps) == 0 || d.recordingPanics {
		return
	}
	d.recordingPanics = true
	defer func() { d.recordingPanics = false }()
	evs := make([]*store.Event, 0, len(ps))
	for _, p := range ps {
		evs = append(evs, d.event(EvSinkPanicked, "", p))
	}
	res, err := d.e.store.RunWrite(ctx, &store.RunWriteParams{Tenant: d.e.tenant, RunID: d.run.ID, Fence: fence, Events: evs})
	if err != nil {
		return // the run's own writes report store trouble
	}
	d.emitStored(ctx, res.Events)
	d.panicMu.Lock()
	d.sinkPanics = nil // panics on the panic events are not recorded again
	d.panicMu.Unlock()
}
