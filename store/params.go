package store

import (
	"encoding/json"
	"time"
)

// ClaimAcquireParams asks for a claim. It succeeds when the claim is free,
// expired, released, or already held by the same holder (which renews it and
// keeps the epoch). Otherwise it returns a [*ClaimHeldError].
type ClaimAcquireParams struct {
	Tenant string
	Key    string
	Holder string
	TTL    time.Duration
}

// ClaimGetParams reads a claim.
type ClaimGetParams struct {
	Tenant string
	Key    string
}

// ClaimReleaseParams gives a claim up; the epoch is kept so the next holder
// gets a larger one.
type ClaimReleaseParams struct {
	Tenant string
	Fence  Fence
}

// ClaimRenewParams extends a claim (heartbeat) if the fence still holds.
type ClaimRenewParams struct {
	Tenant string
	Fence  Fence
	TTL    time.Duration
}

// EventListParams lists a run's events in sequence order.
type EventListParams struct {
	Tenant   string
	RunID    string
	AfterSeq int64
	Limit    int // 0 means no limit
}

// LedgerGetParams reads one ledger entry.
type LedgerGetParams struct {
	Tenant string
	RunID  string
	CallID string
}

// LedgerListParams lists a run's ledger in (Turn, Index) order.
type LedgerListParams struct {
	Tenant string
	RunID  string
}

// OnceGetParams reads a once record.
type OnceGetParams struct {
	Tenant string
	Key    string
}

// OncePutParams records the first result of a key. A second put for the same
// key returns an [*ExistsError] and leaves the first value.
type OncePutParams struct {
	Tenant string
	Key    string
	Value  json.RawMessage
}

// RunClaimNextParams takes the oldest queued run of a tenant, claims it
// (key "run:<id>") and marks it running, in one transaction. Concurrent
// callers never get the same run. It returns [ErrNotFound] when no run
// is queued.
type RunClaimNextParams struct {
	Tenant string
	Holder string
	TTL    time.Duration
	// AgentIDs, when not empty, limits the claim to runs of these agents
	// (the agents a worker can build). Empty means any agent.
	AgentIDs []string
	// Stale also takes a run in status running whose holder is gone: its
	// claim expired or was released, or it has no claim and was last
	// updated at least TTL ago (a run created running whose creator died
	// before claiming it). The run stays running; the claim gets a new
	// epoch, so the previous holder can no longer write. Whoever drives it
	// applies the recovery rules to its ledger: a stale run is resumed from
	// its checkpoint, never replayed.
	Stale bool
}

// RunClaimKey is the claim key of a run.
func RunClaimKey(runID string) string { return "run:" + runID }

// RunCreateParams creates a run at revision 1. An existing id returns an
// [*ExistsError] and changes nothing.
type RunCreateParams struct {
	Run *Run
}

// RunGetParams reads a run.
type RunGetParams struct {
	Tenant string
	ID     string
}

// RunListParams lists a tenant's runs, newest first.
type RunListParams struct {
	Tenant   string
	Status   RunStatus // empty: any
	ParentID string    // empty: any
	Limit    int       // 0 means no limit
}

// RunUpdate replaces a run's mutable fields if its revision is still
// ExpectedRevision.
type RunUpdate struct {
	ExpectedRevision int64
	Status           RunStatus
	Checkpoint       json.RawMessage
	// Meta, when nil, keeps the stored value.
	Meta json.RawMessage
}

// LedgerWrite creates (ExpectedRevision 0) or replaces a ledger entry.
type LedgerWrite struct {
	Entry            *LedgerEntry
	ExpectedRevision int64
}

// RunWriteParams is one atomic write to a run: an optional run update,
// ledger writes and events. Either all of it commits or none of it does.
// When Fence is set, the claim must still be held with that epoch.
type RunWriteParams struct {
	Tenant string
	RunID  string
	Fence  *Fence
	Run    *RunUpdate
	Ledger []LedgerWrite
	Events []*Event
}

// RunWriteResult returns what a [Store.RunWrite] stored, with new revisions
// and assigned event sequence numbers.
type RunWriteResult struct {
	Run    *Run // nil when the write had no run update
	Ledger []*LedgerEntry
	Events []*Event
}

// SessionAppendParams appends items to a session journal if its revision is
// still ExpectedRevision (0 for a new session). When Fence is set, the claim
// must still be held with that epoch (the run's claim, so that a worker that
// lost its run cannot write the run's session either).
type SessionAppendParams struct {
	Tenant           string
	SessionID        string
	ExpectedRevision int64
	RunID            string
	// Turn is the run's model turn that produced the append. With RunID it
	// is stored with every item, so a run that died after its append and
	// before its own completion write recognises the append as its own.
	// Zero means unknown.
	Turn  int
	Items []json.RawMessage
	Fence *Fence
}

// SessionLoadParams loads a session from its latest snapshot. A session
// that does not exist loads as empty, at revision 0.
type SessionLoadParams struct {
	Tenant    string
	SessionID string
}

// SessionSnapshotPutParams stores a snapshot covering the journal up to
// Revision. Revision must not exceed the journal's; a snapshot at a revision
// that already has one is kept as it is.
type SessionSnapshotPutParams struct {
	Tenant    string
	SessionID string
	Revision  int64
	Data      json.RawMessage
}
