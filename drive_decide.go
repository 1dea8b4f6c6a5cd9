package actoviq

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// Decide records decisions on an interrupted run without driving it. Each
// decision is one fenced CAS on its ledger entry, with who, when, why and
// the evidence that was open. Resume then acts on them.
func (rt *Runtime) decide(ctx context.Context, runID string, decisions []Decision) error {
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		return err
	}
	if d.run.Status.Terminal() {
		if err := d.checkFinishedDecisions(decisions); err != nil {
			return err
		}
	}
	// A decision that does not fit is refused before the claim is taken,
	// so it changes nothing in the store. It is checked again under the
	// claim against what the ledger holds then.
	if err := d.checkDecisions(decisions); err != nil {
		return err
	}
	if err := d.claim(ctx); err != nil {
		return err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return err
	}
	if d.run.Status.Terminal() {
		// A finished run takes only the truth about a started call, for
		// the record; it does not continue.
		if err := d.checkFinishedDecisions(decisions); err != nil {
			return err
		}
	}
	return d.applyDecisions(ctx, decisions)
}

// applyDecisions checks every decision against the ledger before writing
// any, then records them all in one atomic write: either every decision
// is recorded or none is.
func (d *drive) applyDecisions(ctx context.Context, decisions []Decision) error {
	p, err := d.stageDecisions(ctx, decisions)
	if err != nil || p == nil {
		return err
	}
	if err := d.write(ctx, p); err != nil {
		return err
	}
	// A settled agent-tool call closes its child (drive_child.go).
	d.rt.closeSettledChildren(ctx, d.run.ID, decisions)
	return nil
}

// applyDecisionsAndQueue records decisions and hands the run to the queue
// in one atomic write (Requeue, a retry-safe child queued again): a
// process that dies in between would otherwise leave the run interrupted
// with its questions answered and nothing open, which no worker claims
// and no person is asked about. mutate, when set, changes the checkpoint
// that is written with them.
func (d *drive) applyDecisionsAndQueue(ctx context.Context, decisions []Decision, mutate func(*checkpoint), released *store.EventRecord) error {
	p, err := d.stageDecisions(ctx, decisions)
	if err != nil {
		return err
	}
	if p == nil {
		p = &store.RunWriteParams{}
	}
	if mutate != nil {
		mutate(d.cp)
	}
	p.Events = append(p.Events, released)
	if err := d.writeRun(ctx, p, store.RunQueued, nil); err != nil {
		return err
	}
	d.rt.closeSettledChildren(ctx, d.run.ID, decisions)
	return nil
}

// stageDecisions checks every decision against the ledger and returns the
// one write that records them all (nil for no decisions).
func (d *drive) stageDecisions(ctx context.Context, decisions []Decision) (*store.RunWriteParams, error) {
	if err := d.checkDecisions(decisions); err != nil || len(decisions) == 0 {
		return nil, err
	}
	d.staged = &store.RunWriteParams{}
	for _, dec := range decisions {
		if err := d.record(ctx, dec, d.ledger[dec.CallID]); err != nil {
			d.staged = nil
			return nil, err
		}
	}
	p := d.staged
	d.staged = nil
	return p, nil
}

// checkDecisions reports the first decision that does not fit the ledger.
func (d *drive) checkDecisions(decisions []Decision) error {
	seen := map[string]bool{}
	for i := range decisions {
		dec := &decisions[i]
		if err := dec.Validate(); err != nil {
			return err
		}
		if seen[dec.CallID] {
			return &DecisionError{CallID: dec.CallID, Reason: "two decisions for one call"}
		}
		seen[dec.CallID] = true
		en, ok := d.ledger[dec.CallID]
		if !ok {
			return &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf("run %s has no such call", d.run.ID)}
		}
		if err := fits(dec, en); err != nil {
			return err
		}
	}
	return nil
}

func fits(dec *Decision, en *store.LedgerEntry) error {
	switch dec.Kind {
	case DecideApprove, DecideReject:
		if en.State != store.LedgerAwaitingApproval {
			return &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf("%s needs a call awaiting approval; this one is %s", dec.Kind, en.State)}
		}
	default:
		if !ledger.MayHaveRun(en.State) {
			return &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf("%s settles a started or unknown call; this one is %s", dec.Kind, en.State)}
		}
	}
	return nil
}

