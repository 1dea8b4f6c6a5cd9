package actoviq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
)

// The engine's side of the approvals policy (approvers.go): checking who
// decides, collecting several approvals, recording what the decider saw,
// voiding expired approvals, and escalating long waits.

// ArgsRenderingDigest is the digest of a call's arguments as shown to a
// person (the redacted JSON as stored, compacted): "sha256:" and 64 hex
// digits. A surface sends it as [Decision].ShownDigest so that the record
// says exactly what was approved.
func ArgsRenderingDigest(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.Write(args)
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

func actionOf(k DecisionKind) approvals.Action {
	switch k {
	case DecideApprove:
		return approvals.Approve
	case DecideReject:
		return approvals.Reject
	}
	return approvals.Settle
}

func (d *drive) approvalsCall(en *store.LedgerEntry) approvals.Call {
	return approvals.Call{RunID: d.run.ID, AgentID: d.run.AgentID, CallID: en.CallID, Tool: en.Tool, Effect: en.Effect}
}

// requirement is what the approvals policy asks of en's approval; one
// approver, no lifetime and no escalation without a policy.
func (d *drive) requirement(ctx context.Context, en *store.LedgerEntry) approvals.Requirement {
	if d.rt.approvers == nil {
		return approvals.Requirement{Approvers: 1}
	}
	c := d.approvalsCall(en)
	req := d.rt.approvers.Require(ctx, &c)
	req.Approvers = max(req.Approvers, 1)
	return req
}

// authorize checks a decision against the approvals policy.
func (d *drive) authorize(ctx context.Context, dec *Decision, en *store.LedgerEntry) error {
	if d.rt.approvers == nil || dec.byRuntime {
		return nil
	}
	c := d.approvalsCall(en)
	req := &approvals.Request{Action: actionOf(dec.Kind), By: dec.By, Call: c}
	if dec.Kind == DecideApprove {
		if p := d.partial(en, d.rt.clock()); p != nil {
			req.Approvers = signers(p)
			// Distinct people whatever the Authorizer checks: the same
			// name in another case or with spaces is the same person.
			for _, s := range req.Approvers {
				if approvals.SamePerson(s, dec.By) {
					rule := d.requirement(ctx, en)
					return &approvals.RefusedError{Action: req.Action, By: dec.By, Call: c, Version: d.rt.approvers.Version(), Rule: rule.Rule,
						Reason: fmt.Sprintf("%s already approved this call, and the rule needs %d distinct approvers", s, rule.Approvers)}
				}
			}
		}
	}
	if err := d.rt.approvers.Authorize(ctx, req); err != nil {
		if errors.Is(err, approvals.ErrRefused) {
			return err
		}
		return &approvals.RefusedError{Action: req.Action, By: dec.By, Call: c, Version: d.rt.approvers.Version(), Reason: err.Error()}
	}
	return nil
}

// seen is what the decider saw: the stored (redacted) arguments, their
// digest, the agent version and when it was shown. A decision that says
// it saw other arguments is refused.
func (d *drive) seen(dec *Decision, en *store.LedgerEntry, now time.Time) (*store.Seen, error) {
	s := &store.Seen{Args: en.Args, Digest: ArgsRenderingDigest(en.Args), AgentVersion: d.run.AgentDigest, At: now}
	if d.cp != nil && d.cp.Agent != nil && d.cp.Agent.Digest != "" {
		s.AgentVersion = d.cp.Agent.Digest
	}
	if len(en.Args) == 0 {
		s.Digest = ""
	}
	if dec.ShownDigest != "" && dec.ShownDigest != s.Digest {
		return nil, &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf("the arguments shown (digest %s) are not this call's (digest %s); look at the call again and decide on what it is", dec.ShownDigest, s.Digest)}
	}
	if !dec.ShownAt.IsZero() && !dec.ShownAt.After(now) {
		s.At = dec.ShownAt
	}
	return s, nil
}

// bound reports whether an approval record is for en as it is now: its
// arguments, the approval policy version and its next attempt.
func (d *drive) bound(a *store.DecisionRecord, en *store.LedgerEntry) bool {
	return a != nil && a.Kind == string(DecideApprove) && a.ArgsDigest == en.ArgsDigest &&
		a.PolicyVersion == d.policyVersion() && a.Attempt == en.Attempt+1
}

