package actoviq

import (
	"context"
	"iter"
	"sync"

	"github.com/actoviq/actoviq-go/store"
)

// Errors from the store that callers branch on, re-exported so that most
// programs import only this package. They match with [errors.Is].
var (
	// ErrConflict: a write lost a revision compare-and-swap to another writer.
	ErrConflict = store.ErrConflict
	// ErrFenced: the writer's claim was taken over; it may not write.
	ErrFenced = store.ErrFenced
	// ErrNotFound: no such run (in this runtime's tenant).
	ErrNotFound = store.ErrNotFound
	// ErrData: a stored record could not be decoded.
	ErrData = store.ErrData
)

// Resume records decisions, applies the recovery rules to the ledger and
// continues the run. A new version of the agent may take the run over
// unless it changes what an unsettled call depends on ([*AgentChangeError];
// see [ResumeOptions.AcceptAgentChange]). It refuses a run held by another
// live worker ([ErrRunHeld]); a run past its deadline ends cancelled with
// its ledger untouched.
func (e *Runtime) Resume(ctx context.Context, a *AgentSpec, runID string, decisions ...Decision) (*RunResult, error) {
	return e.resumeOpts(ctx, a, runID, &ResumeOptions{Decisions: decisions})
}

// ResumeWith is [Runtime.Resume] with extra event sinks for this drive.
func (e *Runtime) ResumeWith(ctx context.Context, a *AgentSpec, runID string, decisions []Decision, sinks ...EventSink) (*RunResult, error) {
	return e.resumeOpts(ctx, a, runID, &ResumeOptions{Decisions: decisions, Sinks: sinks})
}

// Decide records decisions on an interrupted run without continuing it.
// The decisions are checked against the ledger; one that does not fit it
// returns a [*DecisionError].
func (e *Runtime) Decide(ctx context.Context, runID string, decisions ...Decision) error {
	rest, err := e.routeChildDecisions(ctx, runID, decisions) // child.go
	if err != nil || len(rest) == 0 && len(decisions) > 0 {
		return err
	}
	return e.decide(ctx, runID, rest)
}

// Stream starts a run and yields its events as they happen; the last
// event is the run's end (run.completed, run.interrupted, run.failed or
// run.cancelled), or the error that stopped the drive is yielded. Breaking
// out of the loop cancels the run's drive and waits for it to stop.
func (e *Runtime) Stream(ctx context.Context, a *AgentSpec, in *Input) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan Event)
		var wg sync.WaitGroup
		var runErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(events)
			sink := EventSinkFunc(func(ctx context.Context, ev Event) {
				select {
				case events <- ev:
				case <-ctx.Done():
				}
			})
			_, runErr = e.Run(ctx, a, in, sink)
		}()
		stopped := false
		for ev := range events {
			if !stopped && !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}
		wg.Wait()
		if runErr != nil && !stopped {
			yield(Event{}, runErr)
		}
	}
}
