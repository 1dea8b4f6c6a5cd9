package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// DefaultTenant is the tenant a runtime, a CLI command or [once] uses when
// none is named. Its idempotency keys carry no tenant prefix.
//
// [once]: https://pkg.go.dev/github.com/actoviq/actoviq-go/once
const DefaultTenant = "default"

// ClaimAcquireParams asks for a claim. It succeeds when the claim is free,
// expired, released, or already held by the same holder (which renews it and
// keeps the epoch). Otherwise it returns a [*ClaimHeldError].
type ClaimAcquireParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Key is the claim's key, such as "run:<id>" (see RunClaimKey).
	Key string
	// Holder names the process asking (host, pid, start time).
	Holder string
	// TTL is how long the claim lives without a heartbeat.
	TTL time.Duration
}

// ClaimGetParams reads a claim.
type ClaimGetParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Key is the claim's key, such as "run:<id>" (see RunClaimKey).
	Key string
}

// ClaimReleaseParams gives a claim up; the epoch is kept so the next holder
// gets a larger one. From then on the holder writes nothing under it (see
// [Fence]). Releasing a claim its holder released already changes nothing
// and succeeds, so a release whose outcome was not known may be made again.
type ClaimReleaseParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Fence is the claim as its holder acquired it.
	Fence Fence
	// Remove deletes the claim's row instead of keeping it, expired, with
	// its epoch: the next holder of the key starts again at epoch 1. Only
	// for keys nothing is fenced by: a place in a tree's child budget
	// ([ChildPlaceKey]) given back by a Spawn that wrote no child (when a
	// prune removed the tree meanwhile, no row of it is left), and an
	// [EscalationKey] timer whose run no longer waits (an expired timer
	// would stay due). Any other key is refused with an [*InvalidError].
	Remove bool
}

// ClaimRenewParams extends a claim (heartbeat) if the fence still holds
// (see [Fence]): an expired claim nobody took is extended, a released one
// is not revived ([*FencedError] with Released).
type ClaimRenewParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Fence is the claim as its holder acquired it.
	Fence Fence
	// TTL is how long the claim lives without a heartbeat.
	TTL time.Duration
}

// EventListParams lists a run's events in sequence order.
type EventListParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// RunID names the run.
	RunID string
	// AfterSeq skips events up to and including this sequence number.
	AfterSeq int64
	// Limit bounds the rows returned; 0 means no limit.
	Limit int
}

// LedgerGetParams reads one ledger entry.
type LedgerGetParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// RunID names the run.
	RunID string
	// CallID names the call in the run.
	CallID string
}

// LedgerListParams lists a run's ledger in (Turn, Index) order, or the
// ledgers of several runs in one query (RunIDs: ordered by run id, then
// (Turn, Index)).
type LedgerListParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// RunID names the run.
	RunID string
	// RunIDs, instead of RunID, names several runs (at most
	// [MaxLedgerRuns]): a page of runs reads its ledgers in one round trip.
	RunIDs []string
}

// OnceGetParams reads a once record.
type OnceGetParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Key is the caller's dedupe key.
	Key string
}

// OncePutParams records the first result of a key. A second put for the same
// key returns an [*ExistsError] and leaves the first value.
type OncePutParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Key is the caller's dedupe key.
	Key string
	// Value is the JSON to record.
	Value json.RawMessage
}

// RunClaimNextParams takes the oldest queued run of a tenant, claims it
// (key "run:<id>") and marks it running, in one transaction. Concurrent
// callers never get the same run. It returns [ErrNotFound] when no run
// is queued.
type RunClaimNextParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Holder names the process asking (host, pid, start time).
	Holder string
	// TTL is how long the claim lives without a heartbeat.
	TTL time.Duration
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

// ChildPlaceKey is the claim key of place n of the child budget
// (MaxChildren) of the run tree whose root is run root: a Spawn takes a
// place for its child, held for good. [Store.RunPrune] removes a run's
// places with it.
func ChildPlaceKey(root string, n int) string { return "children:" + root + ":" + strconv.Itoa(n) }

// EscalationKey is the claim key that keeps when the approval waits of
// run runID are due to escalate: its expiry is the time, its holder starts
// with [EscalationHolderPrefix] (so that [ClaimListParams].HolderPrefix
// finds the due ones through an index). The runtime sets it when a run
// stops waiting for an approval whose rule escalates, and removes it when
// the run no longer waits.
func EscalationKey(runID string) string { return "escalate:" + runID }

// EscalationHolderPrefix starts the holder of every [EscalationKey] claim:
// a host prefix no host name has.
const EscalationHolderPrefix = "(escalation):"

// CancelRequestKey is the claim key that records a request to cancel the
// drive of run runID that holds the run's claim at epoch.
// [Store.RunPrune] removes a run's requests with it.
func CancelRequestKey(runID string, epoch int64) string {
	return "cancel:" + runID + ":" + strconv.FormatInt(epoch, 10)
}