// approvedAt is when an approval was first given: its first approver's
// time. Its lifetime runs from there.
func approvedAt(a *store.DecisionRecord) time.Time {
	if len(a.Approvers) > 0 {
		return a.Approvers[0].At
	}
	return a.At
}

func expired(a *store.DecisionRecord, now time.Time) bool {
	return !a.ExpiresAt.IsZero() && !now.Before(a.ExpiresAt)
}

// partial returns en's approval when it is an incomplete set of approvals
// still good for the call (bound to it, not expired), nil otherwise.
func (d *drive) partial(en *store.LedgerEntry, now time.Time) *store.DecisionRecord {
	a := en.Approval
	if en.State != store.LedgerAwaitingApproval || !d.bound(a, en) || len(a.Approvers) == 0 || len(a.Approvers) >= a.Required || expired(a, now) {
		return nil
	}
	return a
}

func signers(a *store.DecisionRecord) []string {
	out := make([]string, 0, len(a.Approvers))
	for _, s := range a.Approvers {
		out = append(out, s.By)
	}
	return out
}

// earlier carries the approvals of en that went void into the record of
// a new decision.
func earlier(en *store.LedgerEntry, keep *store.DecisionRecord) []store.DecisionRecord {
	a := en.Approval
	if a == nil || a == keep || (a.ExpiredAt.IsZero() && len(a.Approvers) == 0) {
		if a != nil && a != keep {
			return a.Earlier
		}
		return nil
	}
	prev := *a
	prev.Earlier = nil
	return append(append([]store.DecisionRecord(nil), a.Earlier...), prev)
}

// approve records an approval. When the policy asks for more approvers
// than have signed, the call keeps waiting (ledger Sign) with this
// approval added; the last one lets it start (ledger Approve).
func (d *drive) approve(ctx context.Context, dec Decision, en *store.LedgerEntry, rec *store.DecisionRecord) error {
	now := rec.At
	req := d.requirement(ctx, en)
	rec.Attempt = en.Attempt + 1
	rec.Required = req.Approvers
	rec.WaitingSince = waitingSince(en)
	note := dec.Note
	if note == "" {
		note = dec.Reason // an approval's why (the CLI's --note)
	}
	sign := store.Signoff{By: dec.By, At: now, Note: note, Seen: rec.Seen}
	if p := d.partial(en, now); p != nil {
		rec.Approvers = append(append([]store.Signoff(nil), p.Approvers...), sign)
		rec.Earlier = p.Earlier
		rec.EscalatedAt = p.EscalatedAt
	} else {
		rec.Earlier = earlier(en, nil)
		if a := en.Approval; a != nil && a.Kind == "escalated" {
			rec.EscalatedAt = a.EscalatedAt
		}
		if req.Approvers > 1 {
			rec.Approvers = []store.Signoff{sign}
		}
	}
	if req.TTL > 0 {
		rec.ExpiresAt = approvedAt(rec).Add(req.TTL)
	}
	next := cloneEntry(en)
	next.Approval = rec
	if len(rec.Approvers) > 0 && len(rec.Approvers) < rec.Required {
		data := &ApprovalSignedData{CallID: en.CallID, Tool: en.Tool, By: dec.By, Approvers: signers(rec), Required: rec.Required}
		return d.moveWith(ctx, en, next, ledger.Sign, d.event(EvToolApprovalSigned, en.CallID, data))
	}
	return d.transition(ctx, en, next, ledger.Approve, EvToolApproved)
}

// moveWith moves en to next through the ledger with one typed event.
func (d *drive) moveWith(ctx context.Context, en, next *store.LedgerEntry, ev ledger.Trigger, event *store.EventRecord) error {
	to, err := ledger.Next(en.State, ev)
	if err != nil {
		return fmt.Errorf("actoviq: run %s call %s: %w", d.run.ID, en.CallID, err)
	}
	next.State = to
	d.redactEntry(next)
	return d.stageOrWrite(ctx, &store.RunWriteParams{Ledger: []store.LedgerWrite{entryWrite(next, event)}})
}

