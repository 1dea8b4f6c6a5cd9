package actoviq

import (
	"encoding/json"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// AgentChangedData is the payload of agent.changed.
type AgentChangedData struct {
	AgentChangeRecord
}

// EventTypes implements [EventData].
func (*AgentChangedData) EventTypes() []string { return []string{EvAgentChanged} }

// MetaChangedData is the payload of run.meta_changed: a resume replaced
// the run's Meta ([ResumeOptions.Meta]).
type MetaChangedData struct {
	// From is the Meta before; empty when the run had none.
	From json.RawMessage `json:"from,omitempty"`
	// To is the Meta now.
	To json.RawMessage `json:"to"`
}

// EventTypes implements [EventData].
func (*MetaChangedData) EventTypes() []string { return []string{EvRunMetaChanged} }

// RunStartedData is the payload of run.started and run.resumed: who drives
// the run, under which claim, with which agent.
type RunStartedData struct {
	// AgentID is AgentSpec.ID.
	AgentID string `json:"agent_id"`
	// AgentDigest is the digest of the agent's definition at this drive.
	AgentDigest string `json:"agent_digest"`
	// Model is AgentSpec.Model.
	Model string `json:"model"`
	// Holder names the process that holds the run's claim for this drive.
	Holder string `json:"holder"`
	// Epoch is the claim's fencing token: every write of this drive checks it.
	Epoch int64 `json:"epoch"`
	// Session is the session the run continues, if any. (Its JSON key is
	// not "session_id": redaction treats session ids as credentials.)
	Session string `json:"session,omitempty"`
	// SessionRevision is the session revision the run started from,
	// SessionItems how many of the session's items it took (its session
	// window) and SessionOmitted how many earlier ones that window left
	// out, as [RunInfo] says them: a run says from its first event that
	// its model does not see the whole conversation.
	SessionRevision int64 `json:"session_revision,omitempty"`
	// SessionItems: see SessionRevision.
	SessionItems int `json:"session_items,omitempty"`
	// SessionOmitted: see SessionRevision.
	SessionOmitted int64 `json:"session_omitted,omitempty"`
}

// RunEndedData is the payload of the events that end a drive:
// run.completed, run.interrupted, run.failed and run.cancelled.
type RunEndedData struct {
	// Status is the run's status after the drive.
	Status Status `json:"status"`
	// Usage is the run's total token usage so far.
	Usage item.Usage `json:"usage"`
	// Error says why a failed run failed; nil otherwise.
	Error *RunError `json:"error,omitempty"`
	// Interruptions are the open questions of an interrupted run.
	Interruptions []Interruption `json:"interruptions,omitempty"`
}

// ModelRequestData is the payload of model.request, emitted (not stored)
// before each model call.
type ModelRequestData struct {
	// Turn is the number the response will have (1 for the first call).
	Turn int `json:"turn"`
	// Model is the model asked.
	Model string `json:"model"`
	// Items is the number of transcript items sent.
	Items int `json:"items"`
}

// TextDeltaData is the payload of model.text_delta, emitted (not stored)
// while a streaming model call delivers text.
type TextDeltaData struct {
	// Delta is the piece of text.
	Delta string `json:"delta"`
	// Index is the output item the text belongs to.
	Index int `json:"index"`
}

// ModelAttemptData is the payload of model.attempt, emitted (not stored)
// when the provider transport retried a model call before any output.
type ModelAttemptData struct {
	// Number is the attempt that failed, starting at 1.
	Number int `json:"number"`
	// Status is the HTTP status, or 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// Wait is the backoff before the next attempt (JSON: nanoseconds).
	Wait time.Duration `json:"wait"`
	// Err describes the failure; it never contains credentials.
	Err string `json:"error,omitempty"`
}

// ModelResponseData is the payload of model.response: a model response
// committed to the checkpoint (tool-call arguments redacted).
type ModelResponseData struct {
	// Turn counts committed responses, from 1.
	Turn int `json:"turn"`
	// ResponseID is the provider's response id, when it gives one.
	ResponseID string `json:"response_id,omitempty"`
	// StopReason is why the model stopped.
	StopReason llm.StopReason `json:"stop_reason,omitempty"`
	// Usage is this response's token usage.
	Usage item.Usage `json:"usage"`
	// Items are the response's output items. The store keeps them once,
	// in the run's log (store.Run.Log): the stored event says where
	// (ItemsAt) and leaves Items out. [Runtime.Events] and every sink
	// receive the event with Items filled in from the log, redacted as
	// any event data.
	Items []item.Item `json:"items,omitempty"`
	// ItemsAt is where the run's log holds Items. Events stored before
	// the log existed have Items and no ItemsAt.
	ItemsAt *LogRange `json:"items_at,omitempty"`
	// NotUTF8 counts the bytes that were not UTF-8 in the raw JSON of the
	// response's items other than tool calls (a raw item's value,
	// structured output), each recorded as U+FFFD: a store keeps text in
	// UTF-8 only. (A tool call whose arguments hold such bytes is not
	// run: its ledger entry says so.)
	NotUTF8 int `json:"not_utf8,omitempty"`
}

// LogRange is a range of a run's log (store.Run.Log): Count items from
// index From.
type LogRange struct {
	// From is the index of the first item in the run's log.
	From int `json:"from"`
	// Count is the number of items.
	Count int `json:"count"`
}

// ToolCallData is the payload of every tool.* event except tool.probed: a
// ledger transition of one call, as the ledger holds it after the
// transition.
type ToolCallData struct {
	// CallID is the call's id in the run.
	CallID string `json:"call_id"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect.
	Effect tool.Effect `json:"effect"`
	// State is the ledger state after the transition.
	State store.LedgerState `json:"state"`
	// IdempotencyKey is the call's stable key.
	IdempotencyKey string `json:"idempotency_key"`
	// Attempt counts executions of the call (0 before the first start).
	Attempt int `json:"attempt"`
	// Args are the call's arguments, secret-looking values redacted.
	Args json.RawMessage `json:"args,omitempty"`
	// IsError is set on a committed call whose result is an error result
	// (the tool reported a failure to the model).
	IsError bool `json:"is_error,omitempty"`
	// Resolution says how a settled call was settled: "committed" or
	// "failed" (a person's decision), "probe" (the tool's probe found it
	// committed), "re-execute" (a person asked for a new attempt; it stays
	// on the entry's later events), or "not-run" (the runtime proved it never
	// started). Empty until a resolution is recorded.
	Resolution string `json:"resolution,omitempty"`
}

// RunClaimedData is the payload of run.claimed (emitted, not stored): a
// worker claimed a run from the queue.
type RunClaimedData struct {
	// AgentID is the run's agent.
	AgentID string `json:"agent_id"`
	// Holder and Epoch name the new claim.
	Holder string `json:"holder"`
	Epoch  int64  `json:"epoch"`
	// Took is how long the store took to claim it (JSON: nanoseconds).
	Took time.Duration `json:"took"`
	// Takeover is set when the run was running under a holder that is
	// gone (its lease expired or its process died): the worker took it
	// over, and the recovery rules decide what happens to its calls.
	Takeover bool `json:"takeover"`
}

// RunLeaseLostData is the payload of run.lease_lost (emitted, not stored):
// the claim a drive held was taken by another process.
type RunLeaseLostData struct {
	// Holder and Epoch name the claim that was lost.
	Holder string `json:"holder"`
	Epoch  int64  `json:"epoch"`
	// LeaseShort is set when this runtime saw a store round trip that did
	// not fit its lease ([Runtime.LeaseWarning]): the likely cause.
	LeaseShort *LeaseWarning `json:"lease_short,omitempty"`
}

// EventTypes implements [EventData].
func (*RunClaimedData) EventTypes() []string { return []string{EvRunClaimed} }

// EventTypes implements [EventData].
func (*RunLeaseLostData) EventTypes() []string { return []string{EvRunLeaseLost} }

// ToolProbedData is the payload of tool.probed: what a tool's
// [tool.Reconciler] probe answered about a call of unknown outcome.
type ToolProbedData struct {
	// CallID is the call the probe was asked about.
	CallID string `json:"call_id"`
	// Outcome is what the probe found.
	Outcome tool.ProbeOutcome `json:"outcome"`
	// Evidence is what the probe saw.
	Evidence string `json:"evidence,omitempty"`
	// Error is set when the probe itself failed.
	Error string `json:"error,omitempty"`
}

// EventTypes implements [EventData].
func (*RunStartedData) EventTypes() []string { return []string{EvRunStarted, EvRunResumed} }

// EventTypes implements [EventData].
func (*RunEndedData) EventTypes() []string {
	return []string{EvRunCompleted, EvRunInterrupted, EvRunFailed, EvRunCancelled}
}

// EventTypes implements [EventData].
func (*ModelRequestData) EventTypes() []string { return []string{EvModelRequest} }

// EventTypes implements [EventData].
func (*TextDeltaData) EventTypes() []string { return []string{EvTextDelta} }

// EventTypes implements [EventData].
func (*ModelAttemptData) EventTypes() []string { return []string{EvModelAttempt} }

// EventTypes implements [EventData].
func (*ModelResponseData) EventTypes() []string { return []string{EvModelResponse} }

// EventTypes implements [EventData].
func (*ToolCallData) EventTypes() []string {
	return []string{EvToolPrepared, EvToolAwaiting, EvToolApproved, EvToolRejected, EvToolStarted,
		EvToolCommitted, EvToolUnknown, EvToolSkipped, EvToolSettled, EvToolReexecute}
}

// EventTypes implements [EventData].
func (*ToolProbedData) EventTypes() []string { return []string{EvToolProbed} }

// ToolHandleData is the data of a tool.handle event: a handle a running
// call's tool recorded on its ledger entry ([tool.RecordHandle]), which
// recovery hands to the tool's [tool.Resumer].
type ToolHandleData struct {
	// CallID is the call.
	CallID string `json:"call_id"`
	// Attempt is the call's attempt that recorded it.
	Attempt int `json:"attempt"`
	// Kind is the handle's kind, the tool's own ("mcp.task").
	Kind string `json:"kind"`
	// Data is the tool's JSON, redacted like arguments.
	Data json.RawMessage `json:"data,omitempty"`
	// Evidence is the line for a person ("MCP task 7f3a ...: working").
	Evidence string `json:"evidence,omitempty"`
}

// EventTypes implements [EventData].
func (*ToolHandleData) EventTypes() []string { return []string{EvToolHandle} }

// ToolAnswerData is the data of a tool.answer event: a person's answer to
// an input interruption, which the call's next Resume receives.
type ToolAnswerData struct {
	// CallID is the call.
	CallID string `json:"call_id"`
	// Attempt is the call's attempt the answer is for.
	Attempt int `json:"attempt"`
	// Answer is the answer, redacted like arguments.
	Answer json.RawMessage `json:"answer"`
	// By names who answered.
	By string `json:"by"`
}

// EventTypes implements [EventData].
func (*ToolAnswerData) EventTypes() []string { return []string{EvToolAnswer} }

// ToolNoteData is the data of a tool.note event ([Runtime.NoteCall]).
type ToolNoteData struct {
	// CallID is the call.
	CallID string `json:"call_id"`
	// By names who recorded it.
	By string `json:"by"`
	// Text is the note, redacted.
	Text string `json:"text"`
}

// EventTypes implements [EventData].
func (*ToolNoteData) EventTypes() []string { return []string{EvToolNote} }

// eventPayloads maps each known event type to a new payload value.
var eventPayloads = func() map[string]func() EventData {
	m := map[string]func() EventData{}
	for _, mk := range []func() EventData{
		func() EventData { return new(RunStartedData) },
		func() EventData { return new(RunEndedData) },
		func() EventData { return new(ModelRequestData) },
		func() EventData { return new(TextDeltaData) },
		func() EventData { return new(ModelAttemptData) },
		func() EventData { return new(ModelResponseData) },
		func() EventData { return new(ToolCallData) },
		func() EventData { return new(ToolProbedData) },
		func() EventData { return new(ToolHandleData) },
		func() EventData { return new(ToolAnswerData) },
		func() EventData { return new(ToolNoteData) },
		func() EventData { return new(AgentChangedData) },
		func() EventData { return new(MetaChangedData) },
		func() EventData { return new(RunReleasedData) },
		func() EventData { return new(RunClaimedData) },
		func() EventData { return new(RunLeaseLostData) },
		func() EventData { return new(LeaseShortData) },
	} {
		for _, t := range mk().EventTypes() {
			m[t] = mk
		}
	}
	return m
}()

// SessionRecoveredData is the payload of session.recovered.
type SessionRecoveredData struct {
	// SessionID is the run's session; Revision the session revision that
	// ends the run's append.
	SessionID string `json:"session_id"`
	Revision  int64  `json:"revision"`
	// Turn is the turn of the answer, as stored with the append.
	Turn int `json:"turn"`
	// Output is the answer the run completes with.
	Output []item.Item `json:"output"`
}

// EventTypes implements [EventData].
func (*SessionRecoveredData) EventTypes() []string { return []string{EvSessionRecovered} }

func init() {
	eventPayloads[EvSessionRecovered] = func() EventData { return new(SessionRecoveredData) }
}

// SinkPanickedData is the payload of sink.panicked: a sink panicked on an
// event; it was recovered and skipped for that event.
type SinkPanickedData struct {
	// Sink is the sink's index among the drive's sinks (Config.Sinks, then
	// the sinks given to the call); SinkType its Go type.
	Sink     int    `json:"sink"`
	SinkType string `json:"sink_type"`
	// EventID and EventType name the event it panicked on.
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	// Panic is the recovered value, as text.
	Panic string `json:"panic"`
}

// EventTypes implements [EventData].
func (*SinkPanickedData) EventTypes() []string { return []string{EvSinkPanicked} }

func init() {
	eventPayloads[EvSinkPanicked] = func() EventData { return new(SinkPanickedData) }
}

// RunReleasedData is the payload of run.released: a run went back to the
// queue, from a worker that shut down ([ErrReleased]) or by
// [Runtime.Requeue].
type RunReleasedData struct {
	// Holder and Epoch name the drive that released it; empty for Requeue.
	Holder string `json:"holder,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	// Reason says why.
	Reason string `json:"reason"`
}

// EventTypes implements [EventData].
func (*RunReleasedData) EventTypes() []string { return []string{EvRunReleased} }
