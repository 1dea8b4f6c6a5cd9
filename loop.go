package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
			d.cp.Error = &RunError{Code: "deadline", Message: "the run's deadline passed"}
			return d.end(ctx, store.RunCancelled, EvRunCancelled)
		}
		if res, err, stop := d.stopCheck(ctx); stop {
			return res, err // cancelled, or closed (terminal.go)
		}
		if len(d.cp.Pending) > 0 {
			interrupts, err := d.settlePending(ctx)
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
			if res, err, stop := d.childFailFast(ctx); stop { // child.go
				return res, err
			}
			d.fold()
		}
		d.cp.Interruptions = nil
		if d.cp.Turn >= d.limits.MaxTurns {
			d.cp.Error = &RunError{Code: "max_turns", Message: fmt.Sprintf("the run reached its limit of %d model turns", d.limits.MaxTurns)}
			return d.end(ctx, store.RunFailed, EvRunFailed)
		}
		if res, err, stop := d.overBudget(ctx); stop { // a child's tree budget (child.go)
			return res, err
		}
		resp, err := d.callModelSafe(ctx) // panics.go
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
func (d *drive) end(ctx context.Context, status store.RunStatus, ev string) (*RunResult, error) {
	if status.Terminal() {
		d.forgetArgs()
	}
	if err := d.finish(ctx, status, ev); err != nil {
		return nil, err
	}
	return d.cp.result(d.run.ID, status), nil
}

