package actoviq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/internal/toolrun"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

func entryData(en *store.LedgerEntry) *ToolCallData {
	d := entryDataValue(en)
	return &d
}

// entryDataValue is entryData as a value, which entryEvent keeps off the
// heap.
func entryDataValue(en *store.LedgerEntry) ToolCallData {
	effect, _ := tool.ParseEffect(en.Effect) // unknown text reads as side-effect
	d := ToolCallData{CallID: en.CallID, Tool: en.Tool, Effect: effect, State: en.State,
		IdempotencyKey: en.IdempotencyKey, Attempt: en.Attempt, Args: en.Args,
		// tool.Result marshals IsError last, and only when set.
		IsError: bytes.HasSuffix(en.Result, []byte(`"is_error":true}`))}
	if en.Resolution != nil {
		d.Resolution = en.Resolution.Kind
	}
	return d
}

// transition moves en to next (a copy with the new fields) through the
// ledger state machine, as one fenced CAS write.
func (d *drive) transition(ctx context.Context, en, next *store.LedgerEntry, ev ledger.Trigger, evType string, extra ...*store.EventRecord) error {
	return d.transitionAt(ctx, en, next, ev, evType, time.Time{}, extra...)
}

// transitionAt is transition whose event is timed at, a reading of the
// runtime's clock the caller just took for the entry itself (StartedAt,
// CommittedAt): the transition and its event are one moment, and a
// reading of this VM's clock costs 0.1-0.3 us. A zero at reads the clock.
func (d *drive) transitionAt(ctx context.Context, en, next *store.LedgerEntry, ev ledger.Trigger, evType string, at time.Time, extra ...*store.EventRecord) error {
	to, err := ledger.Next(en.State, ev)
	if err != nil {
		return fmt.Errorf("actoviq: run %s call %s: %w", d.run.ID, en.CallID, err)
	}
	next.State = to
	// Text derived from the arguments (a validation message, a tool that
	// echoes its input) must not carry the secrets redaction removed.
	if secrets := d.secretsOf(en.CallID); secrets != nil {
		next.Result, next.Error = scrub(next.Result, secrets), scrub(next.Error, secrets)
	}
	d.redactEntry(next)
	return d.stageOrWrite(ctx, oneEntryWrite(entryWrite(next, d.entryEvent(evType, next, at)), extra))
}

// oneEntryWrite is a write of one ledger entry (and events): the params
// and its ledger write in one allocation, as every call's transitions
// make them. Its Ledger has room for one more write: a held committed
// write takes the next call's record there (withCarried).
func oneEntryWrite(w store.LedgerWrite, events []*store.EventRecord) *store.RunWriteParams {
	one := &struct {
		p store.RunWriteParams
		w [2]store.LedgerWrite
	}{w: [2]store.LedgerWrite{w}}
	one.p.Ledger, one.p.Events = one.w[:1], events
	return &one.p
}

// commitResult records a call's result (the tool's, or an error result the
// model sees).
func (d *drive) commitResult(ctx context.Context, en *store.LedgerEntry, ev ledger.Trigger, evType string, r tool.Result, mutate func(*store.LedgerEntry)) error {
	next := cloneEntry(en)
	r, notice := d.boundResult(r)
	b, ok := marshalResult(&r)
	if ok {
		// fold makes the call's transcript item from r itself, not by
		// decoding these bytes again; its Data from the recorded bytes,
		// not the slice the tool returned: the tool may reuse that memory
		// once the call is over (a buffer it encodes every result into).
		r.Data = recordedData(b, &r)
		d.keepResult(en.CallID, b, r)
	} else {
		var err error
		if b, err = json.Marshal(r); err != nil {
			return fmt.Errorf("actoviq: encode result of %s: %w", en.CallID, err)
		}
	}
	next.Result = b
	now := d.rt.clock()
	next.CommittedAt = now
	if mutate != nil {
		mutate(next)
	}
	next.Error = withOutputNotice(next.Error, notice)
	return d.transitionAt(ctx, en, next, ev, evType, now)
}