// record writes one decision.
func (d *drive) record(ctx context.Context, dec Decision, en *store.LedgerEntry) error {
	in := d.openInterruption(en.CallID)
	if err := d.authorize(ctx, &dec, en); err != nil {
		return err
	}
	rec := &store.DecisionRecord{Kind: string(dec.Kind), By: dec.By, At: d.rt.clock(), Reason: dec.Reason, Note: dec.Note,
		ArgsDigest: en.ArgsDigest, PolicyVersion: d.policyVersion(), Evidence: mustJSON(in)}
	if d.rt.approvers != nil && !dec.byRuntime {
		rec.Rule, rec.ApproversVersion = d.requirement(ctx, en).Rule, d.rt.approvers.Version()
	}
	if !dec.byRuntime {
		seen, err := d.seen(&dec, en, rec.At)
		if err != nil {
			return err
		}
		rec.Seen = seen
	}
	if in == nil {
		// No open interruption (a run that ended cancelled): the evidence is
		// the entry as the decider saw it.
		rec.Evidence = mustJSON(entryData(en))
	}
	next := cloneEntry(en)
	switch dec.Kind {
	case DecideApprove:
		return d.approve(ctx, dec, en, rec)
	case DecideReject:
		rec.Earlier = earlier(en, nil)
		rec.WaitingSince = waitingSince(en)
		if p := d.partial(en, rec.At); p != nil {
			rec.Approvers = p.Approvers // who had approved before the rejection
		}
		next.Approval = rec
		msg := fmt.Sprintf("The call was rejected by %s and did not run.", dec.By)
		if dec.Reason != "" {
			msg += " Reason: " + dec.Reason
		}
		return d.commitResult(ctx, en, ledger.Reject, EvToolRejected, tool.Result{Content: msg, IsError: true},
			func(n *store.LedgerEntry) { n.Approval = rec })
	case DecideCommitted:
		r := tool.Result{Content: dec.Result, Data: dec.ResultData}
		rec.Result = mustJSON(r)
		return d.commitResult(ctx, en, ledger.Settle, EvToolSettled, r, func(n *store.LedgerEntry) { n.Resolution = rec })
	case DecideFailed:
		rec.Message = dec.Message
		return d.commitResult(ctx, en, ledger.Settle, EvToolSettled, tool.Result{Content: dec.Message, IsError: true},
			func(n *store.LedgerEntry) { n.Resolution = rec })
	case DecideAnswer:
		if in == nil || in.Kind != InterruptInput {
			return &DecisionError{CallID: dec.CallID, Reason: "answer answers an input interruption; this call has none open"}
		}
		return d.stageOrWrite(ctx, &store.RunWriteParams{Events: []*store.EventRecord{d.event(EvToolAnswer, en.CallID,
			&ToolAnswerData{CallID: en.CallID, Attempt: en.Attempt, Answer: dec.Answer, By: dec.By})}})
	case DecideReexecute:
		// An explicit new attempt with the same idempotency key; it also
		// lets that attempt start without asking again.
		next.Resolution = rec
		approval := *rec
		approval.Attempt = en.Attempt + 1
		next.Approval = &approval
		return d.transition(ctx, en, next, ledger.Reexecute, EvToolReexecute)
	}
	return &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf("unknown decision %q", dec.Kind)}
}

// policyVersionFor is the policy version approvals bind to: the driving
// agent's, or, when deciding without an agent, the one recorded when the run
// was interrupted.
func (d *drive) policyVersion() string {
	if d.agent != nil {
		return d.pv
	}
	return d.cp.PolicyVersion
}

func (d *drive) openInterruption(callID string) *Interruption {
	for i := range d.cp.Interruptions {
		if d.cp.Interruptions[i].CallID == callID {
			return &d.cp.Interruptions[i]
		}
	}
	return nil
}

// resumeDecisions records the decisions a Resume came with. A run past its
// deadline ends cancelled with its ledger untouched, and then the
// decisions are refused, not dropped: stop is true and err says so.
func (d *drive) resumeDecisions(ctx context.Context, decisions []Decision) (err error, stop bool) {
	if len(decisions) == 0 {
		return nil, false
	}
	if !d.pastDeadline() {
		return d.applyDecisions(ctx, decisions), false
	}
	res, err, _ := d.stopCheck(ctx)
	if err != nil {
		return err, true
	}
	return &RunFinishedError{RunID: d.run.ID, Status: res.Status, Reason: "its deadline passed, so it ended cancelled with its ledger " +
		"untouched and the decisions given to Resume were not recorded; record what happened to a started call with Runtime.Decide"}, true
}

// checkFinishedDecisions allows, on a finished run, only decisions that
// record the truth about a call that may have run (committed or failed on
// a started or unknown call): they are the audit trail, and the run does
// not continue. Anything else would need the run to go on.
func (d *drive) checkFinishedDecisions(decisions []Decision) error {
	for _, dec := range decisions {
		en := d.ledger[dec.CallID]
		settles := dec.Kind == DecideCommitted || dec.Kind == DecideFailed
		if en != nil && settles && ledger.MayHaveRun(en.State) {
			continue
		}
		return &RunFinishedError{RunID: d.run.ID, Status: statusOf(d.run.Status), Reason: fmt.Sprintf(
			"%s for call %q needs the run to go on; a finished run only records what happened to a started call (committed or failed)",
			dec.Kind, dec.CallID)}
	}
	return nil
}

// resumeFinished is what Resume answers for a run that already ended: its
// result, or, when decisions came with it, an error (they are not dropped
// silently).
func (d *drive) resumeFinished(decisions []Decision) (*RunResult, error) {
	if len(decisions) == 0 {
		return d.cp.result(d.run.ID, d.run.Status), nil
	}
	return nil, &RunFinishedError{RunID: d.run.ID, Status: statusOf(d.run.Status),
		Reason: "Resume records no decisions on a finished run; record what happened to a started call with Runtime.Decide"}
}
