package actoviq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Decide records decisions on an interrupted run without continuing it.
// The decisions are checked against the ledger; one that does not fit it
// returns a [*DecisionError].
func (rt *Runtime) Decide(ctx context.Context, runID string, decisions ...Decision) error {
	rest, err := rt.routeChildDecisions(ctx, runID, decisions)
	if err != nil || len(rest) == 0 && len(decisions) > 0 {
		return err
	}
	return rt.decide(ctx, runID, rest)
}

// DecisionKind is what a person decided about an interrupted call.
type DecisionKind string

// Decision kinds.
const (
	DecideApprove   DecisionKind = "approve"
	DecideReject    DecisionKind = "reject"
	DecideCommitted DecisionKind = "committed"
	DecideFailed    DecisionKind = "failed"
	DecideReexecute DecisionKind = "re-execute"
	// DecideAnswer answers an input interruption: the call continues from
	// the handle its tool recorded, with Answer ([tool.Answer]).
	DecideAnswer DecisionKind = "answer"
)

// Decision answers one interruption. It is recorded with who, when and why
// and the evidence that was shown.
type Decision struct {
	// CallID is the interrupted call decided on.
	CallID string `json:"call_id"`
	// RunID names the child run the call belongs to when the decision is
	// given to its parent (an interruption's RunID); empty means the run
	// decided on, or, if it has no such call, the child run whose open
	// interruption has this call id.
	RunID string `json:"run_id,omitempty"`
	// Kind is what was decided.
	Kind DecisionKind `json:"kind"`
	// By names who decided; required.
	By string `json:"by"`
	// Reason is why. For reject it is what the model is told; for the
	// other kinds it is recorded only.
	Reason string `json:"reason,omitempty"`
	// Note is an operator's note, recorded and never shown to the model.
	Note string `json:"note,omitempty"`
	// Result is the tool result an operator records with committed: the
	// content the model sees.
	Result string `json:"result,omitempty"`
	// ResultData is optional structured data with Result; it must be JSON.
	ResultData json.RawMessage `json:"result_data,omitempty"`
	// Message is what the model sees for failed.
	Message string `json:"message,omitempty"`
	// Answer is a person's answer with answer: a JSON object, as the
	// question's schema asks. It is stored redacted like arguments.
	Answer json.RawMessage `json:"answer,omitempty"`
	// ShownAt is when the decider was shown the call (the page or the
	// command output); zero means the decision's time. It is recorded,
	// with the arguments' rendering, its digest and the agent version, in
	// the decision's store.Seen.
	ShownAt time.Time `json:"shown_at,omitzero"`
	// ShownDigest, when set, is the digest of the arguments' rendering the
	// decider was shown ([ArgsRenderingDigest] of the interruption's
	// Args). A decision whose digest is not the call's is refused: the
	// person decided on something else.
	ShownDigest string `json:"shown_digest,omitempty"`

	// byRuntime marks decisions the runtime makes under an explicit policy
	// of its own (retry-safe children): the approvals policy, which is
	// about people, does not apply to them.
	byRuntime bool
}

// Validate checks that a decision is well formed.
func (d *Decision) Validate() error {
	if d.CallID == "" {
		return &DecisionError{CallID: d.CallID, Reason: "missing call id"}
	}
	if strings.TrimSpace(d.By) == "" {
		return &DecisionError{CallID: d.CallID, Reason: "missing who decided (By)"}
	}
	switch d.Kind {
	case DecideApprove, DecideReject, DecideReexecute:
	case DecideAnswer:
		if a := bytes.TrimSpace(d.Answer); len(a) == 0 || a[0] != '{' || !json.Valid(a) {
			return &DecisionError{CallID: d.CallID, Reason: "answer needs a JSON object"}
		}
	case DecideCommitted:
		if d.ResultData != nil && !json.Valid(d.ResultData) {
			return &DecisionError{CallID: d.CallID, Reason: "result data is not JSON"}
		}
	case DecideFailed:
		if d.Message == "" {
			return &DecisionError{CallID: d.CallID, Reason: "failed needs a message for the model"}
		}
	default:
		return &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("unknown decision %q", d.Kind)}
	}
	return nil
}
