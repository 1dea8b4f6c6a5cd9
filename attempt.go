package actoviq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// CallAttempt is one real attempt of a call: the ledger recorded it started
// (durably, before the tool ran), under a drive's holder and epoch, and it
// ended with an outcome, or was interrupted without one. It is derived from
// the run's stored events, which are written in the same transaction as the
// ledger transitions they record, so the history survives any crash: an
// attempt whose process died shows as interrupted, found so by the next
// drive.
type CallAttempt struct {
	// CallID is the call; Number its ledger attempt count at the start
	// (1 for the first execution, one more for each re-execution).
	CallID string `json:"call_id"`
	Number int    `json:"number"`
	// Tool is the called tool.
	Tool string `json:"tool"`
	// StartedAt is when the start was recorded.
	StartedAt time.Time `json:"started_at"`
	// Holder and Epoch name the drive that started it (the process and its
	// claim's fencing token); empty when the run's events do not say.
	Holder string `json:"holder,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	// EndedAt is when its end was recorded; zero while it is open.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// End is how it ended: one of the AttemptEnd constants; empty while
	// the attempt is open (the call is running, or was when its drive's
	// last event was written).
	End AttemptEnd `json:"end,omitempty"`
	// Reason says more about the end in one line: who settled it, which
	// drive stopped.
	Reason string `json:"reason,omitempty"`
}

// AttemptEnd is how a [CallAttempt] ended.
type AttemptEnd string

// Attempt ends.
const (
	// AttemptCommitted: the tool returned and its result was committed.
	AttemptCommitted AttemptEnd = "committed"
	// AttemptToolError: the tool returned an error result, committed.
	AttemptToolError AttemptEnd = "tool_error"
	// AttemptUnknown: the outcome is not known (a transport failure, a
	// timeout of running work); it waits for reconciliation.
	AttemptUnknown AttemptEnd = "unknown"
	// AttemptInterrupted: the drive stopped while the call was started
	// (its process died, lost its lease, shut down or was cancelled)
	// without recording an outcome.
	AttemptInterrupted AttemptEnd = "interrupted"
	// AttemptSettled: a person or the tool's probe recorded the outcome
	// of an attempt whose outcome was not known.
	AttemptSettled AttemptEnd = "settled"
	// AttemptReexecuted: a person decided to run the call again; a new
	// attempt with the same key follows.
	AttemptReexecuted AttemptEnd = "re-executed"
)

// Attempts returns the attempts of every call of a run, in the order they
// started, read from the run's stored events (one read, the size of the
// run's history). An unknown run, or another tenant's, matches
// [ErrNotFound].
func (rt *Runtime) Attempts(ctx context.Context, runID string) ([]CallAttempt, error) {
	evs, err := rt.Events(ctx, runID, nil)
	if err != nil {
		return nil, err
	}
	return AttemptsFromEvents(evs), nil
}

// AttemptsFromEvents folds a run's stored events, in sequence order (as
// [Runtime.Events] returns them), into the attempts of its calls.
// [Runtime.Attempts] reads and folds in one call.
func AttemptsFromEvents(evs []Event) []CallAttempt {
	var out []CallAttempt
	open := map[string]int{} // call id → index in out of its open attempt
	var holder string
	var epoch int64
	closeAll := func(at time.Time, why string) {
		for id, i := range open {
			out[i].End, out[i].EndedAt, out[i].Reason = AttemptInterrupted, at, why
			delete(open, id)
		}
	}
	end := func(callID string, at time.Time, how AttemptEnd, why string) {
		if i, ok := open[callID]; ok {
			out[i].End, out[i].EndedAt, out[i].Reason = how, at, why
			delete(open, callID)
		}
	}
	for _, ev := range evs {
		switch ev.Type {
		case EvRunStarted, EvRunResumed:
			var d RunStartedData
			_ = json.Unmarshal(ev.Data, &d)
			if len(open) > 0 {
				closeAll(ev.Time, fmt.Sprintf("the drive of %s (epoch %d) stopped without recording an outcome; found by the drive of %s (epoch %d)",
					orUnknown(holder), epoch, orUnknown(d.Holder), d.Epoch))
			}
			holder, epoch = d.Holder, d.Epoch
		case EvRunInterrupted, EvRunReleased, EvRunCancelled, EvRunFailed, EvRunCompleted:
			if len(open) > 0 {
				closeAll(ev.Time, fmt.Sprintf("the drive of %s (epoch %d) ended (%s) while the call was started", orUnknown(holder), epoch, ev.Type))
			}
		case EvToolStarted:
			var d ToolCallData
			if json.Unmarshal(ev.Data, &d) != nil || d.CallID == "" {
				continue
			}
			end(d.CallID, ev.Time, AttemptInterrupted, "a new attempt started")
			open[d.CallID] = len(out)
			out = append(out, CallAttempt{CallID: d.CallID, Number: d.Attempt, Tool: d.Tool, StartedAt: ev.Time, Holder: holder, Epoch: epoch})
		case EvToolCommitted, EvToolUnknown, EvToolSettled, EvToolReexecute:
			var d ToolCallData
			if json.Unmarshal(ev.Data, &d) != nil || d.CallID == "" {
				continue
			}
			switch ev.Type {
			case EvToolCommitted:
				how := AttemptCommitted
				if d.IsError {
					how = AttemptToolError
				}
				end(d.CallID, ev.Time, how, "")
			case EvToolUnknown:
				end(d.CallID, ev.Time, AttemptUnknown, "the outcome is not known; it waits for reconciliation")
			case EvToolSettled, EvToolReexecute:
				how, why := AttemptSettled, settledWhy(d.Resolution)
				if ev.Type == EvToolReexecute {
					how, why = AttemptReexecuted, "a person decided to run it again with the same key"
				}
				// The open attempt, or the last attempt of the call when an
				// earlier drive's end already closed it.
				if _, ok := open[d.CallID]; ok {
					end(d.CallID, ev.Time, how, why)
					continue
				}
				for i := len(out) - 1; i >= 0; i-- {
					if out[i].CallID == d.CallID {
						if out[i].End == AttemptInterrupted || out[i].End == AttemptUnknown {
							out[i].Reason = joinReason(out[i].Reason, string(how)+" at "+ev.Time.UTC().Format(time.RFC3339)+": "+why)
						}
						break
					}
				}
			}
		}
	}
	return out
}

func settledWhy(resolution string) string {
	switch resolution {
	case "probe":
		return "the tool's probe found it committed"
	case string(DecideCommitted):
		return "a person recorded it committed"
	case string(DecideFailed):
		return "a person recorded it failed"
	case "":
		return "settled"
	}
	return "settled (" + resolution + ")"
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; then " + b
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown holder"
	}
	return s
}
