package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/tool"
)

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
