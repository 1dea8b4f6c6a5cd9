package actoviq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// loop drives the run until it completes, fails, is cancelled or stops with
// interruptions. Store and fencing errors are returned as errors; outcomes
// of the run are returned as a RunResult.
func (d *drive) loop(ctx context.Context) (*RunResult, error) {
	for {
		if d.pastDeadline() {
			// Past the deadline: the run ends cancelled, the ledger untouched.
			d.cp.Error = &RunError{Code: CodeDeadline, Message: "the run's deadline passed"}
			return d.end(ctx, store.RunCancelled, EvRunCancelled)
		}
		if (ctx.Err() != nil || d.pastDeadline()) && d.responseHeld() {
			// The model's answer, held for its first call's start
			// (drive_fold.go), is stored before the drive stops.
			if err := d.flushResponse(ctx); err != nil {
				return nil, err
			}
		}
		if res, err, stop := d.stopCheck(ctx); stop {
			return res, err // cancelled, or closed
		}
		if len(d.cp.Pending) > 0 {
			interrupts, err := d.settlePending(ctx)
			if ferr := d.flushResponse(ctx); ferr != nil && err == nil {
				err = ferr // not started: the answer is stored alone (drive_fold.go)
			}
			if err != nil {
				return nil, err
			}
			if len(interrupts) > 0 {
				return d.stopInterrupted(ctx, interrupts)
			}
			if !d.allCommitted() {
				// A call did not start (cancellation, the run's deadline):
				// it stays prepared; the checks above end the run, or the
				// next pass runs it.
				continue
			}
			if res, err, stop := d.childFailFast(ctx); stop {
				return res, err
			}
			d.fold()
		}
		d.cp.Interruptions = nil
		if d.cp.Turn >= d.limits.MaxTurns {
			d.cp.Error = &RunError{Code: CodeMaxTurns, Message: fmt.Sprintf("the run reached its limit of %d model turns", d.limits.MaxTurns)}
			return d.end(ctx, store.RunFailed, EvRunFailed)
		}
		if res, err, stop := d.overBudget(ctx); stop { // a child's tree budget
			return res, err
		}
		resp, err := d.callModelSafe(ctx)
		if err != nil {
			if ctx.Err() != nil || d.pastDeadline() {
				continue // ends cancelled above
			}
			return d.modelFailed(ctx, err)
		}
		d.cp.ProviderFailures = 0
		done, err := d.commitResponse(ctx, resp)
		if err != nil || done != nil {
			return done, err
		}
	}
}

// end writes a final or interrupted status and returns the run's result.
func (d *drive) end(ctx context.Context, status store.RunStatus, ev string, pre ...*store.EventRecord) (*RunResult, error) {
	if status.Terminal() {
		d.forgetArgs()
	}
	if err := d.finish(ctx, status, ev, pre...); err != nil {
		return nil, err
	}
	return d.cp.result(d.run.ID, status), nil
}

func modelError(err error) *RunError {
	var pe *llm.ProviderError
	var si *llm.StreamInterruptedError
	switch {
	case errors.As(err, &si):
		return &RunError{Code: CodeStreamInterrupted, Message: err.Error()}
	case errors.As(err, &pe):
		return &RunError{Code: CodeProviderError, Message: err.Error()}
	case errors.Is(err, llm.ErrDanglingToolCall):
		return &RunError{Code: CodeDanglingToolCall, Message: err.Error()}
	case errors.Is(err, llm.ErrUnsupported):
		return &RunError{Code: CodeUnsupported, Message: err.Error()}
	}
	return &RunError{Code: CodeModelError, Message: err.Error()}
}

// allCommitted reports whether every call of the pending turn is committed.
func (d *drive) allCommitted() bool {
	for _, id := range d.cp.Pending {
		if en := d.ledger[id]; en == nil || en.State != store.LedgerCommitted {
			return false
		}
	}
	return true
}