func modelError(err error) *RunError {
	var pe *llm.ProviderError
	var si *llm.StreamInterruptedError
	switch {
	case errors.As(err, &si):
		return &RunError{Code: "stream_interrupted", Message: err.Error()}
	case errors.As(err, &pe):
		return &RunError{Code: "provider_error", Message: err.Error()}
	case errors.Is(err, llm.ErrDanglingToolCall):
		return &RunError{Code: "dangling_tool_call", Message: err.Error()}
	case errors.Is(err, llm.ErrUnsupported):
		return &RunError{Code: "unsupported", Message: err.Error()}
	}
	return &RunError{Code: "model_error", Message: err.Error()}
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
	for _, id := range d.cp.Pending {
		d.cp.Items = append(d.cp.Items, resultItem(d.ledger[id]))
	}
	d.forgetArgs(d.cp.Pending...)
	d.cp.Pending, d.cp.Redacted = nil, nil
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
	if err := llm.ValidateTranscript(d.cp.Items); err != nil {
		// Never send a tool call without its result to a provider.
		return nil, err
	}
	specs := d.runner.Specs()
	req := &llm.Request{Model: d.agent.Model, System: d.agent.Instructions, Items: d.cp.Items,
		OutputSchema: d.agent.OutputSchema, IdempotencyKey: idempotencyKey(d.e.tenant, d.run.ID, fmt.Sprintf("turn-%d", d.cp.Turn+1))}
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
	used := map[string]bool{}
	for _, it := range d.cp.Items {
		if it.Type == item.TypeToolCall {
			used[it.ToolCall.ID] = true
		}
	}
	turn := d.cp.Turn + 1
	inResp := map[string]json.RawMessage{}
	var items []item.Item
	var calls []*store.LedgerEntry
	for i, it := range resp.Items {
		if err := it.Validate(); err != nil && !malformedCall(it) {
			return d.refuse(ctx, resp, fmt.Sprintf("%v: response item %d: %v; nothing was executed", ErrModelBehavior, i, err))
		}
		if it.Type != item.TypeToolCall {
			items = append(items, it)
			continue
		}
		tc := *it.ToolCall
		if prev, dup := inResp[tc.ID]; dup && tc.ID != "" {
			if compact(prev) == compact(tc.Arguments) {
				continue // the same call twice in one response is one call
			}
			return d.refuse(ctx, resp, fmt.Sprintf(
				"%v: call id %q appears twice in one response with different arguments; nothing was executed", ErrModelBehavior, tc.ID))
		}
		providerID := tc.ID
		if !usableCallID(tc.ID) || used[tc.ID] {
			tc.ProviderID = "" // the provider's item id names the original call id
			tc.ID = fmt.Sprintf("call_t%d_%d", turn, i)
			for n := 2; used[tc.ID]; n++ {
				tc.ID = fmt.Sprintf("call_t%d_%d_%d", turn, i, n)
			}
		}
		inResp[providerID] = tc.Arguments
		used[tc.ID] = true
		if !isJSONObject(tc.Arguments) {
			// Recorded, never executed; the model sees an error result.
			if d.cp.Malformed++; d.cp.Malformed > d.limits.MaxMalformedCalls {
				return d.refuse(ctx, resp, fmt.Sprintf("%v: tool call %d has arguments that are not a JSON object, and the run already had %d such calls (Limits.MaxMalformedCalls); nothing was executed",
					ErrModelBehavior, i, d.limits.MaxMalformedCalls))
			}
			en, persisted := d.malformedEntry(turn, len(calls), tc, d.effectOf(tc.Name))
			items = append(items, persisted)
			calls = append(calls, en)
			continue
		}
		raw := tc.Arguments
		d.rawArgs[tc.ID] = raw
		persisted := d.redactItem(item.Item{Type: item.TypeToolCall, Role: item.RoleAssistant, ToolCall: &tc})
		if compact(persisted.ToolCall.Arguments) != compact(raw) {
			if d.cp.Redacted == nil {
				d.cp.Redacted = map[string]bool{}
			}
			d.cp.Redacted[tc.ID] = true
			d.keepArgs(tc.ID, raw)
		}
		items = append(items, persisted)
		effect := tool.SideEffect
		if t, ok := d.runner.Lookup(tc.Name); ok {
			effect = t.Spec().Effect
		}
		calls = append(calls, &store.LedgerEntry{Tenant: d.e.tenant, RunID: d.run.ID, CallID: tc.ID, Turn: turn, Index: len(calls),
			Tool: tc.Name, Effect: effect.String(), State: store.LedgerPrepared, IdempotencyKey: idempotencyKey(d.e.tenant, d.run.ID, tc.ID),
			ArgsDigest: argsDigest(raw), Args: persisted.ToolCall.Arguments})
	}
	d.cp.Items = append(d.cp.Items, items...)
	d.cp.Turn = turn
	d.cp.Usage = d.cp.Usage.Add(resp.Usage)
	respData := &ModelResponseData{Turn: turn, ResponseID: resp.ID, StopReason: resp.StopReason, Usage: resp.Usage, Items: items}
	if len(calls) == 0 {
		d.cp.Output = items
		if err := d.appendSession(ctx); err != nil {
			return d.sessionAppendFailed(ctx, err) // session.go
		}
		data := &RunEndedData{Status: StatusCompleted, Usage: d.cp.Usage}
		if err := d.saveRun(ctx, store.RunCompleted, nil, d.event(EvModelResponse, "", respData), d.event(EvRunCompleted, "", data)); err != nil {
			return nil, err
		}
		return d.cp.result(d.run.ID, store.RunCompleted), nil
	}
	var writes []store.LedgerWrite
	events := []*store.Event{d.event(EvModelResponse, "", respData)}
	for _, en := range calls {
		d.cp.Pending = append(d.cp.Pending, en.CallID)
		writes = append(writes, store.LedgerWrite{Entry: en})
		ev := EvToolPrepared
		if en.State == store.LedgerCommitted { // a malformed call, answered at once
			ev = EvToolSkipped
		}
		events = append(events, d.event(ev, en.CallID, entryData(en)))
	}
	return nil, d.saveRun(ctx, store.RunRunning, writes, events...)
}

func entryData(en *store.LedgerEntry) *ToolCallData {
	effect, _ := tool.ParseEffect(en.Effect) // unknown text reads as side-effect
	return &ToolCallData{CallID: en.CallID, Tool: en.Tool, Effect: effect, State: en.State,
		IdempotencyKey: en.IdempotencyKey, Attempt: en.Attempt, Args: en.Args}
}

