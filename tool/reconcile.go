package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Reconciler is implemented by tools that can check, after the fact,
// whether a call took effect (a read-back by idempotency key). It is
// optional: the runtime finds it by type assertion, and without it a call
// whose outcome is unknown goes to an operator.
type Reconciler interface {
	// Reconcile reports whether the call with this idempotency key and
	// these arguments took effect. It must not perform the effect a second
	// time: a read-back is the usual probe; sending the call again with
	// the same key is one only where the target dedupes on the key, so
	// that it answers from its record of the first request or acts once
	// if that never arrived (the httptool package's probe, for targets its
	// Config declares deduping). An error is treated like [ProbeUnknown].
	Reconcile(ctx context.Context, key string, args json.RawMessage) (Probe, error)
}

// ProbeOutcome is a probe's answer. The zero value is [ProbeUnknown].
type ProbeOutcome int

// The probe outcomes.
const (
	// ProbeUnknown: the probe could not tell; an operator decides.
	ProbeUnknown ProbeOutcome = iota
	// ProbeCommitted: the effect happened; Probe.Result is what the model
	// will see. A committed probe without a Result is treated as unknown.
	ProbeCommitted
	// ProbeNotExecuted: the effect did not happen. An operator still
	// decides whether to re-execute.
	ProbeNotExecuted
)

// String returns "unknown", "committed" or "not_executed".
func (o ProbeOutcome) String() string {
	switch o {
	case ProbeUnknown:
		return "unknown"
	case ProbeCommitted:
		return "committed"
	case ProbeNotExecuted:
		return "not_executed"
	}
	return fmt.Sprintf("ProbeOutcome(%d)", int(o))
}

// MarshalText encodes the outcome as its string form.
func (o ProbeOutcome) MarshalText() ([]byte, error) {
	if o < ProbeUnknown || o > ProbeNotExecuted {
		return nil, fmt.Errorf("tool: invalid probe outcome %d", int(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText decodes the string form; unknown text is an error.
func (o *ProbeOutcome) UnmarshalText(b []byte) error {
	switch string(b) {
	case "unknown":
		*o = ProbeUnknown
	case "committed":
		*o = ProbeCommitted
	case "not_executed":
		*o = ProbeNotExecuted
	default:
		return fmt.Errorf("tool: unknown probe outcome %q", b)
	}
	return nil
}

// Probe is a [Reconciler]'s answer.
type Probe struct {
	// Outcome is committed, not_executed or unknown.
	Outcome ProbeOutcome `json:"outcome"`
	// Result is the call's result when Outcome is ProbeCommitted.
	Result *Result `json:"result,omitempty"`
	// Evidence says what the probe saw, for the operator.
	Evidence string `json:"evidence,omitempty"`
}