// RunOwnsClaim reports whether the claim key belongs to run runID and is
// removed with it by [Store.RunPrune]: the run's own claim
// ([RunClaimKey]), the places of the child budget of the tree it is the
// root of ([ChildPlaceKey]) and the requests to cancel its drives
// ([CancelRequestKey]).
func RunOwnsClaim(key, runID string) bool {
	if key == RunClaimKey(runID) {
		return true
	}
	for _, kind := range []string{"children:", "cancel:"} {
		if n, ok := strings.CutPrefix(key, kind+runID+":"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// RunCreateParams creates a run at revision 1. An existing id returns an
// [*ExistsError] and changes nothing. A run with a ParentID needs its
// parent in the same tenant: without it the create returns a
// [*NotFoundError] of Kind "parent run" and changes nothing. The parent is
// checked in the create's transaction (on PostgreSQL its row is locked
// until the create commits), so a prune that removes the parent either
// comes first, and the create is refused, or sees the child, and keeps the
// parent.
type RunCreateParams struct {
	// Run is the run to create; its Revision is ignored and set to 1, and
	// its Log is the log's first items.
	Run *Run
	// Holder, when not empty, creates the run already claimed by Holder
	// (key [RunClaimKey]) at epoch [CreatedClaimEpoch], for TTL, in the
	// create's transaction: no other process can take the run between its
	// creation and its claim. A claim already recorded under that key (the
	// claims of a run are removed with it, so only a claim taken directly
	// under the key of a run that does not exist can be there) refuses
	// the create with an [*ExistsError] of Kind "claim" and creates
	// nothing. Empty creates the run unclaimed.
	Holder string
	// TTL is how long that claim lives without a heartbeat; it must be
	// positive when Holder is set.
	TTL time.Duration
	// Events are the run's first events, stored with it in the create's
	// transaction and numbered from 1 in order (the run's EventSeq is then
	// their count).
	Events []*EventRecord
}

// CreatedClaimEpoch is the epoch of the claim [Store.RunCreate] takes with
// a run when [RunCreateParams.Holder] is set: the fence of that run's first
// drive, known before the create returns (its first events may name it).
const CreatedClaimEpoch = 1

// RunGetParams reads a run.
type RunGetParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// ID names the run.
	ID string
}

// RunListParams lists a tenant's runs, newest first (CreatedAt, then ID,
// descending) or in the given Order, one page at a time. Every filter is
// applied in the store's query, which reads only the rows of the page (an
// index serves each combination; see the backends' EXPLAIN tests).
type RunListParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// Status keeps only runs in this status; empty means any.
	Status RunStatus
	// Statuses keeps only runs in one of these statuses (together with
	// Status when both are set); empty (and Status empty) means any.
	Statuses []RunStatus
	// ParentID keeps only children of this run; empty means any.
	ParentID string
	// AgentID keeps only runs of this agent; empty means any.
	AgentID string
	// WaitKind keeps only runs with this [Run.WaitKind]; empty means any.
	WaitKind string
	// Claim keeps only runs whose claim is in this state at Now.
	Claim ClaimFilter
	// Now is the time Claim is judged at; zero means the store's clock.
	Now time.Time
	// Order is the order of the list; zero means [RunsNewest].
	Order RunOrder
	// After continues a list: only runs strictly after this cursor in
	// Order are returned (keyset paging: a run created or removed
	// meanwhile shifts no page). Nil starts at the beginning.
	After *RunCursor
	// Summary leaves Run.Checkpoint nil: a list that shows no transcript
	// does not read one.
	Summary bool
	// Limit bounds the rows returned; 0 means no limit.
	Limit int
}

// RunUpdate replaces a run's mutable fields if its revision is still
// ExpectedRevision.
type RunUpdate struct {
	// ExpectedRevision is the run's revision the write is based on (CAS).
	ExpectedRevision int64
	// Status is the run's new status.
	Status RunStatus
	// Checkpoint is the run's new checkpoint (valid JSON); nil stores {}.
	Checkpoint json.RawMessage
	// Append are items added to the end of the run's log (valid JSON
	// each), in order. They are stored once, as one record of this write;
	// nothing already in the log is rewritten.
	Append []json.RawMessage
	// Meta, when nil, keeps the stored value.
	Meta json.RawMessage
	// WaitKind is what the run waits for when Status is interrupted (see
	// [Run.WaitKind]); it is stored as empty with any other status.
	WaitKind string
}

// LedgerWrite creates (ExpectedRevision 0) or replaces a ledger entry.
type LedgerWrite struct {
	// Entry is the entry as it must be stored.
	Entry *LedgerEntry
	// ExpectedRevision is the entry's current revision; 0 creates it.
	ExpectedRevision int64
	// Event is the transition's event. The transition and its event are
	// one stored record (one row), written once: [Store.LedgerGet] reads
	// the entry from the latest such record and [Store.EventList] lists
	// the event with the run's others. Its sequence number follows those
	// of RunWriteParams.Events (see there). Nil stores the entry without
	// an event of its own (an event of RunWriteParams.Events describes
	// it), as a record of its own.
	Event *EventRecord
}

// RunWriteParams is one atomic write to a run: an optional run update,
// ledger writes and events. Either all of it commits or none of it does.
// When Fence is set, the claim must still be held by the fence's holder
// with that epoch (see [Fence]): not taken over, and not released by that
// holder; otherwise the write is a [*FencedError] and changes nothing.
type RunWriteParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// RunID names the run.
	RunID string
	// Fence names the claim the write is made under; nil means unfenced.
	Fence *Fence
	// Run is the run update; nil leaves the run row alone.
	Run *RunUpdate
	// Ledger are the ledger entries to create or replace.
	Ledger []LedgerWrite
	// Events are appended with the next sequence numbers of the run, in
	// order, followed by the Event of each ledger write, in Ledger order.
	Events []*EventRecord
	// Release, with Fence, gives the claim up in the write's transaction,
	// as [Store.ClaimRelease] would after it (the claim expires now, its
	// epoch is kept): a drive's last write ends its claim without a round
	// trip of its own. When the write fails, the claim is left as it was.
	Release bool
}