// settlePending applies the recovery rules and runs the pending calls. It
// returns the interruptions that stop the run; every other pending call is
// committed when it returns without error.
func (d *drive) settlePending(ctx context.Context) ([]Interruption, error) {
	var interrupts []Interruption
	// First, settle what the ledger says about calls that may have run or
	// wait for a person: never call a tool here.
	for _, id := range d.cp.Pending {
		en, ok := d.ledger[id]
		if !ok {
			return nil, &store.DataError{Kind: "ledger", ID: d.run.ID + "/" + id, Err: errors.New("pending call has no ledger entry")}
		}
		if ok, err := d.reenterChild(ctx, en); err != nil || ok { // child.go
			if err != nil {
				return nil, err
			}
			continue
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
			next.Resolution = &store.Decision{Kind: string(DecideReexecute), By: "recovery-policy", At: d.e.clock(),
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

// transition moves en to next (a copy with the new fields) through the
// ledger state machine, as one fenced CAS write.
func (d *drive) transition(ctx context.Context, en, next *store.LedgerEntry, ev ledger.Event, evType string, extra ...*store.Event) error {
	to, err := ledger.Next(en.State, ev)
	if err != nil {
		return fmt.Errorf("actoviq: run %s call %s: %w", d.run.ID, en.CallID, err)
	}
	next.State = to
	// Text derived from the arguments (a validation message, a tool that
	// echoes its input) must not carry the secrets redaction removed.
	if secrets := d.secretsOf(en.CallID); len(secrets) > 0 {
		next.Result, next.Error = scrub(next.Result, secrets), scrub(next.Error, secrets)
	}
	d.redactEntry(next)
	return d.stageOrWrite(ctx, &store.RunWriteParams{Ledger: []store.LedgerWrite{entryWrite(next)},
		Events: append([]*store.Event{d.event(evType, en.CallID, entryData(next))}, extra...)})
}

// commitResult records a call's result (the tool's, or an error result the
// model sees).
func (d *drive) commitResult(ctx context.Context, en *store.LedgerEntry, ev ledger.Event, evType string, r tool.Result, mutate func(*store.LedgerEntry)) error {
	next := cloneEntry(en)
	r, notice := d.boundResult(r)
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("actoviq: encode result of %s: %w", en.CallID, err)
	}
	next.Result = b
	next.CommittedAt = d.e.clock()
	if mutate != nil {
		mutate(next)
	}
	next.Error = withOutputNotice(next.Error, notice)
	return d.transition(ctx, en, next, ev, evType)
}

// runCall takes one prepared call through policy, start, invocation and
// commit. It returns an interruption when the call cannot finish now.
func (d *drive) runCall(ctx context.Context, en *store.LedgerEntry) (*Interruption, error) {
	if ctx.Err() != nil || d.pastDeadline() {
		return nil, nil // not started; stays prepared
	}
	args, in, ok, err := d.argsToRun(ctx, en)
	if !ok || err != nil {
		return in, err
	}
	approved := d.approvalValid(en)
	_, err = d.runner.Check(ctx, &tool.Call{Name: en.Tool, Args: args, Approved: approved})
	var te *tool.Error
	if errors.As(err, &te) {
		switch te.Kind {
		case tool.KindApprovalRequired:
			next := cloneEntry(en)
			if err := d.transition(ctx, en, next, ledger.AskApproval, EvToolAwaiting); err != nil {
				return nil, err
			}
			in := d.interruption(InterruptApproval, d.entry(en.CallID), "the call needs approval before it starts", nil)
			return &in, nil
		default: // not found, validation, denied: the model sees why; nothing ran
			return nil, d.commitResult(ctx, en, ledger.Skip, EvToolSkipped, tool.Result{IsError: true, Content: te.Error()},
				func(n *store.LedgerEntry) { n.Error = mustJSON(te) })
		}
	}
	if err != nil {
		return nil, err
	}
	// Record started, and have that write return, before the tool runs.
	// This CAS also consumes the approval (it was for this attempt only).
	next := cloneEntry(en)
	next.Attempt++
	next.Holder, next.Epoch = d.fence.Holder, d.fence.Epoch
	next.StartedAt = d.e.clock()
	next.Error = nil
	if err := d.transition(ctx, en, next, ledger.Start, EvToolStarted); err != nil {
		return nil, err
	}
	en = d.entry(en.CallID)
	tctx, cancel := d.withinDeadline(ctx)
	defer cancel()
	tctx = d.childCallContext(tctx, en) // an agent tool's parent (child.go)
	res, err := d.runner.Run(tctx, &tool.Call{Name: en.Tool, Args: args, Key: en.IdempotencyKey, Attempt: en.Attempt, Approved: true})
	return d.recordOutcome(ctx, en, res, err)
}

// recordOutcome writes what a started call produced. It runs on a detached
// context (d.write), so a cancellation cannot lose a result that exists.
func (d *drive) recordOutcome(ctx context.Context, en *store.LedgerEntry, res tool.Result, err error) (*Interruption, error) {
	if in, err, ok := d.childOutcome(ctx, en, err); ok { // an agent tool's child run (child.go)
		return in, err
	}
	if err == nil {
		return nil, d.commitResult(ctx, en, ledger.Commit, EvToolCommitted, res, nil)
	}
	var te *tool.Error
	if !errors.As(err, &te) {
		te = &tool.Error{Kind: tool.KindExecution, Tool: en.Tool, Started: true, OutcomeUnknown: true, Err: err}
	}
	if !te.Started && !te.OutcomeUnknown {
		// The runner refused to invoke the tool: it definitely did not run.
		if te.Kind == tool.KindCancelled || te.Kind == tool.KindTimeout {
			// The context ended between the started write and the call:
			// back to prepared, to run when the run goes on.
			next := cloneEntry(en)
			next.Attempt--
			next.Error = mustJSON(te)
			next.Resolution = &store.Decision{Kind: "not-started", By: "runtime", At: d.e.clock(), Reason: te.Error()}
			return nil, d.transition(ctx, en, next, ledger.Reexecute, EvToolReexecute)
		}
		// The policy changed its mind (or the tool vanished): the model
		// sees why, as for a call refused before it started.
		return nil, d.commitResult(ctx, en, ledger.Commit, EvToolSkipped, tool.Result{IsError: true, Content: te.Error()},
			func(n *store.LedgerEntry) { n.Error = mustJSON(te) })
	}
	if te.Kind == tool.KindValidation && te.Started {
		// The tool ran and succeeded, but its output does not match its
		// schema. The effect happened: an error result would invite the
		// model to do it again. The model gets the output with a note; the
		// violation is recorded for operators.
		res.Content += fmt.Sprintf("\n(The call succeeded, but its output did not match the tool's declared schema: %s.)",
			strings.Join(te.Violations, "; "))
		return nil, d.commitResult(ctx, en, ledger.Commit, EvToolCommitted, res, func(n *store.LedgerEntry) { n.Error = mustJSON(te) })
	}
	if !te.OutcomeUnknown {
		// The tool ran and reported a failure: the model sees it as an
		// error result.
		content := te.Error()
		if res.Content != "" {
			content = res.Content + "\n" + content
		}
		return nil, d.commitResult(ctx, en, ledger.Commit, EvToolCommitted, tool.Result{Content: content, IsError: true},
			func(n *store.LedgerEntry) { n.Error = mustJSON(te) })
	}
	// The outcome is unknown: record that first.
	next := cloneEntry(en)
	next.Error = mustJSON(te)
	if err := d.transition(ctx, en, next, ledger.Lose, EvToolUnknown); err != nil {
		return nil, err
	}
	en = d.entry(en.CallID)
	if en.Effect == tool.Read.String() {
		// A read changed nothing: the model is told the outcome is unknown
		// and may decide to call again (a new call with a new key).
		return nil, d.commitResult(ctx, en, ledger.Settle, EvToolSettled, tool.Result{IsError: true, Content: fmt.Sprintf(
			"The outcome of this call is unknown (%v). It was not retried.", te)},
			func(n *store.LedgerEntry) {
				n.Resolution = &store.Decision{Kind: string(DecideFailed), By: "runtime", At: d.e.clock(), Reason: "read with unknown outcome"}
			})
	}
	kind, reason := InterruptReconciliation, "the side effect may or may not have happened; it is never run again without a decision"
	if en.Effect == tool.IdempotentWrite.String() {
		kind, reason = InterruptRecovery, "the idempotent write's outcome is unknown; re-execute reuses its idempotency key"
	}
	in := d.interruption(kind, en, fmt.Sprintf("%s (%v)", reason, te), nil)
	return &in, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"message": fmt.Sprint(v)})
	}
	return b
}

