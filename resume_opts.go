package actoviq

import (
	"context"
	"encoding/json"
)

// ResumeOptions are the extras of [Runtime.ResumeWithOptions]. A nil
// *ResumeOptions means none.
type ResumeOptions struct {
	// Decisions are recorded before the run goes on, as with
	// [Runtime.Resume].
	Decisions []Decision
	// Sinks receive this drive's events, besides Config.Sinks.
	Sinks []EventSink
	// Meta, when not nil, replaces the run's Meta for this and later
	// drives (how the run is driven now: another endpoint, another model).
	// The change is recorded in a run.meta_changed event with the old and
	// the new value. Nil keeps the stored Meta. Never put secrets in it.
	Meta json.RawMessage
	// AcceptAgentChange takes over a run under an agent version that
	// changes what an unsettled call depends on (see [AgentChangeError]).
	// Who, when, why and the diff are recorded; approvals bound to a
	// changed tool or policy become void, so those calls ask again. Nil
	// refuses such a change.
	AcceptAgentChange *AcceptAgentChange
}

// ResumeWithOptions is [Runtime.Resume] with options: extra sinks, a new
// Meta, and the explicit acceptance of an agent change.
func (e *Runtime) ResumeWithOptions(ctx context.Context, a *AgentSpec, runID string, opts *ResumeOptions) (*RunResult, error) {
	if opts == nil {
		opts = &ResumeOptions{}
	}
	return e.resumeOpts(ctx, a, runID, opts)
}
