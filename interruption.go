package actoviq

import (
	"encoding/json"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// A model call that still fails after the transport's bounded retries is
// either transient or final. A transient failure (5xx, 408/409/425/429, a
// transport error, a stream that broke, a wait the server asked for that is
// longer than the cap, a model call that timed out) stops the run
// interrupted with kind provider: everything committed so far stays
// committed, and Resume makes one new model call from the checkpoint. The
// runtime never does that on its own. A final failure (400, 401, 403, 404,
// context length, a content-policy refusal) ends the run failed, with what
// to do next.

// ProviderFailure is the evidence of a provider interruption: what the
// transport saw on the model call that failed.
type ProviderFailure struct {
	// Provider and Model name what was called; Turn is the model turn the
	// call was for (committed turns + 1).
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Turn     int    `json:"turn"`
	// Attempts is how many HTTP requests the transport sent for the call
	// (its bounded retries included); 0 when unknown.
	Attempts int `json:"attempts"`
	// Status is the last HTTP status (or the status an error event in a
	// stream stands for); 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// Code is the provider's error code or type when it gave one, else
	// "transport", "timeout" or "stream_interrupted".
	Code string `json:"code,omitempty"`
	// RequestID is the provider's request id, for a support ticket.
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is the wait the server asked for, if it asked.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Error is the error text, scrubbed of credentials.
	Error string `json:"error"`
	// Partial is the output a stream delivered before it broke. It is
	// evidence only: it is never put in the transcript, and Resume asks
	// the model for a fresh response.
	Partial []item.Item `json:"partial,omitempty"`
	// Consecutive counts provider interruptions in a row, this one
	// included; a committed model response resets it.
	Consecutive int `json:"consecutive"`
	// At is when the model call gave up (the runtime's clock).
	At time.Time `json:"at"`
}

// InterruptionKind says what a stopped run waits for.
type InterruptionKind string

// Interruption kinds.
const (
	// InterruptApproval: a call needs approve or reject.
	InterruptApproval InterruptionKind = "approval"
	// InterruptReconciliation: a side effect of unknown outcome; needs
	// committed, failed or re-execute.
	InterruptReconciliation InterruptionKind = "reconciliation"
	// InterruptRecovery: a read or idempotent write that was started when
	// the run stopped, and the recovery policy does not allow re-running it.
	InterruptRecovery InterruptionKind = "recovery"
	// InterruptProvider: a model call failed after the transport's
	// retries with a transient error (the provider is down, overloaded or
	// rate-limiting, or its stream broke). Nothing needs deciding: Resume
	// makes one new model call from the committed checkpoint. The evidence
	// is in Interruption.Provider; the call fields are empty.
	InterruptProvider InterruptionKind = "provider"
	// InterruptInput: a started call's far side asked a question only a
	// person can answer (the tool returned a [tool.InputError], such as an
	// MCP server's multi-round-trip request with no elicitation handler
	// configured), after the tool recorded where it stands. Nothing was done
	// past the question. Needs answer (the call continues from its handle
	// with the answer), or failed; the question is in Interruption.Input.
	InterruptInput InterruptionKind = "input"
)

// InputQuestion is the question of an input interruption.
type InputQuestion struct {
	// Prompt is the question, as the tool put it.
	Prompt string `json:"prompt"`
	// Schema is the JSON Schema of the expected answer, when the tool gave
	// one.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Interruption is one open question a person (or a probe) must answer
// before the run can go on. It carries the evidence to answer it.
type Interruption struct {
	// Kind says what the run waits for.
	Kind InterruptionKind `json:"kind"`
	// CallID is the call in question (empty for a provider interruption).
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect in its text form
	// ([tool.Effect.String]); empty for a provider interruption.
	Effect string `json:"effect"`
	// State is the call's ledger state: awaiting_approval, started or
	// unknown (empty for a provider interruption).
	State store.LedgerState `json:"state"`
	// IdempotencyKey is the call's stable key, the one the target system saw.
	IdempotencyKey string `json:"idempotency_key"`
	// Args are the call's arguments as persisted (secrets redacted).
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsDigest is the digest of the unredacted arguments; approvals bind to it.
	ArgsDigest string `json:"args_digest"`
	// Attempt counts the times the call was started.
	Attempt int `json:"attempt"`
	// StartedAt is when the last attempt was recorded started.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Holder is the worker that started the last attempt.
	Holder string `json:"holder,omitempty"`
	// Epoch is that worker's claim epoch (fencing token).
	Epoch int64 `json:"epoch,omitempty"`
	// Reason explains why the run stopped here.
	Reason string `json:"reason"`
	// Probe is the tool's probe answer, when it has a probe.
	Probe *ProbeAnswer `json:"probe,omitempty"`
	// LastError is the persisted error of the last attempt, if any.
	LastError json.RawMessage `json:"last_error,omitempty"`
	// Provider is the evidence of a provider interruption.
	Provider *ProviderFailure `json:"provider,omitempty"`
	// Input is the question of an input interruption.
	Input *InputQuestion `json:"input,omitempty"`
	// RunID is set when the call belongs to a child run (an agent used as
	// a tool): the run whose ledger holds it, where it is decided. Empty
	// for the run's own calls.
	RunID string `json:"run_id,omitempty"`

	// Approval is where the call's approval stands (approval
	// interruptions, read by Get): who approved so far, how many are
	// needed, who may approve, and when the wait escalates.
	Approval *ApprovalStatus `json:"approval,omitempty"`

	// nested are a child run's interruptions, shown in its parent's place.
	nested []Interruption
}

// ProbeAnswer is what a tool's Reconcile probe said.
type ProbeAnswer struct {
	// Outcome is what the probe found.
	Outcome tool.ProbeOutcome `json:"outcome"`
	// Evidence is what the probe saw.
	Evidence string `json:"evidence,omitempty"`
	// Error is set when the probe itself failed.
	Error string `json:"error,omitempty"`
}