// waitingSince is when en started waiting for its approval.
func waitingSince(en *store.LedgerEntry) time.Time {
	if a := en.Approval; a != nil && !a.WaitingSince.IsZero() && a.ExpiredAt.IsZero() && (a.Kind == "escalated" || len(a.Approvers) > 0 && len(a.Approvers) < a.Required) {
		return a.WaitingSince
	}
	return en.UpdatedAt
}

// expiredApproval returns en's approval when it is bound to the call but
// its lifetime ended before the call started.
func (d *drive) expiredApproval(en *store.LedgerEntry, now time.Time) *store.DecisionRecord {
	a := en.Approval
	if !d.bound(a, en) || !expired(a, now) || !a.ExpiredAt.IsZero() {
		return nil
	}
	return a
}

// approvalStatus is where an open approval stands, for Get.
func (rt *Runtime) approvalStatus(ctx context.Context, run *store.Run, en *store.LedgerEntry) *ApprovalStatus {
	st := &ApprovalStatus{Required: 1, WaitingSince: waitingSince(en)}
	if rt.approvers != nil {
		req := rt.approvers.Require(ctx, &approvals.Call{RunID: run.ID, AgentID: run.AgentID, CallID: en.CallID, Tool: en.Tool, Effect: en.Effect})
		st.Required, st.MayApprove, st.Rule = max(req.Approvers, 1), req.Approve, req.Rule
		if req.EscalateAfter > 0 {
			st.DecideBy = st.WaitingSince.Add(req.EscalateAfter)
		}
	}
	if a := en.Approval; a != nil {
		if a.Kind == string(DecideApprove) && a.ExpiredAt.IsZero() && len(a.Approvers) < a.Required {
			st.Approvers = signers(a)
		}
		if a.ExpiredAt.IsZero() && (a.Kind == "escalated" || len(a.Approvers) > 0) {
			st.EscalatedAt = a.EscalatedAt
		}
		for _, e := range append(append([]store.DecisionRecord(nil), a.Earlier...), *a) {
			if !e.ExpiredAt.IsZero() {
				st.Expired++
			}
		}
	}
	return st
}

// EscalateApprovals escalates every call of this runtime's tenant that has
// waited for approval longer than the approvals policy's escalate_after:
// it records [EvApprovalEscalated] on the call's run, once per wait, and
// marks the wait escalated in the call's approval record (the console's
// inbox shows it). It returns what it escalated now. Without
// [Config].Approvers, or for calls whose rule has no escalate_after, it
// does nothing. [Runtime.Work] runs it on its poll; the console runs it
// too; a program may run it on its own schedule. A run being driven is
// skipped (it does not wait).
//
// A call costs what is due, not what waits: a run that stops waiting for
// an approval whose rule escalates keeps when it is due as a timer in the
// store (a claim [store.EscalationKey], found through an index when due),
// and a poll reads the timers that are due, at most [MaxEscalationsPerPoll]
// runs. Once per runtime and approvals policy version (the first call, and
// after the policy changed, which moves the due times) it walks every
// interrupted run once, page by page, to set the timers of runs that
// stopped before this version of the runtime or under another policy.
func (rt *Runtime) EscalateApprovals(ctx context.Context) ([]ApprovalEscalatedData, error) {
	if rt.approvers == nil {
		return nil, nil
	}
	var out []ApprovalEscalatedData
	var errs []error
	keep := func(got []ApprovalEscalatedData, err error) bool {
		out = append(out, got...)
		if err != nil && !errors.Is(err, ErrRunHeld) && !errors.Is(err, store.ErrConflict) {
			errs = append(errs, err)
		}
		return err == nil
	}
	version := rt.approvers.Version()
	rt.mu.Lock()
	swept := rt.swept == version
	rt.mu.Unlock()
	if !swept {
		ok := true
		var after *store.RunCursor
		for {
			page, err := rt.store.RunList(ctx, &store.RunListParams{Tenant: rt.tenant, Status: store.RunInterrupted, Summary: true,
				Limit: 500, After: after})
			if err != nil && !errors.Is(err, store.ErrData) {
				return out, errors.Join(append(errs, err)...)
			}
			for _, r := range page {
				ok = keep(rt.escalateRun(ctx, r.ID, nil)) && ok
			}
			if len(page) < 500 {
				break
			}
			after = store.CursorOf(page[len(page)-1], store.RunsNewest)
		}
		if ok {
			rt.mu.Lock()
			rt.swept = version
			rt.mu.Unlock()
		}
	}
	due, err := rt.store.ClaimList(ctx, &store.ClaimListParams{Tenant: rt.tenant, HolderPrefix: store.EscalationHolderPrefix,
		ExpiredBy: rt.clock(), Limit: MaxEscalationsPerPoll})
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("actoviq: due approval escalations: %w", err))...)
	}
	for _, c := range due {
		keep(rt.escalateRun(ctx, strings.TrimPrefix(c.Key, "escalate:"), c))
	}
	return out, errors.Join(errs...)
}