// runCall takes one prepared call through policy, start, invocation and
// commit. It returns an interruption when the call cannot finish now. On
// a batch's worker (w set) the tool of a call that starts no child run
// runs on the calling goroutine (drive_batch.go); runCall returns
// toolrun.ErrTakenOver, having touched nothing of the drive's since the
// tool began, when the drive took the call over meanwhile.
func (d *drive) runCall(ctx context.Context, en *store.LedgerEntry, w *batchWorker) (*Interruption, error) {
	if ctx.Err() != nil || d.pastDeadline() {
		return nil, nil // not started; stays prepared
	}
	args, in, ok, err := d.argsToRun(ctx, en)
	if !ok || err != nil {
		return in, err
	}
	if d.agent.Approval.Policy != nil {
		// The caller's policy may wait (a service, a person): a committed
		// write held for this call's first write goes first, so that a
		// result is never kept from the store across it (drive_carry.go);
		// so does a held model response (drive_fold.go, which holds none
		// then).
		if err := d.flushResponse(ctx); err != nil {
			return nil, err
		}
		if err := d.flushCarried(ctx); err != nil {
			return nil, err
		}
		en = d.entry(en.CallID)
	}
	approved := d.approvalValid(en)
	// One Call for Check and Run: Run does not validate the arguments Check
	// validated again.
	call := &tool.Call{Name: en.Tool, Args: args, Approved: approved}
	_, err = d.runner.Check(ctx, call)
	if err != nil && d.responseHeld() {
		// The call does not start: the model's answer held for its
		// started write is stored alone first (drive_fold.go).
		if ferr := d.flushResponse(ctx); ferr != nil {
			return nil, ferr
		}
		en = d.entry(en.CallID)
	}
	var te *tool.Error
	if errors.As(err, &te) {
		switch te.Kind {
		case tool.KindApprovalRequired:
			next := cloneEntry(en)
			reason := "the call needs approval before it starts"
			var extra []*store.EventRecord
			if a := d.expiredApproval(en, d.rt.clock()); a != nil {
				// An approval given too long ago for a call that has not
				// started is void: recorded as expired, and asked again.
				now := d.rt.clock()
				exp := *a
				exp.ExpiredAt = now
				next.Approval = &exp
				extra = append(extra, d.event(EvToolApprovalExpired, en.CallID, &ApprovalExpiredData{CallID: en.CallID, Tool: en.Tool,
					Approvers: approverNames(a), ApprovedAt: approvedAt(a), ExpiresAt: a.ExpiresAt, ExpiredAt: now}))
				reason = fmt.Sprintf("the approval by %s expired at %s before the call started; the call needs approval again",
					strings.Join(approverNames(a), " and "), a.ExpiresAt.UTC().Format(time.RFC3339))
			}
			if err := d.transition(ctx, en, next, ledger.AskApproval, EvToolAwaiting, extra...); err != nil {
				return nil, err
			}
			in := d.interruption(InterruptApproval, d.entry(en.CallID), reason, nil)
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
	next.StartedAt = d.rt.clock()
	next.Error = nil
	if err := d.transitionAt(ctx, en, next, ledger.Start, EvToolStarted, next.StartedAt); err != nil {
		return nil, err
	}
	en = d.entry(en.CallID)
	tctx, cancel := d.withinDeadline(ctx)
	tctx, pc := d.childCallContext(tctx, en) // an agent tool's parent
	tctx = d.withRecorder(tctx, en)          // tool.RecordHandle (drive_handle.go)
	if w != nil && pc == nil {
		// What the drive needs to take the call over (w.mu is held).
		w.en, w.cancel = en, cancel
		tctx = toolrun.With(tctx, w)
	}
	call.Key, call.Attempt, call.Approved = en.IdempotencyKey, en.Attempt, true
	res, err := d.runner.Run(tctx, call)
	if err == toolrun.ErrTakenOver {
		return nil, err // the drive records the call, and ends its context
	}
	res, err = pc.outcome(res, err) // an agent tool's child: its own outcome, never "unknown"
	cancel()
	return d.recordOutcome(ctx, en, res, err)
}

// recordOutcome writes what a started call produced. It runs on a detached
// context (d.write), so a cancellation cannot lose a result that exists.
func (d *drive) recordOutcome(ctx context.Context, en *store.LedgerEntry, res tool.Result, err error) (*Interruption, error) {
	if in, err, ok := d.childOutcome(ctx, en, err); ok { // an agent tool's child run
		return in, err
	}
	if in := d.inputInterruption(en, err); in != nil { // drive_handle.go
		return in, nil
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
			next.Resolution = &store.DecisionRecord{Kind: "not-started", By: "runtime", At: d.rt.clock(), Reason: te.Error()}
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
				n.Resolution = &store.DecisionRecord{Kind: string(DecideFailed), By: "runtime", At: d.rt.clock(), Reason: "read with unknown outcome"}
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
		a.ArgsDigest == en.ArgsDigest && a.PolicyVersion == d.pv && a.Attempt == en.Attempt+1 &&
		(a.Required <= 1 || len(a.Approvers) >= a.Required) && a.ExpiredAt.IsZero() && !expired(a, d.rt.clock())
}

// approverNames lists who gave an approval.
func approverNames(a *store.DecisionRecord) []string {
	if len(a.Approvers) > 0 {
		return signers(a)
	}
	return []string{a.By}
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
	probe, err := safeReconcile(tool.WithCallStarted(tool.WithIdempotencyKey(pctx, en.IdempotencyKey), en.StartedAt), rec, en.IdempotencyKey, args)
	cancel()
	ans := &ProbeAnswer{Outcome: probe.Outcome, Evidence: probe.Evidence}
	if err != nil {
		ans.Outcome, ans.Error = tool.ProbeUnknown, err.Error()
	}
	ans = d.redactProbe(en.CallID, ans)
	if err == nil && probe.Outcome == tool.ProbeCommitted {
		r := tool.Result{Content: "(settled by the tool's probe)"}
		if probe.Result != nil {
			r = *probe.Result
		}
		err := d.commitResult(ctx, en, ledger.Settle, EvToolSettled, r, func(n *store.LedgerEntry) {
			n.Resolution = &store.DecisionRecord{Kind: "probe", By: "probe:" + en.Tool, At: d.rt.clock(), Reason: "the probe found the effect committed",
				Result: mustJSON(r), Evidence: mustJSON(ans)}
		})
		return nil, err
	}
	if err := d.write(ctx, &store.RunWriteParams{Events: []*store.EventRecord{d.event(EvToolProbed, en.CallID, &ToolProbedData{CallID: en.CallID, Outcome: ans.Outcome, Evidence: ans.Evidence, Error: ans.Error})}}); err != nil {
		return nil, err
	}
	why := "; the probe could not confirm it"
	if ans.Outcome == tool.ProbeNotExecuted {
		// Finding nothing is not proof: a request sent just before the
		// crash may still land. Only a person can take that risk.
		why = "; the probe found no trace of it, which does not prove it will not still land (a request may be in flight), so a person decides"
	}
	in := d.interruption(InterruptReconciliation, en, reason+why, ans)
	return &in, nil
}

func (d *drive) interruption(kind InterruptionKind, en *store.LedgerEntry, reason string, probe *ProbeAnswer) Interruption {
	return Interruption{Kind: kind, CallID: en.CallID, Tool: en.Tool, Effect: en.Effect, State: en.State,
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

// User code the runtime calls (tools, policies, probes, sinks) may panic.
// A panic never takes the process down: it is recovered where the call is
// made and recorded like the failure it stands for.
//
//   - a tool: the tool runner recovers it as an outcome-unknown execution
//     error, so a panicking side effect is reconciled like a crash;
//   - an approval policy: the runner recovers it as a denial (fail closed);
//     the model sees why, and the ledger keeps the error;
//   - a probe: recovered here as a probe error; the call goes to the
//     operator with the panic as the probe's evidence;
//   - a sink: recovered in emitSafe and recorded as a sink.panicked event;
//   - a provider: recovered as the model call's error (callModelSafe).

// safeReconcile asks a tool's probe, recovering a panic as an error.
func safeReconcile(ctx context.Context, rec tool.Reconciler, key string, args json.RawMessage) (p tool.Probe, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = tool.Probe{}, fmt.Errorf("the probe panicked: %v", v)
		}
	}()
	return rec.Reconcile(ctx, key, args)
}