// fold appends the committed results of the pending turn to the transcript,
// in call order. The caller has checked that every pending call is
// committed. The folded transcript is persisted by the next run write.
func (d *drive) fold() {
	d.cp.Items = slices.Grow(d.cp.Items, len(d.cp.Pending))
	for _, id := range d.cp.Pending {
		en := d.ledger[id]
		if m, ok := d.results[id]; ok && bytes.Equal(m.raw, en.Result) {
			// This drive encoded these bytes from m.r: no need to decode them.
			it := item.NewToolResult(en.CallID, m.r.Content, m.r.IsError)
			it.ToolResult.Data = m.r.Data
			d.cp.Items = append(d.cp.Items, it)
			continue
		}
		d.cp.Items = append(d.cp.Items, resultItem(en))
	}
	d.forgetArgs(d.cp.Pending...)
	d.resultsMu.Lock()
	for _, id := range d.cp.Pending {
		delete(d.results, id)
	}
	d.resultsMu.Unlock()
	d.cp.Pending, d.cp.Redacted = nil, nil
}

// resultMemo is a result this drive encoded (marshalResult) for a call.
type resultMemo struct {
	raw json.RawMessage
	r   tool.Result
}

// keepResult remembers what commitResult encoded for a call, for fold.
// (Calls of one batch may commit at once.)
func (d *drive) keepResult(callID string, raw json.RawMessage, r tool.Result) {
	d.resultsMu.Lock()
	defer d.resultsMu.Unlock()
	if d.results == nil {
		d.results = make(map[string]resultMemo, len(d.cp.Pending)) // the turn's calls
	}
	d.results[callID] = resultMemo{raw: raw, r: r}
}

func resultItem(en *store.LedgerEntry) item.Item {
	var r tool.Result
	if err := json.Unmarshal(en.Result, &r); err != nil {
		r = tool.Result{Content: "the stored result of this call could not be decoded", IsError: true}
	}
	it := item.NewToolResult(en.CallID, r.Content, r.IsError)
	it.ToolResult.Data = r.Data
	return it
}

func (d *drive) callModel(ctx context.Context) (*llm.Response, error) {
	if err := d.readPrefix(ctx); err != nil {
		return nil, err
	}
	if err := d.tcheck.Check(d.cp.Items); err != nil {
		// Never send a tool call without its result to a provider.
		return nil, err
	}
	specs := d.runner.Specs()
	req := &llm.Request{Model: d.agent.Model, System: d.agent.Instructions, Items: d.cp.Items,
		OutputSchema: d.agent.OutputSchema, IdempotencyKey: idempotencyKey(d.rt.tenant, d.run.ID, fmt.Sprintf("turn-%d", d.cp.Turn+1))}
	for _, s := range specs {
		req.Tools = append(req.Tools, llm.ToolDef{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema})
	}
	d.modelAttempts = 0
	mctx, cancel := context.WithTimeout(ctx, d.limits.ModelTimeout)
	defer cancel()
	mctx, cancelRun := d.withinDeadline(mctx)
	defer cancelRun()
	d.emitEphemeral(ctx, EvModelRequest, &ModelRequestData{Turn: d.cp.Turn + 1, Model: d.agent.Model, Items: len(req.Items)})
	caps := d.agent.Provider.Capabilities(d.agent.Model)
	if !caps.Streaming {
		if err := caps.Check(req); err != nil {
			return nil, err
		}
		return d.agent.Provider.Generate(mctx, req)
	}
	if err := caps.CheckStream(req); err != nil {
		return nil, err
	}
	var resp *llm.Response
	for ev, err := range d.agent.Provider.Stream(mctx, req) {
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case llm.EventTextDelta:
			d.emitEphemeral(ctx, EvTextDelta, &TextDeltaData{Delta: ev.Delta, Index: ev.Index})
		case llm.EventAttempt:
			if ev.Attempt != nil {
				d.modelAttempts++
				d.emitEphemeral(ctx, EvModelAttempt, &ModelAttemptData{Number: ev.Attempt.Number, Status: ev.Attempt.Status, Wait: ev.Attempt.Wait, Err: ev.Attempt.Err})
			}
		case llm.EventDone:
			resp = ev.Response
		}
	}
	if resp == nil {
		return nil, &llm.StreamInterruptedError{Provider: d.agent.Provider.Name(), Err: errors.New("stream ended without a response")}
	}
	return resp, nil
}