// MaxEscalationsPerPoll is the most due escalation timers one call of
// [Runtime.EscalateApprovals] reads; the next call goes on with the rest.
const MaxEscalationsPerPoll = 100

// nextEscalation is when the first approval wait of the loaded drive that
// is not escalated yet is due to escalate; zero when none is.
func (d *drive) nextEscalation(ctx context.Context) time.Time {
	var next time.Time
	if d.rt.approvers == nil {
		return next
	}
	for _, en := range d.ledger {
		if en.State != store.LedgerAwaitingApproval {
			continue
		}
		req := d.requirement(ctx, en)
		if req.EscalateAfter <= 0 {
			continue
		}
		if st := d.rt.approvalStatus(ctx, d.run, en); !st.EscalatedAt.IsZero() {
			continue
		}
		if at := waitingSince(en).Add(req.EscalateAfter); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// setEscalation keeps when run runID's next approval wait escalates (its
// timer claim: same holder, so setting it again moves it).
func (rt *Runtime) setEscalation(ctx context.Context, runID string, at time.Time) error {
	_, err := rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: store.EscalationKey(runID),
		Holder: store.EscalationHolderPrefix + runID, TTL: max(at.Sub(rt.clock()), time.Millisecond)})
	if err != nil {
		return fmt.Errorf("actoviq: run %s: escalation timer: %w", runID, err)
	}
	return nil
}

// escalationAtStop sets the timer of a drive that stops interrupted with
// approval waits that escalate. finish calls it twice: before the write
// (a crash after the write leaves no wait without its timer; a timer whose
// write failed finds the run not waiting when due, and goes), and after it
// (a sweep that read the run before and removed its old timer meanwhile
// does not leave the new wait without one).
func (d *drive) escalationAtStop(ctx context.Context) error {
	if at := d.nextEscalation(ctx); !at.IsZero() {
		return d.rt.setEscalation(ctx, d.run.ID, at)
	}
	return nil
}

