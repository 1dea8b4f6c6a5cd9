package store

import "context"

// Store is the persistence SPI. Methods read noun-then-verb and are sorted.
// All methods are safe for concurrent use.
type Store interface {
	// ClaimAcquire takes or renews a claim.
	ClaimAcquire(ctx context.Context, p *ClaimAcquireParams) (*Claim, error)
	// ClaimGet reads a claim; [ErrNotFound] if it never existed.
	ClaimGet(ctx context.Context, p *ClaimGetParams) (*Claim, error)
	// ClaimList reads several claims in one query: those that exist, by key.
	ClaimList(ctx context.Context, p *ClaimListParams) ([]*Claim, error)
	// ClaimRelease gives a claim up if the fence holds.
	ClaimRelease(ctx context.Context, p *ClaimReleaseParams) error
	// ClaimRenew extends a claim if the fence holds.
	ClaimRenew(ctx context.Context, p *ClaimRenewParams) (*Claim, error)

	// EventList lists a run's events.
	EventList(ctx context.Context, p *EventListParams) ([]*EventRecord, error)

	// LedgerGet reads one ledger entry.
	LedgerGet(ctx context.Context, p *LedgerGetParams) (*LedgerEntry, error)
	// LedgerList lists a run's ledger entries.
	LedgerList(ctx context.Context, p *LedgerListParams) ([]*LedgerEntry, error)

	// OnceGet reads a once record.
	OnceGet(ctx context.Context, p *OnceGetParams) (*OnceRecord, error)
	// OncePut records a once result.
	OncePut(ctx context.Context, p *OncePutParams) (*OnceRecord, error)

	// RunClaimNext claims the oldest queued run.
	RunClaimNext(ctx context.Context, p *RunClaimNextParams) (*Run, *Claim, error)
	// RunCount counts runs by stored status and wait kind, with the
	// filters of [Store.RunList].
	RunCount(ctx context.Context, p *RunCountParams) ([]RunCount, error)
	// RunCreate creates a run.
	RunCreate(ctx context.Context, p *RunCreateParams) (*Run, error)
	// RunGet reads a run.
	RunGet(ctx context.Context, p *RunGetParams) (*Run, error)
	// RunList lists runs. A row that does not decode hides no other: the
	// healthy runs are returned together with a [*DataError] for the first
	// bad one.
	RunList(ctx context.Context, p *RunListParams) ([]*Run, error)
	// RunPrune removes one bounded batch of finished runs (see
	// [RunPruneParams] for what is never removed).
	RunPrune(ctx context.Context, p *RunPruneParams) (*RunPruneResult, error)
	// RunWrite applies one atomic, revision-checked, fenced write to a run.
	RunWrite(ctx context.Context, p *RunWriteParams) (*RunWriteResult, error)

	// SessionAppend appends to a session journal (CAS).
	SessionAppend(ctx context.Context, p *SessionAppendParams) (int64, error)
	// SessionLoad loads a session.
	SessionLoad(ctx context.Context, p *SessionLoadParams) (*SessionState, error)
	// SessionSnapshotPut stores a session snapshot.
	SessionSnapshotPut(ctx context.Context, p *SessionSnapshotPutParams) error

	// Close releases the store's resources.
	Close() error
}
