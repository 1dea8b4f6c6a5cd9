package actoviq_test

import (
	"context"
	"encoding/json"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A sink that panics on the event of a drive's last write (run.completed,
// run.interrupted: the write that gives the claim up) still gets its
// panic recorded as sink.panicked, on every store, although a holder that
// released its claim writes nothing more under it: that record is the
// one write made after the release, unfenced, events only.
func TestSinkPanicOnLastEventIsRecorded(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		boom := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
			if ev.Type == actoviq.EvRunCompleted {
				panic("sink down")
			}
		})
		rt, err := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{boom}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		a := &actoviq.AgentSpec{ID: "s", Model: "scripted-1", Provider: scripted.New(scripted.Turn{Text: "done"})}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "sp", Items: []item.Item{item.UserText("go")}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		evs, err := rt.Events(ctx, "sp", nil)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		var d actoviq.SinkPanickedData
		if last.Type != actoviq.EvSinkPanicked || json.Unmarshal(last.Data, &d) != nil || d.EventType != actoviq.EvRunCompleted {
			t.Fatalf("last event %s %s, want sink.panicked on run.completed", last.Type, last.Data)
		}
	})
}