// commitResponse assigns call ids, and commits the response to the
// checkpoint together with a prepared ledger entry per call, before
// anything runs. A response without calls completes the run.
func (d *drive) commitResponse(ctx context.Context, resp *llm.Response) (*RunResult, error) {
	// The call ids the transcript already holds (the incremental check has
	// them: no pass over the whole transcript per turn), and those this
	// response assigns.
	if err := d.readPrefix(ctx); err != nil {
		return nil, err
	}
	_ = d.tcheck.Check(d.cp.Items)
	assigned := make(map[string]bool, len(resp.Items))
	used := func(id string) bool { return assigned[id] || d.tcheck.Seen(id) }
	turn := d.cp.Turn + 1
	inResp := make(map[string]json.RawMessage, len(resp.Items))
	items := make([]item.Item, 0, len(resp.Items))
	var calls []*store.LedgerEntry
	notUTF8 := 0 // bytes replaced in items' raw JSON (rawToUTF8)
	if len(d.rawArgs) == 0 && len(resp.Items) > 8 {
		d.rawArgs = make(map[string]json.RawMessage, len(resp.Items)) // sized once, not grown call by call
	}
	d.sizeSecrets(len(resp.Items))
	d.spans.reset() // the calls before this turn's have all settled
	for i, it := range resp.Items {
		// The response's JSON is validated here, where it enters, once: a
		// valid tool call's arguments are a JSON object.
		invalid := it.Validate()
		if invalid == nil && argsNotUTF8(it) {
			invalid = errArgsNotUTF8 // recorded as malformed: drive_malformed.go
		} else if invalid != nil && !malformedCall(it) {
			return d.refuse(ctx, resp, fmt.Sprintf("%v: response item %d: %v; nothing was executed", ErrModelBehavior, i, invalid))
		}
		if it.Type != item.TypeToolCall {
			notUTF8 += rawToUTF8(&it)
			items = append(items, it)
			continue
		}
		tc := *it.ToolCall
		// A name that is not UTF-8 (a provider written in Go may make
		// one; JSON decoding never does) is recorded as its JSON encoding
		// reads back, every such byte U+FFFD: a store keeps text in UTF-8
		// only. No tool has that name: the call is answered as unknown.
		tc.Name = jsonenc.ValidString(tc.Name)
		if strings.IndexByte(tc.Name, 0) >= 0 {
			// A NUL, which JSON decoding does make (from \u0000), is
			// replaced alike: PostgreSQL's text cannot hold one.
			tc.Name = strings.ReplaceAll(tc.Name, "\x00", "\uFFFD")
		}
		if prev, dup := inResp[tc.ID]; dup && tc.ID != "" {
			if compact(prev) == compact(tc.Arguments) {
				continue // the same call twice in one response is one call
			}
			return d.refuse(ctx, resp, fmt.Sprintf(
				"%v: call id %q appears twice in one response with different arguments; nothing was executed", ErrModelBehavior, tc.ID))
		}
		providerID := tc.ID
		if !usableCallID(tc.ID) || used(tc.ID) {
			tc.ProviderID = "" // the provider's item id names the original call id
			tc.ID = fmt.Sprintf("call_t%d_%d", turn, i)
			for n := 2; used(tc.ID); n++ {
				tc.ID = fmt.Sprintf("call_t%d_%d_%d", turn, i, n)
			}
		}
		inResp[providerID] = tc.Arguments
		assigned[tc.ID] = true
		if invalid != nil { // malformedCall or argsNotUTF8: arguments that are not a JSON object, or not UTF-8
			// Recorded, never executed; the model sees an error result.
			if d.cp.Malformed++; d.cp.Malformed > d.limits.MaxMalformedCalls {
				return d.refuse(ctx, resp, fmt.Sprintf("%v: tool call %d has arguments that are not a JSON object (or not UTF-8), and the run already had %d such calls (Limits.MaxMalformedCalls); nothing was executed",
					ErrModelBehavior, i, d.limits.MaxMalformedCalls))
			}
			en, persisted := d.malformedEntry(turn, len(calls), tc, d.effectOf(tc.Name))
			items = append(items, persisted)
			calls = append(calls, en)
			continue
		}
		raw := tc.Arguments
		d.rawArgs[tc.ID] = raw
		persisted := d.redactValidItem(item.Item{Type: item.TypeToolCall, Role: item.RoleAssistant, ToolCall: &tc})
		if redacted := persisted.ToolCall.Arguments; !sameBytes(redacted, raw) && compact(redacted) != compact(raw) {
			if d.cp.Redacted == nil {
				d.cp.Redacted = map[string]bool{}
			}
			d.cp.Redacted[tc.ID] = true
			d.keepArgs(tc.ID, raw)
		} else {
			d.noSecrets(tc.ID, raw)
		}
		items = append(items, persisted)
		effect := tool.SideEffect
		if t, ok := d.runner.Lookup(tc.Name); ok {
			effect = t.Spec().Effect
		}
		calls = append(calls, &store.LedgerEntry{Tenant: d.rt.tenant, RunID: d.run.ID, CallID: tc.ID, Turn: turn, Index: len(calls),
			Tool: tc.Name, Effect: effect.String(), State: store.LedgerPrepared, IdempotencyKey: idempotencyKey(d.rt.tenant, d.run.ID, tc.ID),
			ArgsDigest: argsDigest(raw), Args: persisted.ToolCall.Arguments})
	}
	if len(items) == 0 {
		items = nil // as before the preallocation: an empty answer has no output
	}
	d.cp.Items = append(d.cp.Items, items...)
	d.cp.Turn = turn
	d.cp.Usage = d.cp.Usage.Add(resp.Usage)
	// The items are stored once, in the run's log: the event says where.
	respData := &ModelResponseData{Turn: turn, ResponseID: resp.ID, StopReason: resp.StopReason, Usage: resp.Usage,
		ItemsAt: &LogRange{From: len(d.cp.Items) - d.cp.logFrom - len(items), Count: len(items)}, NotUTF8: notUTF8}
	if len(calls) == 0 {
		d.cp.Output = items
		if err := d.appendSession(ctx); err != nil {
			// The response is the run's answer, kept in its log and
			// Output: its event goes with the run's end.
			return d.sessionAppendFailed(ctx, err, d.event(EvModelResponse, "", respData))
		}
		data := &RunEndedData{Status: StatusCompleted, Usage: d.cp.Usage}
		if err := d.saveRun(ctx, store.RunCompleted, nil, d.event(EvModelResponse, "", respData), d.event(EvRunCompleted, "", data)); err != nil {
			return nil, err
		}
		return d.cp.result(d.run.ID, store.RunCompleted), nil
	}
	writes := make([]store.LedgerWrite, 0, len(calls))
	events := []*store.EventRecord{d.event(EvModelResponse, "", respData)}
	d.cp.Pending = slices.Grow(d.cp.Pending, len(calls))
	at := d.rt.clock() // the calls' events are written at once: one moment
	for _, en := range calls {
		d.cp.Pending = append(d.cp.Pending, en.CallID)
		ev := EvToolPrepared
		if en.State == store.LedgerCommitted { // a malformed call, answered at once
			ev = EvToolSkipped
		}
		writes = append(writes, store.LedgerWrite{Entry: en, Event: d.entryEvent(ev, en, at)})
	}
	if d.foldable(ctx, calls) {
		// Written with the first call's started record (drive_fold.go).
		return nil, d.holdResponse(writes, events)
	}
	return nil, d.saveRun(ctx, store.RunRunning, writes, events...)
}

