package store

import (
	"encoding/json"
	"time"
)

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run statuses. Queued runs wait for a worker ([Store.RunClaimNext]).
const (
	RunQueued      RunStatus = "queued"
	RunRunning     RunStatus = "running"
	RunInterrupted RunStatus = "interrupted"
	RunCompleted   RunStatus = "completed"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
)

// Valid reports whether s is a known status.
func (s RunStatus) Valid() bool {
	switch s {
	case RunQueued, RunRunning, RunInterrupted, RunCompleted, RunFailed, RunCancelled:
		return true
	}
	return false
}

// Terminal reports whether a run in status s can no longer change.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Run is a run record with its checkpoint. The checkpoint is owned by the
// engine and opaque to the store, but it must be valid JSON.
type Run struct {
	Tenant      string
	ID          string
	ParentID    string // empty for a top-level run
	SessionID   string // empty when the run continues no session
	AgentID     string
	AgentDigest string
	Status      RunStatus
	// Checkpoint is the engine's state (transcript, turn, usage...).
	Checkpoint json.RawMessage
	// Meta is caller-owned JSON about how the run was started (never secrets).
	Meta json.RawMessage
	// Deadline is the run's deadline; zero means none.
	Deadline time.Time
	// Revision is the run row's CAS revision, 1 after create.
	Revision int64
	// EventSeq is the sequence number of the run's last event, 0 if none.
	EventSeq  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// LedgerState is the state of one tool call in the pending-tool ledger.
type LedgerState string

// Ledger states; see internal/ledger for the allowed transitions.
const (
	LedgerPrepared         LedgerState = "prepared"
	LedgerAwaitingApproval LedgerState = "awaiting_approval"
	LedgerStarted          LedgerState = "started"
	LedgerUnknown          LedgerState = "unknown"
	LedgerCommitted        LedgerState = "committed"
)

// Valid reports whether s is a known ledger state.
func (s LedgerState) Valid() bool {
	switch s {
	case LedgerPrepared, LedgerAwaitingApproval, LedgerStarted, LedgerUnknown, LedgerCommitted:
		return true
	}
	return false
}

// LedgerEntry is the durable record of one tool call.
type LedgerEntry struct {
	Tenant string
	RunID  string
	CallID string
	// Turn is the model turn that asked for the call; Index its position in
	// that turn's response. Together they order the calls of a run.
	Turn  int
	Index int
	Tool  string
	// Effect is the tool's declared effect: "read", "idempotent-write" or
	// "side-effect".
	Effect         string
	State          LedgerState
	IdempotencyKey string
	// Attempt counts started executions; 0 until the first start.
	Attempt    int
	ArgsDigest string
	// Args are the call's arguments after redaction.
	Args json.RawMessage
	// Result is the committed tool result (JSON), set in state committed.
	Result json.RawMessage
	// Error is the persisted runtime error of the last attempt, if any.
	Error json.RawMessage
	// Approval records the approval decision, if one was needed.
	Approval *Decision
	// Resolution records how an unknown outcome was settled.
	Resolution *Decision
	// Holder and Epoch identify the worker that last moved the entry.
	Holder      string
	Epoch       int64
	Revision    int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   time.Time // zero until started
	CommittedAt time.Time // zero until committed
}

// Decision is a recorded decision on a ledger entry: an approval or
// rejection, or the settlement of an unknown outcome.
type Decision struct {
	// Kind is approve, reject, committed, failed, re-execute or probe.
	Kind   string    `json:"kind"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Note is an operator's note, never shown to the model.
	Note string `json:"note,omitempty"`
	// ArgsDigest and PolicyVersion bind an approval to what was approved.
	ArgsDigest    string `json:"args_digest,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	// Attempt is the attempt an approval is for: it lets exactly that
	// attempt start, so moving the entry to started consumes it.
	Attempt int `json:"attempt,omitempty"`
	// Result is the operator-supplied or probed result (committed).
	Result json.RawMessage `json:"result,omitempty"`
	// Message is what the model sees for a failed decision.
	Message string `json:"message,omitempty"`
	// Evidence is what the decider was shown (attempts, probe answer...).
	Evidence json.RawMessage `json:"evidence,omitempty"`
}

// Event is one run event in the stable envelope of SPEC §9. Seq is assigned
// by the store, gapless per run, starting at 1.
type Event struct {
	Tenant      string
	RunID       string
	Seq         int64
	ID          string
	ParentRunID string
	TraceID     string
	SpanID      string
	Type        string
	Time        time.Time
	Data        json.RawMessage
}

// Claim is a lease on a key (usually "run:<id>") with an epoch that serves as
// a fencing token. Every acquisition by a new holder increments the epoch.
type Claim struct {
	Tenant      string
	Key         string
	Holder      string
	Epoch       int64
	ExpiresAt   time.Time
	HeartbeatAt time.Time
}

// Fence names the claim a write is made under. The write succeeds only if
// the claim still has this holder and epoch.
type Fence struct {
	Key    string
	Holder string
	Epoch  int64
}

// SessionEntry is one item of a session journal.
type SessionEntry struct {
	Seq   int64
	RunID string
	// Turn is SessionAppendParams.Turn of the append that wrote the item
	// (0 for items appended without one).
	Turn int
	Item json.RawMessage
}

// SessionState is a session as loaded: the latest snapshot and the journal
// entries after it.
type SessionState struct {
	Tenant    string
	SessionID string
	// Revision is the seq of the last journal entry; 0 for a new session.
	Revision int64
	// SnapshotRevision is the revision the snapshot covers (0: none).
	SnapshotRevision int64
	Snapshot         json.RawMessage
	// Entries are the journal entries with Seq > SnapshotRevision.
	Entries []SessionEntry
}

// OnceRecord is the durable result of a once.Do key.
type OnceRecord struct {
	Tenant    string
	Key       string
	Value     json.RawMessage
	CreatedAt time.Time
}
