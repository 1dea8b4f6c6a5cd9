package actoviq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// event builds a transition event. Data is redacted before it is stored or
// handed to any sink.
func (d *drive) event(typ, callID string, data any) *store.Event {
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
		raw = d.e.redactor.MarshaledJSON(b)
	}
	return &store.Event{ID: d.e.newID(), ParentRunID: d.run.ParentID, TraceID: d.cp.TraceID,
		SpanID: spanID(d.run.ID, callID), Type: typ, Time: d.e.clock(), Data: raw}
}

// spanID is deterministic: a run's span, or a call's span within it.
func spanID(runID, callID string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + callID))
	return hex.EncodeToString(sum[:8])
}

func (d *drive) redactJSON(b json.RawMessage) json.RawMessage {
	out, _, err := d.e.redactor.JSON(b)
	if err != nil {
		return b
	}
	return out
}

// redactItem returns the item as it may be persisted: tool-call arguments
// lose secret-looking values.
func (d *drive) redactItem(it item.Item) item.Item {
	switch {
	case it.Type == item.TypeToolCall && it.ToolCall != nil:
		tc := *it.ToolCall
		tc.Arguments = d.redactJSON(tc.Arguments)
		it.ToolCall = &tc
	case it.Type == item.TypeToolResult && it.ToolResult != nil && len(it.ToolResult.Data) > 0:
		// A tool result given as input (a session imported from elsewhere).
		tr := *it.ToolResult
		tr.Data = d.redactJSON(tr.Data)
		it.ToolResult = &tr
	}
	return it
}

// write performs one fenced atomic write on a detached context (it records
// things that happened), updates the drive's view and emits the events.
func (d *drive) write(ctx context.Context, p *store.RunWriteParams) error {
	_, err := d.writeResult(ctx, p)
	return err
}

// writeResult is write, returning what was stored.
func (d *drive) writeResult(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p.Tenant, p.RunID = d.e.tenant, d.run.ID
	f := d.fence
	p.Fence = &f
	wctx, cancel := d.detached(ctx)
	defer cancel()
	res, err := d.e.store.RunWrite(wctx, p)
	if err != nil {
		return nil, fmt.Errorf("actoviq: run %s: write: %w", d.run.ID, err)
	}
	if res.Run != nil {
		d.run = res.Run
	}
	for _, en := range res.Ledger {
		d.ledger[en.CallID] = en
	}
	d.emitStored(ctx, res.Events)
	d.recordSinkPanics(wctx, p.Fence)
	return res, nil
}

// entry reads the drive's current copy of a ledger entry.
func (d *drive) entry(callID string) *store.LedgerEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ledger[callID]
}

func (d *drive) emitStored(ctx context.Context, evs []*store.Event) {
	for _, ev := range evs {
		d.emit(ctx, Event{Schema: EventSchema, ID: ev.ID, Seq: ev.Seq, RunID: ev.RunID, ParentRunID: ev.ParentRunID,
			TraceID: ev.TraceID, SpanID: ev.SpanID, Type: ev.Type, Time: ev.Time, Data: ev.Data})
	}
}

// emitEphemeral sends an event that is not persisted (Seq 0).
func (d *drive) emitEphemeral(ctx context.Context, typ string, data any) {
	ev := d.event(typ, "", data)
	d.emit(ctx, Event{Schema: EventSchema, ID: ev.ID, RunID: d.run.ID, ParentRunID: ev.ParentRunID, TraceID: ev.TraceID,
		SpanID: ev.SpanID, Type: typ, Time: ev.Time, Data: ev.Data})
}

func (d *drive) emit(ctx context.Context, ev Event) {
	d.emitSafe(ctx, ev)
}

// saveRun writes the checkpoint with a new status, plus ledger writes and
// events, as one CAS on the run.
func (d *drive) saveRun(ctx context.Context, status store.RunStatus, ledger []store.LedgerWrite, events ...*store.Event) error {
	raw, err := d.cpEnc.encode(d.cp)
	if err != nil {
		return fmt.Errorf("actoviq: encode checkpoint: %w", err)
	}
	return d.write(ctx, &store.RunWriteParams{
		Run:    &store.RunUpdate{ExpectedRevision: d.run.Revision, Status: status, Checkpoint: raw},
		Ledger: ledger, Events: events,
	})
}

// finish ends the run in a final (or interrupted) status.
func (d *drive) finish(ctx context.Context, status store.RunStatus, evType string) error {
	if d.cp.Error != nil {
		d.cp.Error.Message = d.redactText("", d.cp.Error.Message)
	}
	data := &RunEndedData{Status: statusOf(status), Usage: d.cp.Usage, Error: d.cp.Error}
	if status == store.RunInterrupted {
		data.Interruptions = d.cp.Interruptions
	}
	return d.saveRun(ctx, status, nil, d.event(evType, "", data))
}

// entryWrite is a CAS write of an updated copy of a ledger entry.
func entryWrite(en *store.LedgerEntry) store.LedgerWrite {
	return store.LedgerWrite{Entry: en, ExpectedRevision: en.Revision}
}

func cloneEntry(en *store.LedgerEntry) *store.LedgerEntry {
	c := *en
	return &c
}

// secretsOf returns the string values that redaction removes from a
// call's arguments (with their JSON-escaped forms), so that text derived
// from the arguments (a validation message, a tool's echo) can be scrubbed
// before it is persisted. It knows them only in the process that received
// the arguments; elsewhere the arguments were never seen unredacted.
func (d *drive) secretsOf(callID string) []string {
	raw, ok := d.rawArgs[callID]
	if !ok {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, secret || d.e.redactor.IsSecretKey(k))
			}
		case []any:
			for _, e := range x {
				walk(e, secret)
			}
		case string:
			if secret && len(x) >= 4 {
				out = append(out, x)
				if b, err := json.Marshal(x); err == nil && string(b[1:len(b)-1]) != x {
					out = append(out, string(b[1:len(b)-1]))
				}
			}
		}
	}
	walk(v, false)
	return out
}

// scrub replaces secret values in persisted JSON text. The placeholder has
// no quote or backslash, so a value inside a JSON string stays valid JSON.
func scrub(b json.RawMessage, secrets []string) json.RawMessage {
	if len(b) == 0 || len(secrets) == 0 {
		return b
	}
	s := string(b)
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, redact.Placeholder)
	}
	if !json.Valid([]byte(s)) {
		return b
	}
	return json.RawMessage(s)
}