// settlePending applies the recovery rules and runs the pending calls. It
// returns the interruptions that stop the run; every other pending call is
// committed when it returns without error.
func (d *drive) settlePending(ctx context.Context) ([]Interruption, error) {
	var interrupts []Interruption
	// First, settle what the ledger says about calls that may have run or
	// wait for a person: never call a tool here (a tool.Resumer asks the
	// far side about a call it recorded a handle for; it does not call
	// the tool again).
	for _, id := range d.cp.Pending {
		en, ok := d.ledger[id]
		if !ok {
			return nil, &store.DataError{Kind: "ledger", ID: d.run.ID + "/" + id, Err: errors.New("pending call has no ledger entry")}
		}
		if ok, err := d.reenterChild(ctx, en); err != nil || ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if ledger.MayHaveRun(en.State) {
			in, done, err := d.resumeCall(ctx, en) // drive_handle.go
			if err != nil {
				return nil, err
			}
			if done {
				if in != nil {
					interrupts = append(interrupts, *in)
				}
				continue
			}
		}
		spec, _ := d.lookupSpec(en.Tool)
		switch ledger.Recover(en.State, en.Effect, en.IdempotencyKey, ledger.RecoveryPolicy(d.agent.Recovery)) {
		case ledger.ActionNone, ledger.ActionRun:
		case ledger.ActionAwaitApproval:
			interrupts = append(interrupts, d.interruption(InterruptApproval, en, "the call needs approval before it starts", nil))
		case ledger.ActionReconcile:
			in, err := d.reconcile(ctx, en, spec)
			if err != nil {
				return nil, err
			}
			if in != nil {
				interrupts = append(interrupts, *in)
			}
		case ledger.ActionRecover:
			interrupts = append(interrupts, d.interruption(InterruptRecovery, en,
				fmt.Sprintf("this %s call was %s when the run stopped; the recovery policy does not allow running it again on its own", en.Effect, en.State), nil))
		case ledger.ActionRerun:
			if why := d.argsUnavailable(en.CallID); why != "" {
				// The re-run keeps the key and needs the arguments: stop
				// rather than tell the model a call that ran was not run.
				interrupts = append(interrupts, d.argsInterruption(en, why))
				continue
			}
			next := cloneEntry(en)
			next.State = store.LedgerPrepared
			next.Resolution = &store.DecisionRecord{Kind: string(DecideReexecute), By: "recovery-policy", At: d.rt.clock(),
				Reason: fmt.Sprintf("the recovery policy allows re-running %s calls with their idempotency key", en.Effect)}
			if err := d.transition(ctx, en, next, ledger.Reexecute, EvToolReexecute); err != nil {
				return nil, err
			}
		}
	}
	// Then run the prepared calls in the model's order; a call waits
	// while any call before it is unsettled.
	blocked := map[string]bool{}
	for _, in := range interrupts {
		blocked[in.CallID] = true
	}
	more, err := d.runBatch(ctx, blocked)
	if err != nil {
		return nil, err
	}
	interrupts = append(interrupts, more...)
	// Report interruptions in call order.
	order := map[string]int{}
	for i, id := range d.cp.Pending {
		order[id] = i
	}
	sortInterruptions(interrupts, order)
	return interrupts, nil
}

func (d *drive) lookupSpec(name string) (tool.Spec, bool) {
	t, ok := d.runner.Lookup(name)
	if !ok {
		return tool.Spec{}, false
	}
	return t.Spec(), true
}

// errProviderPanic marks a model call that panicked in the provider.
var errProviderPanic = errors.New("the provider panicked")

// callModelSafe is callModel with a panic in the provider (its Generate,
// its Stream, or its iterator) recovered as the model call's error. Nothing
// was committed for the call, so the run goes on as for any failed model
// call.
func (d *drive) callModelSafe(ctx context.Context) (resp *llm.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("%w: %v", errProviderPanic, p)
		}
	}()
	return d.callModel(ctx)
}
