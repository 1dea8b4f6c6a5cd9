package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// Handles (tool.RecordHandle): a running call's tool records what the far
// side gave it (an MCP task id, a multi-round-trip round) as a tool.handle
// event of the call, one fenced write that has returned before
// RecordHandle does. After a crash, a started or unknown call whose tool is
// a tool.Resumer and that holds a handle of its current attempt is handed to
// Resume instead of being interrupted.

// callRecorder is the tool.HandleRecorder of one call attempt.
type callRecorder struct {
	d       *drive
	callID  string
	attempt int
}

// RecordHandle implements [tool.HandleRecorder].
func (r *callRecorder) RecordHandle(ctx context.Context, h tool.Handle) error {
	d := r.d
	// The tool's goroutine may outlive the runner's wait (a cancelled or
	// timed-out call): read the drive's state under its lock.
	d.mu.Lock()
	data := &ToolHandleData{CallID: r.callID, Attempt: r.attempt, Kind: h.Kind, Data: h.Data,
		Evidence: d.redactText(r.callID, h.Evidence)}
	ev := d.event(EvToolHandle, r.callID, data)
	d.mu.Unlock()
	if err := d.write(ctx, &store.RunWriteParams{Events: []*store.EventRecord{ev}}); err != nil {
		return err
	}
	d.mu.Lock()
	if d.handles == nil {
		d.handles = map[string]*ToolHandleData{}
	}
	d.handles[r.callID] = data
	d.mu.Unlock()
	return nil
}

// withRecorder gives a call attempt's context its handle recorder.
func (d *drive) withRecorder(ctx context.Context, en *store.LedgerEntry) context.Context {
	return tool.WithHandleRecorder(ctx, &callRecorder{d: d, callID: en.CallID, attempt: en.Attempt})
}

// lastHandle returns the handle last recorded for the call's current
// attempt, and a person's answer recorded after it (an input
// interruption's), from the run's events.
func (d *drive) lastHandle(ctx context.Context, en *store.LedgerEntry) (*ToolHandleData, json.RawMessage, error) {
	evs, err := d.rt.store.EventList(ctx, &store.EventListParams{Tenant: d.rt.tenant, RunID: d.run.ID})
	if err != nil {
		return nil, nil, fmt.Errorf("actoviq: run %s: read the handle of call %s: %w", d.run.ID, en.CallID, err)
	}
	var last *ToolHandleData
	var answer json.RawMessage
	for _, ev := range evs {
		switch ev.Type {
		case EvToolHandle:
			var x ToolHandleData
			if json.Unmarshal(ev.Data, &x) == nil && x.CallID == en.CallID && x.Attempt == en.Attempt {
				last, answer = &x, nil
			}
		case EvToolAnswer:
			var x ToolAnswerData
			if json.Unmarshal(ev.Data, &x) == nil && x.CallID == en.CallID && x.Attempt == en.Attempt && last != nil {
				answer = x.Answer
			}
		}
	}
	return last, answer, nil
}

// inputInterruption turns a tool.InputError of a call whose tool can
// resume it, and that recorded a handle in this attempt, into an input
// interruption; the call stays started. Otherwise it returns nil and the
// error is the call's like any other (an error result the model sees).
func (d *drive) inputInterruption(en *store.LedgerEntry, err error) *Interruption {
	if err == nil {
		return nil // and no errors.As target on the heap for a call that succeeded
	}
	var ie *tool.InputError
	if !errors.As(err, &ie) {
		return nil
	}
	t, ok := d.runner.Lookup(en.Tool)
	if !ok {
		return nil
	}
	if _, ok := t.(tool.Resumer); !ok {
		return nil
	}
	d.mu.Lock()
	h := d.handles[en.CallID]
	d.mu.Unlock()
	if h == nil || h.Attempt != en.Attempt {
		return nil
	}
	in := d.interruption(InterruptInput, en, "the call waits for a person's answer: "+ie.Prompt, nil)
	in.Input = &InputQuestion{Prompt: d.redactText(en.CallID, ie.Prompt), Schema: ie.Schema}
	return &in
}