// approvalValid reports whether en carries an approval for its next
// attempt, bound to its arguments and the current policy version.
func (d *drive) approvalValid(en *store.LedgerEntry) bool {
	a := en.Approval
	return a != nil && (a.Kind == string(DecideApprove) || a.Kind == string(DecideReexecute)) &&
		a.ArgsDigest == en.ArgsDigest && a.PolicyVersion == d.pv && a.Attempt == en.Attempt+1
}

// reconcile asks the tool's probe, if it has one, about a started or
// unknown side effect. A definite committed answer settles the call; any
// other answer becomes the evidence of a reconciliation interruption.
func (d *drive) reconcile(ctx context.Context, en *store.LedgerEntry, spec tool.Spec) (*Interruption, error) {
	reason := fmt.Sprintf("the call was %s when the run stopped: the side effect may or may not have happened", en.State)
	t, ok := d.runner.Lookup(en.Tool)
	rec, isRec := t.(tool.Reconciler)
	if !ok || !isRec {
		in := d.interruption(InterruptReconciliation, en, reason+"; the tool has no probe", nil)
		return &in, nil
	}
	args := en.Args
	if raw, ok := d.rawArgs[en.CallID]; ok {
		args = raw
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = d.limits.ToolTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	probe, err := safeReconcile(tool.WithIdempotencyKey(pctx, en.IdempotencyKey), rec, en.IdempotencyKey, args)
	cancel()
	ans := &ProbeAnswer{Outcome: probe.Outcome.String(), Evidence: probe.Evidence}
	if err != nil {
		ans.Outcome, ans.Error = tool.ProbeUnknown.String(), err.Error()
	}
	ans = d.redactProbe(en.CallID, ans)
	if err == nil && probe.Outcome == tool.ProbeCommitted {
		r := tool.Result{Content: "(settled by the tool's probe)"}
		if probe.Result != nil {
			r = *probe.Result
		}
		err := d.commitResult(ctx, en, ledger.Settle, EvToolSettled, r, func(n *store.LedgerEntry) {
			n.Resolution = &store.Decision{Kind: "probe", By: "probe:" + en.Tool, At: d.e.clock(), Reason: "the probe found the effect committed",
				Result: mustJSON(r), Evidence: mustJSON(ans)}
		})
		return nil, err
	}
	if err := d.write(ctx, &store.RunWriteParams{Events: []*store.Event{d.event(EvToolProbed, en.CallID, &ToolProbedData{CallID: en.CallID, Outcome: ans.Outcome, Evidence: ans.Evidence, Error: ans.Error})}}); err != nil {
		return nil, err
	}
	why := "; the probe could not confirm it"
	if ans.Outcome == tool.ProbeNotExecuted.String() {
		// Finding nothing is not proof: a request sent just before the
		// crash may still land. Only a person can take that risk.
		why = "; the probe found no trace of it, which does not prove it will not still land (a request may be in flight), so a person decides"
	}
	in := d.interruption(InterruptReconciliation, en, reason+why, ans)
	return &in, nil
}

func (d *drive) interruption(kind InterruptionKind, en *store.LedgerEntry, reason string, probe *ProbeAnswer) Interruption {
	return Interruption{Kind: kind, CallID: en.CallID, Tool: en.Tool, Effect: en.Effect, State: string(en.State),
		IdempotencyKey: en.IdempotencyKey, Args: en.Args, ArgsDigest: en.ArgsDigest, Attempt: en.Attempt, StartedAt: en.StartedAt,
		Holder: en.Holder, Epoch: en.Epoch, Reason: d.redactText(en.CallID, reason), Probe: d.redactProbe(en.CallID, probe), LastError: d.redactErrJSON(en.Error)}
}

func sortInterruptions(in []Interruption, order map[string]int) {
	for i := 1; i < len(in); i++ {
		for j := i; j > 0 && order[in[j].CallID] < order[in[j-1].CallID]; j-- {
			in[j], in[j-1] = in[j-1], in[j]
		}
	}
}
