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

// Run is a run record with its state. The state is owned by the engine and
// opaque to the store; it has two parts, so that a write carries its own
// change and not the run's history:
//
//   - Checkpoint, a small JSON value that each run update replaces whole
//     (the engine keeps the transcript out of it);
//   - Log, a journal of JSON items that run updates only append to
//     ([RunUpdate.Append]): the transcript.
//
// Backends store each append once, as its own record with a checksum, and
// compact old records together off the write path; a read folds them back.
type Run struct {
	// Tenant scopes the run; every key includes it.
	Tenant string
	// ID is the run's id, unique in its tenant.
	ID string
	// ParentID is the parent run's id; empty for a top-level run.
	ParentID string
	// SessionID is the session the run continues; empty for none.
	SessionID string
	// AgentID is the agent the run was started with.
	AgentID string
	// AgentDigest is the digest of that agent's definition at the last drive.
	AgentDigest string
	// Status is the stored lifecycle state.
	Status RunStatus
	// Checkpoint is the engine's state (turn, usage, pending calls...)
	// as of the last run update.
	Checkpoint json.RawMessage
	// Log is every item the run's writes appended, in order
	// ([RunCreateParams] and [RunUpdate.Append]). [Store.RunGet] and
	// [Store.RunClaimNext] fill it; [Store.RunList] and [Store.RunWrite]
	// leave it nil (LogLen still counts it).
	Log []json.RawMessage
	// LogLen is the number of items in the run's log.
	LogLen int
	// Meta is caller-owned JSON about how the run was started (never secrets).
	Meta json.RawMessage
	// Deadline is the run's deadline; zero means none.
	Deadline time.Time
	// WaitKind is what an interrupted run waits for, as the engine wrote
	// it with the status (the kind of its first open question, such as
	// "approval"); empty for any other status. It is a summary column
	// that the inbox counts by; the checkpoint holds the details.
	WaitKind string
	// Revision is the run row's CAS revision, 1 after create.
	Revision int64
	// EventSeq is the sequence number of the run's last event, 0 if none.
	EventSeq int64
	// CreatedAt is when the run was created (store clock).
	CreatedAt time.Time
	// UpdatedAt is when the run row was last written (store clock).
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

// LedgerEntry is the durable record of one tool call. Its JSON encoding
// (snake_case, zero values left out) is the ledger entry of a run's JSON
// view (actoviq.RunInfo); Tenant and RunID are left out, since the run
// names them.
type LedgerEntry struct {
	// Tenant and RunID name the run the call belongs to.
	Tenant string `json:"-"`
	// RunID is the run's id.
	RunID string `json:"-"`
	// CallID is the call's id in the run.
	CallID string `json:"call_id"`
	// Turn is the model turn that asked for the call; Index its position in
	// that turn's response. Together they order the calls of a run.
	Turn int `json:"turn,omitempty"`
	// Index is the call's position in its turn's response.
	Index int `json:"index,omitempty"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect: "read", "idempotent-write" or
	// "side-effect".
	Effect string `json:"effect,omitempty"`
	// State is where the call is in the ledger's state machine.
	State LedgerState `json:"state"`
	// IdempotencyKey is the call's stable key, persisted before the first
	// start and the same on every attempt.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Attempt counts started executions; 0 until the first start.
	Attempt int `json:"attempt,omitempty"`
	// ArgsDigest is the digest of the unredacted arguments.
	ArgsDigest string `json:"args_digest,omitempty"`
	// Args are the call's arguments after redaction.
	Args json.RawMessage `json:"args,omitempty"`
	// Result is the committed tool result (JSON), set in state committed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the persisted runtime error of the last attempt, if any.
	Error json.RawMessage `json:"error,omitempty"`
	// Approval records the approval decision, if one was needed.
	Approval *DecisionRecord `json:"approval,omitempty"`
	// Resolution records how an unknown outcome was settled.
	Resolution *DecisionRecord `json:"resolution,omitempty"`
	// Holder and Epoch identify the worker that last moved the entry.
	Holder string `json:"holder,omitempty"`
	// Epoch is that worker's claim epoch.
	Epoch int64 `json:"epoch,omitempty"`
	// Revision is the entry's CAS revision.
	Revision int64 `json:"revision,omitempty"`
	// CreatedAt and UpdatedAt are the store's times of the first and the
	// latest write.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedAt is the time of the latest write.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// StartedAt is when the last attempt was recorded started; zero until then.
	StartedAt time.Time `json:"started_at,omitzero"`
	// CommittedAt is when the result was committed; zero until then.
	CommittedAt time.Time `json:"committed_at,omitzero"`
}

// DecisionRecord is a recorded decision on a ledger entry: an approval or
// rejection, or the settlement of an unknown outcome.
type DecisionRecord struct {
	// Kind is approve, reject, committed, failed, re-execute or probe.
	Kind string `json:"kind"`
	// By names who decided ("probe:<tool>" or "runtime" when no person did).
	By string `json:"by"`
	// At is when it was recorded.
	At time.Time `json:"at"`
	// Reason is why.
	Reason string `json:"reason,omitempty"`
	// Note is an operator's note, never shown to the model.
	Note string `json:"note,omitempty"`
	// ArgsDigest and PolicyVersion bind an approval to what was approved.
	ArgsDigest string `json:"args_digest,omitempty"`
	// PolicyVersion is the approval policy version the approval binds to.
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
	// Seen is what the decider saw of the call: the rendering of its
	// (redacted) arguments with its digest, the agent version and the
	// time it was shown. Nil for decisions no person made.
	Seen *Seen `json:"seen,omitempty"`
	// Approvers are the distinct people who approved, in order, when an
	// approvals policy asks for more than one; the approval lets the call
	// start once there are Required of them. Each carries what its
	// approver saw.
	Approvers []Signoff `json:"approvers,omitempty"`
	// Required is how many distinct approvers the approvals policy asked
	// for; 0 or 1 means one (By).
	Required int `json:"required,omitempty"`
	// ExpiresAt is when an approval stops being good for a call that has
	// not started; zero means it does not expire.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ExpiredAt is set when the runtime found the approval expired before
	// the call started: it was void, and the call asked again.
	ExpiredAt time.Time `json:"expired_at,omitzero"`
	// Rule and ApproversVersion name the approvals policy rule and version
	// the decision was checked against; empty when no policy was set.
	Rule string `json:"rule,omitempty"`
	// ApproversVersion is the version of the approvals policy.
	ApproversVersion string `json:"approvers_version,omitempty"`
	// WaitingSince is when the call started waiting for this approval;
	// it is kept across partial approvals and an escalation.
	WaitingSince time.Time `json:"waiting_since,omitzero"`
	// EscalatedAt is when the wait for this approval was escalated (the
	// approvals policy's escalate_after passed); zero until then.
	EscalatedAt time.Time `json:"escalated_at,omitzero"`
	// Earlier are the approvals of this call that went void (expired, or
	// a partial approval whose binding no longer held) before this one,
	// oldest first, kept for the record.
	Earlier []DecisionRecord `json:"earlier,omitempty"`
}

// Seen is what a person was shown when deciding.
type Seen struct {
	// Args is the rendering of the call's arguments that was shown
	// (secrets redacted, exactly as stored).
	Args json.RawMessage `json:"args,omitempty"`
	// Digest is "sha256:" and the hex SHA-256 of Args.
	Digest string `json:"digest"`
	// AgentVersion is the digest of the agent definition the run was
	// driven with last.
	AgentVersion string `json:"agent_version,omitempty"`
	// At is when it was shown; the decision's time when the surface did
	// not say.
	At time.Time `json:"at"`
}

// Signoff is one person's approval of a call that needs several.
type Signoff struct {
	// By names the approver.
	By string `json:"by"`
	// At is when the approval was recorded.
	At time.Time `json:"at"`
	// Note is the approver's note (or reason).
	Note string `json:"note,omitempty"`
	// Seen is what the approver saw.
	Seen *Seen `json:"seen,omitempty"`
}

// EventRecord is one run event as stored, in the stable envelope of docs/design.md#events-and-redaction. Seq is assigned
// by the store, gapless per run, starting at 1.
type EventRecord struct {
	// Tenant and RunID name the run.
	Tenant string
	// RunID is the run's id.
	RunID string
	// Seq orders the run's events; assigned by the store.
	Seq int64
	// ID is unique per event.
	ID string
	// ParentRunID is the parent run's id for a child run.
	ParentRunID string
	// TraceID is the run's trace id.
	TraceID string
	// SpanID is the run's span, or one call's span in it.
	SpanID string
	// Type is the event type, such as "tool.started".
	Type string
	// Time is the runtime's clock at the event.
	Time time.Time
	// Data is the redacted payload JSON.
	Data json.RawMessage
}

// Claim is a lease on a key (usually "run:<id>") with an epoch that serves as
// a fencing token. Every acquisition by a new holder increments the epoch.
type Claim struct {
	// Tenant scopes the claim.
	Tenant string
	// Key is what is claimed, such as "run:<id>".
	Key string
	// Holder names the process that holds it.
	Holder string
	// Epoch is the fencing token: it grows with every new holder.
	Epoch int64
	// ExpiresAt is when the lease ends without a heartbeat.
	ExpiresAt time.Time
	// HeartbeatAt is the holder's last heartbeat.
	HeartbeatAt time.Time
}

// Fence names the claim a write is made under. The write succeeds only if
// the claim still has this holder and epoch, and that holder has not
// released it: a holder that gave its claim up ([Store.ClaimRelease],
// [RunWriteParams.Release]) writes nothing more under it, and a takeover
// gives the claim a larger epoch. Expiry alone does not fence: until
// another holder takes the claim, no write under a newer epoch can exist,
// and a holder whose heartbeat came late has given nothing up (its renew
// extends the claim again).
type Fence struct {
	// Key is the claim's key.
	Key string
	// Holder is the holder the write is made by.
	Holder string
	// Epoch is the epoch the holder acquired.
	Epoch int64
}

// SessionEntry is one item of a session journal.
type SessionEntry struct {
	// Seq orders the journal, from 1; it is the session's revision after
	// the entry.
	Seq int64
	// RunID is the run whose append wrote the item.
	RunID string
	// Turn is SessionAppendParams.Turn of the append that wrote the item
	// (0 for items appended without one).
	Turn int
	// Item is the transcript item's JSON.
	Item json.RawMessage
}

// SessionState is a session as loaded: the latest snapshot and the journal
// entries after it.
type SessionState struct {
	// Tenant scopes the session.
	Tenant string
	// SessionID is the session's id.
	SessionID string
	// Revision is the revision loaded: the seq of the last journal entry,
	// or [SessionLoadParams.AsOf]; 0 for a new session.
	Revision int64
	// SnapshotRevision is the revision the snapshot covers (0: none).
	SnapshotRevision int64
	// Snapshot is the compacted history up to SnapshotRevision (JSON).
	Snapshot json.RawMessage
	// Entries are the journal entries with Seq > SnapshotRevision, up to
	// Revision; with [SessionLoadParams.Last], the last ones only.
	Entries []SessionEntry
}

// OnceRecord is the durable result of a once.Do key.
type OnceRecord struct {
	// Tenant scopes the key.
	Tenant string
	// Key is the caller's dedupe key.
	Key string
	// Value is the recorded result (JSON).
	Value json.RawMessage
	// CreatedAt is when the result was recorded.
	CreatedAt time.Time
}