// resumeCall hands a started or unknown call that holds a handle to its
// tool's Resume. done is false when there is nothing to resume (no
// Resumer, no handle, arguments unavailable): the caller goes on as for
// any call of unknown outcome.
func (d *drive) resumeCall(ctx context.Context, en *store.LedgerEntry) (in *Interruption, done bool, err error) {
	t, ok := d.runner.Lookup(en.Tool)
	if !ok {
		return nil, false, nil
	}
	r, ok := t.(tool.Resumer)
	if !ok {
		return nil, false, nil
	}
	h, answer, err := d.lastHandle(ctx, en)
	if err != nil || h == nil {
		return nil, false, err
	}
	d.mu.Lock()
	if d.handles == nil {
		d.handles = map[string]*ToolHandleData{}
	}
	d.handles[en.CallID] = h
	d.mu.Unlock()
	if d.argsUnavailable(en.CallID) != "" {
		return nil, false, nil // a continuation would need them
	}
	args := en.Args
	if raw, ok := d.rawArgs[en.CallID]; ok {
		args = raw
	}
	spec := t.Spec()
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = d.limits.ToolTimeout
	}
	tctx, cancel := d.withinDeadline(ctx)
	defer cancel()
	if timeout > 0 {
		var c2 context.CancelFunc
		tctx, c2 = context.WithTimeout(tctx, timeout)
		defer c2()
	}
	tctx = d.withRecorder(tool.WithAttempt(tool.WithIdempotencyKey(tctx, en.IdempotencyKey), en.Attempt), en)
	if answer != nil {
		tctx = tool.WithAnswer(tctx, answer)
	}
	res, rerr := safeResume(tctx, r, en.IdempotencyKey, args, tool.Handle{Kind: h.Kind, Data: h.Data, Evidence: h.Evidence})
	if rerr != nil {
		var te *tool.Error
		if !errors.As(rerr, &te) {
			unknown := errors.Is(rerr, tool.ErrOutcomeUnknown) || errors.Is(rerr, context.DeadlineExceeded) || errors.Is(rerr, context.Canceled)
			rerr = &tool.Error{Kind: tool.KindExecution, Tool: en.Tool, Started: true, OutcomeUnknown: unknown, Err: rerr}
		}
	}
	if en.State == store.LedgerStarted {
		in, err := d.recordOutcome(ctx, en, res, rerr)
		return in, true, err
	}
	// Unknown already: a result settles it; anything else stays for the
	// probe or a person, with what Resume said.
	var te *tool.Error
	if errors.As(rerr, &te) && te.OutcomeUnknown {
		kind := InterruptReconciliation
		if en.Effect != tool.SideEffect.String() {
			kind = InterruptRecovery
		}
		i := d.interruption(kind, en, fmt.Sprintf("the call's outcome is unknown; resuming it from its handle (%s) did not settle it: %v", h.Evidence, rerr), nil)
		return &i, true, nil
	}
	if rerr != nil {
		res = tool.Result{IsError: true, Content: rerr.Error()}
	}
	err = d.commitResult(ctx, en, ledger.Settle, EvToolSettled, res, func(n *store.LedgerEntry) {
		n.Resolution = &store.DecisionRecord{Kind: "probe", By: "resume:" + en.Tool, At: d.rt.clock(),
			Reason: "the tool resumed the call from its handle: " + h.Evidence, Result: mustJSON(res)}
		if rerr != nil {
			n.Error = mustJSON(rerr)
		}
	})
	return nil, true, err
}

// safeResume calls Resume, turning a panic into an error of unknown
// outcome.
func safeResume(ctx context.Context, r tool.Resumer, key string, args json.RawMessage, h tool.Handle) (res tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool's Resume panicked: %v: %w", p, tool.ErrOutcomeUnknown)
		}
	}()
	return r.Resume(ctx, key, args, h)
}
