package actoviq

import "time"

// Approvals policy: who may decide what ([Config].Approvers, package
// [approvals]), how many distinct people must approve, how long an approval
// stays good, and when a waiting call escalates. The engine's side is in
// drive_approvals.go.

// Event types of the approvals policy.
const (
	// EvToolApprovalSigned: one approval of several that the approvals
	// policy asks for was recorded; the call still waits for the others.
	// Payload [ApprovalSignedData].
	EvToolApprovalSigned = "tool.approval_signed"
	// EvToolApprovalExpired: an approval was found expired before its call
	// started. It is void, kept in the record ([store.DecisionRecord].ExpiredAt)
	// and the call waits for approval again. Payload [ApprovalExpiredData].
	EvToolApprovalExpired = "tool.approval_expired"
	// EvApprovalEscalated: a call waited for approval longer than the
	// approvals policy's escalate_after. It is recorded once per wait, by
	// [Runtime.EscalateApprovals] (which workers and the console run), and
	// is what a notifier subscribes to for escalations. Payload
	// [ApprovalEscalatedData].
	EvApprovalEscalated = "tool.approval_escalated"
)

// ApprovalSignedData is the payload of [EvToolApprovalSigned].
type ApprovalSignedData struct {
	// CallID and Tool name the call.
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// By is who approved now.
	By string `json:"by"`
	// Approvers are all who approved so far, in order.
	Approvers []string `json:"approvers"`
	// Required is how many distinct approvers the policy asks for.
	Required int `json:"required"`
}

// EventTypes implements [EventData].
func (*ApprovalSignedData) EventTypes() []string { return []string{EvToolApprovalSigned} }

// ApprovalExpiredData is the payload of [EvToolApprovalExpired].
type ApprovalExpiredData struct {
	// CallID and Tool name the call.
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Approvers are who had approved.
	Approvers []string `json:"approvers"`
	// ApprovedAt is when the approval was given (its first approver's time).
	ApprovedAt time.Time `json:"approved_at"`
	// ExpiresAt is when it stopped being good; ExpiredAt when the runtime
	// found it so.
	ExpiresAt time.Time `json:"expires_at"`
	// ExpiredAt is when the runtime found the approval expired.
	ExpiredAt time.Time `json:"expired_at"`
}

// EventTypes implements [EventData].
func (*ApprovalExpiredData) EventTypes() []string { return []string{EvToolApprovalExpired} }

// ApprovalEscalatedData is the payload of [EvApprovalEscalated]: what a
// notifier needs to page someone.
type ApprovalEscalatedData struct {
	// RunID, AgentID, CallID, Tool and Effect name the waiting call.
	RunID string `json:"run_id"`
	// AgentID is the run's agent id.
	AgentID string `json:"agent_id"`
	// CallID is the waiting call.
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect.
	Effect string `json:"effect"`
	// WaitingSince is when the call started waiting for approval.
	WaitingSince time.Time `json:"waiting_since"`
	// DecideBy is when the wait was due to end (WaitingSince plus the
	// policy's escalate_after).
	DecideBy time.Time `json:"decide_by"`
	// EscalateTo names who the escalation is for (names, "group:NAME").
	EscalateTo []string `json:"escalate_to,omitempty"`
	// Approvers are who approved so far, when several are needed.
	Approvers []string `json:"approvers,omitempty"`
	// Required is how many distinct approvers the policy asks for.
	Required int `json:"required"`
	// Rule and Version name the approvals policy rule and its version.
	Rule string `json:"rule,omitempty"`
	// Version is the approvals policy's version.
	Version string `json:"version,omitempty"`
}

// EventTypes implements [EventData].
func (*ApprovalEscalatedData) EventTypes() []string { return []string{EvApprovalEscalated} }

func init() {
	for _, mk := range []func() EventData{
		func() EventData { return new(ApprovalSignedData) },
		func() EventData { return new(ApprovalExpiredData) },
		func() EventData { return new(ApprovalEscalatedData) },
	} {
		for _, t := range mk().EventTypes() {
			eventPayloads[t] = mk
		}
	}
}

// ApprovalStatus is where a waiting call's approval stands, as
// [Runtime.Get] reads it from the ledger and the approvals policy.
type ApprovalStatus struct {
	// Approvers are who approved so far (when more than one is needed).
	Approvers []string `json:"approvers,omitempty"`
	// Required is how many distinct approvers are needed; at least 1.
	Required int `json:"required"`
	// MayApprove lists who may approve (names, "group:NAME", "*"); empty
	// without an approvals policy (anyone named may).
	MayApprove []string `json:"may_approve,omitempty"`
	// Rule names the approvals policy rule that governs the call.
	Rule string `json:"rule,omitempty"`
	// WaitingSince is when the call started waiting.
	WaitingSince time.Time `json:"waiting_since,omitzero"`
	// DecideBy is when the wait escalates; zero when it never does.
	DecideBy time.Time `json:"decide_by,omitzero"`
	// EscalatedAt is when the wait was escalated; zero until then.
	EscalatedAt time.Time `json:"escalated_at,omitzero"`
	// Expired lists approvals of this call that expired before it started.
	Expired int `json:"expired,omitempty"`
}
