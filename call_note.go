package actoviq

import (
	"context"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// CallNote is a fact a person records about a call outside a decision: that
// they cancelled the MCP task it left running, that they called the payee.
// It settles nothing; it is kept with the call (a tool.note event) for the
// record.
type CallNote struct {
	// By names who recorded it; required.
	By string `json:"by"`
	// Text is the note; required. It is redacted like every event.
	Text string `json:"text"`
}

// NoteCall records a note on one call of a run, as a tool.note event of
// the call, written under the run's claim (a run another process is
// driving refuses it with a [*RunHeldError]). Finished runs take notes too.
func (rt *Runtime) NoteCall(ctx context.Context, runID, callID string, note CallNote) error {
	if note.By == "" || note.Text == "" {
		return errors.New("actoviq: NoteCall: a note needs By and Text")
	}
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return err
	}
	if err := d.claim(ctx); err != nil {
		return err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return err
	}
	if _, ok := d.ledger[callID]; !ok {
		return fmt.Errorf("actoviq: run %s has no call %q: %w", runID, callID, ErrNotFound)
	}
	return d.write(ctx, &store.RunWriteParams{Events: []*store.EventRecord{d.event(EvToolNote, callID,
		&ToolNoteData{CallID: callID, By: note.By, Text: d.redactText(callID, note.Text)})}})
}
