package tool

import (
	"context"
	"encoding/json"
)

// Permission is a policy's answer. Its string values are persisted.
type Permission string

// The permissions. Any other value, including "", is treated as Deny.
const (
	Allow Permission = "allow"
	Deny  Permission = "deny"
	Ask   Permission = "ask"
)

// Verdict is a policy decision with its reason.
type Verdict struct {
	// Permission is Allow, Deny or Ask.
	Permission Permission
	// Reason explains a Deny or Ask to the model or the approver.
	Reason string
}

// Policy decides whether a call may run. It sees the validated arguments
// and must not block on a person: [Ask] makes the runner stop with
// [KindApprovalRequired] until the call comes back approved.
type Policy interface {
	// Decide judges one call of the tool described by spec with args.
	Decide(ctx context.Context, spec Spec, args json.RawMessage) Verdict
}

// PolicyFunc adapts a function to [Policy].
type PolicyFunc func(ctx context.Context, spec Spec, args json.RawMessage) Verdict

// Decide calls f.
func (f PolicyFunc) Decide(ctx context.Context, spec Spec, args json.RawMessage) Verdict {
	return f(ctx, spec, args)
}

// DefaultPolicy asks for approval when the spec has RequireApproval and
// allows everything else.
func DefaultPolicy() Policy { return PolicyFunc(defaultDecide) }

func defaultDecide(_ context.Context, spec Spec, _ json.RawMessage) Verdict {
	if spec.RequireApproval {
		return Verdict{Permission: Ask, Reason: "tool requires approval"}
	}
	return Verdict{Permission: Allow}
}