// escalateRun escalates the due approval waits of run runID, then moves
// its timer to the next wait due or, when none is left, removes timer t
// (nil: the full pass, which sets a timer that is missing).
func (rt *Runtime) escalateRun(ctx context.Context, runID string, t *store.Claim) ([]ApprovalEscalatedData, error) {
	d := rt.bareDrive()
	if err := d.load(ctx, runID); err != nil {
		if errors.Is(err, store.ErrNotFound) && t != nil {
			return nil, rt.dropEscalation(ctx, t)
		}
		return nil, err
	}
	now := rt.clock()
	if d.run.Status != store.RunInterrupted || len(d.due(ctx, now)) == 0 {
		return nil, rt.rescheduleEscalation(ctx, d, t)
	}
	if err := d.claim(ctx); err != nil {
		return nil, err
	}
	defer d.release(ctx)
	if err := d.read(ctx, runID); err != nil {
		return nil, err
	}
	var out []ApprovalEscalatedData
	d.staged = &store.RunWriteParams{}
	for _, en := range d.due(ctx, now) {
		req := d.requirement(ctx, en)
		since := waitingSince(en)
		next := cloneEntry(en)
		if p := d.partial(en, now); p != nil {
			a := *p
			a.EscalatedAt, a.WaitingSince = now, since
			next.Approval = &a
		} else {
			next.Approval = &store.DecisionRecord{Kind: "escalated", By: "runtime", At: now, WaitingSince: since, EscalatedAt: now,
				Reason: fmt.Sprintf("waited for approval longer than %s (approvals policy rule %q)", req.EscalateAfter, req.Rule),
				Rule:   req.Rule, ApproversVersion: rt.approvers.Version(), Earlier: earlier(en, nil)}
		}
		data := ApprovalEscalatedData{RunID: runID, AgentID: d.run.AgentID, CallID: en.CallID, Tool: en.Tool, Effect: en.Effect,
			WaitingSince: since, DecideBy: since.Add(req.EscalateAfter), EscalateTo: req.EscalateTo, Required: req.Approvers,
			Rule: req.Rule, Version: rt.approvers.Version()}
		if p := d.partial(en, now); p != nil {
			data.Approvers = signers(p)
		}
		if err := d.moveWith(ctx, en, next, ledger.Sign, d.event(EvApprovalEscalated, en.CallID, &data)); err != nil {
			d.staged = nil
			return nil, err
		}
		out = append(out, data)
	}
	p := d.staged
	d.staged = nil
	if err := d.write(ctx, p); err != nil {
		return nil, err
	}
	// The run is held: nobody else changes its waits meanwhile.
	return out, rt.rescheduleEscalation(ctx, d, t)
}

// rescheduleEscalation moves the timer of loaded drive d to its next
// approval wait due, or removes timer t when none is left. A removal, or
// a recheck of a run found driven, is checked by reading the run again:
// when it changed meanwhile (a drive stopped again with a new wait, and
// set its timer before the removal or the recheck), the timer is set again
// from what it holds now.
func (rt *Runtime) rescheduleEscalation(ctx context.Context, d *drive, t *store.Claim) error {
	if d.run.Status == store.RunInterrupted {
		if at := d.nextEscalation(ctx); !at.IsZero() {
			return rt.setEscalation(ctx, d.run.ID, at)
		}
	}
	if t == nil {
		return nil
	}
	if d.run.Status == store.RunRunning || d.run.Status == store.RunQueued {
		// Driven or about to be: it sets its own timer when it stops
		// waiting again; this one is checked again later. The drive may
		// have stopped and set its timer after d was read, and this would
		// move that timer a recheck later: read the run again, as for a
		// removal below.
		if err := rt.setEscalation(ctx, d.run.ID, rt.clock().Add(escalationRecheck)); err != nil {
			return err
		}
	} else if err := rt.dropEscalation(ctx, t); err != nil || d.run.Status.Terminal() {
		return err
	}
	again := rt.bareDrive()
	if err := again.load(ctx, d.run.ID); err != nil || again.run.Revision == d.run.Revision {
		return err
	}
	if at := again.nextEscalation(ctx); !at.IsZero() && again.run.Status == store.RunInterrupted {
		return rt.setEscalation(ctx, d.run.ID, at)
	}
	return nil
}

// escalationRecheck is when the timer of a run found running is read again.
const escalationRecheck = time.Minute

// dropEscalation removes timer t (a stale fence: someone set it since,
// and it stays).
func (rt *Runtime) dropEscalation(ctx context.Context, t *store.Claim) error {
	err := rt.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: rt.tenant, Remove: true,
		Fence: store.Fence{Key: t.Key, Holder: t.Holder, Epoch: t.Epoch}})
	if err != nil && !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("actoviq: escalation timer %s: %w", t.Key, err)
	}
	return nil
}

// due lists the calls of a loaded drive whose approval wait is past due
// and not yet escalated.
func (d *drive) due(ctx context.Context, now time.Time) []*store.LedgerEntry {
	var out []*store.LedgerEntry
	for _, en := range d.ledger {
		if en.State != store.LedgerAwaitingApproval {
			continue
		}
		req := d.requirement(ctx, en)
		if req.EscalateAfter <= 0 || now.Before(waitingSince(en).Add(req.EscalateAfter)) {
			continue
		}
		if st := d.rt.approvalStatus(ctx, d.run, en); !st.EscalatedAt.IsZero() {
			continue
		}
		out = append(out, en)
	}
	return out
}