// AllEvents returns the events of the write in the order they are
// numbered: Events, then the Event of each ledger write.
func (p *RunWriteParams) AllEvents() []*EventRecord {
	n := len(p.Events)
	for _, w := range p.Ledger {
		if w.Event != nil {
			n++
		}
	}
	if n == len(p.Events) {
		return p.Events
	}
	out := make([]*EventRecord, 0, n)
	out = append(out, p.Events...)
	for _, w := range p.Ledger {
		if w.Event != nil {
			out = append(out, w.Event)
		}
	}
	return out
}

// RunWriteResult returns what a [Store.RunWrite] stored, with new revisions
// and assigned event sequence numbers. It is for reading: a backend may
// share its entries, events and their JSON bytes with what it keeps
// (storemem does), so a caller must not change anything it reaches from
// a result in place (copy an entry, then change the copy's fields).
type RunWriteResult struct {
	// Run is the run as stored; nil when the write had no run update.
	Run *Run
	// Ledger are the entries as stored, with their new revisions.
	Ledger []*LedgerEntry
	// Events are the events as stored, with their sequence numbers, in
	// sequence order (see [RunWriteParams.AllEvents]).
	Events []*EventRecord
}

// SessionAppendParams appends items to a session journal if its revision is
// still ExpectedRevision (0 for a new session). When Fence is set, the claim
// must still be held with that epoch, as for [RunWriteParams] (the run's
// claim, so that a worker that lost its run cannot write the run's session
// either).
type SessionAppendParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// SessionID names the session.
	SessionID string
	// ExpectedRevision is the session's revision the append is based on; 0 for a new session.
	ExpectedRevision int64
	// RunID is the run that appends.
	RunID string
	// Turn is the run's model turn that produced the append. With RunID it
	// is stored with every item, so a run that died after its append and
	// before its own completion write recognises the append as its own.
	// Zero means unknown.
	Turn int
	// Items are the transcript items' JSON, in order.
	Items []json.RawMessage
	// Fence names the claim the write is made under; nil means unfenced.
	Fence *Fence
}

// SessionLoadParams loads a session: by default as it is now, from its
// latest snapshot. A session that does not exist loads as empty, at
// revision 0.
//
// AsOf and Last load less, so that a run continuing a long session costs
// what it reads, not the session's length: a run records the revision it
// started from, and reads the session back as of that revision, or only
// its last items.
type SessionLoadParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// SessionID names the session.
	SessionID string
	// AsOf, when above 0, loads the session as it was at that revision:
	// the latest snapshot at or below it and the entries after that
	// snapshot up to it; [SessionState.Revision] is then AsOf. A revision
	// the journal has not reached is an [*InvalidError] (field AsOf).
	// 0 loads the latest revision.
	AsOf int64
	// Last, when above 0, loads only the last Last journal entries up to
	// the revision (all of them when the journal is shorter) and no
	// snapshot: Entries[0].Seq says where they start. The backends read
	// only the rows that hold them, through an index, whatever the
	// session's length. 0 loads everything from the latest snapshot.
	Last int
	// WithSnapshot makes a Last load read the last Last revisions as a
	// load without Last shows them: when the latest snapshot at or below
	// the revision covers one of them (SnapshotRevision > Revision-Last),
	// the snapshot comes too, with only the entries after it (fewer than
	// Last); otherwise the last Last entries, as without it. This is how
	// a window over a compacted session reads (AgentSpec.SessionWindow):
	// never a journal entry a snapshot replaced, whatever the session's
	// length. Without Last it changes nothing.
	WithSnapshot bool
}

// SessionSnapshotPutParams stores a snapshot covering the journal up to
// Revision. Revision must not exceed the journal's; a snapshot at a revision
// that already has one is kept as it is.
type SessionSnapshotPutParams struct {
	// Tenant scopes the operation; every key includes it.
	Tenant string
	// SessionID names the session.
	SessionID string
	// Revision is the journal revision the snapshot covers.
	Revision int64
	// Data is the snapshot (JSON).
	Data json.RawMessage
}
