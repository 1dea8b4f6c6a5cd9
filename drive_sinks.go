package actoviq

import (
	"bytes"
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// emitSafe hands ev to every sink. A sink that panics is recovered: the
// other sinks still get the event, and the panic is recorded as a
// [EvSinkPanicked] event by the drive's next write (or right after the
// write that emitted ev). Each sink gets Data of its own ("the sink's to
// keep"): a stored event's Data is the store's (the memory store keeps the
// very bytes the write handed over) and the next sink's.
func (d *drive) emitSafe(ctx context.Context, ev Event) {
	data := ev.Data
	for i, s := range d.sinks {
		ev.Data = bytes.Clone(data)
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
// drive's fence, and emits them. After the drive's last write, which gave
// the claim up (a holder that released its claim writes nothing more under
// it), fence is nil: those events, and nothing else, are appended
// unfenced, as an operator's unfenced write is; they change no state, and
// the run's revision is not theirs to check. A sink that panics on those is skipped and
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
	evs := make([]*store.EventRecord, 0, len(ps))
	for _, p := range ps {
		evs = append(evs, d.event(EvSinkPanicked, "", p))
	}
	res, err := d.rt.store.RunWrite(ctx, &store.RunWriteParams{Tenant: d.rt.tenant, RunID: d.run.ID, Fence: fence, Events: evs})
	if err != nil {
		return // the run's own writes report store trouble
	}
	d.emitStored(ctx, res.Events)
	d.panicMu.Lock()
	d.sinkPanics = nil // panics on the panic events are not recorded again
	d.panicMu.Unlock()
}
