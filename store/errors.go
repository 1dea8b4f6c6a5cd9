package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends return typed errors that match these with
// errors.Is.
var (
	// ErrConflict: the revision a writer expected is not the stored one.
	ErrConflict = errors.New("store: revision conflict")
	// ErrNotFound: no such record in this tenant.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a create found a record with the same key.
	ErrExists = errors.New("store: already exists")
	// ErrFenced: the claim named by a write's fence has a newer epoch or
	// another holder.
	ErrFenced = errors.New("store: fenced out")
	// ErrClaimHeld: a live claim is held by another holder.
	ErrClaimHeld = errors.New("store: claim held by another holder")
	// ErrData: a stored row cannot be decoded.
	ErrData = errors.New("store: corrupt data")
	// ErrFull: the database has no room for the write; nothing was written.
	ErrFull = errors.New("store: storage full")
	// ErrInvalid: the parameters of a call are invalid.
	ErrInvalid = errors.New("store: invalid parameters")
	// ErrBusy: the backend could not get the locks a call needs in time
	// (contention with another connection or process) and wrote nothing;
	// the same call may be made again as it is, with the same revisions
	// and fence. See [BusyError].
	ErrBusy = errors.New("store: busy")
)

// ConflictError reports a failed compare-and-swap.
type ConflictError struct {
	// Kind is the record kind: "run", "ledger", "session", ….
	Kind string
	// ID names the record.
	ID string
	// Expected is the revision the writer expected.
	Expected int64
	// Actual is the revision found; 0 when the record does not exist.
	Actual int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: %s %s: revision conflict: expected %d, found %d", e.Kind, e.ID, e.Expected, e.Actual)
}

// Is reports whether target is [ErrConflict].
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// FencedError reports a write whose fence no longer holds.
type FencedError struct {
	// Key is the claim the write was fenced by.
	Key string
	// Holder is the holder named by the write's fence.
	Holder string
	// Epoch is the epoch named by the write's fence.
	Epoch int64
	// CurrentHolder is who holds the claim now.
	CurrentHolder string
	// CurrentEpoch is the claim's epoch now; higher than Epoch after a takeover.
	CurrentEpoch int64
	// Released: the claim still has the fence's holder and epoch, but
	// that holder released it (Store.ClaimRelease, RunWriteParams.Release)
	// and nobody took it since. A holder that gave its claim up writes
	// nothing more under it.
	Released bool
}

func (e *FencedError) Error() string {
	if e.Released {
		return fmt.Sprintf("store: claim %s: fenced out: holder %s released it at epoch %d", e.Key, e.Holder, e.Epoch)
	}
	return fmt.Sprintf("store: claim %s: fenced out: holder %s epoch %d, current holder %s epoch %d",
		e.Key, e.Holder, e.Epoch, e.CurrentHolder, e.CurrentEpoch)
}

// Is reports whether target is [ErrFenced].
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// ClaimHeldError reports a claim that another holder holds.
type ClaimHeldError struct {
	// Key is the claim asked for.
	Key string
	// Holder is who holds it.
	Holder string
	// Epoch is the holder's epoch.
	Epoch int64
	// ExpiresAt is when the holder's lease ends without a heartbeat (RFC 3339).
	ExpiresAt string
}

func (e *ClaimHeldError) Error() string {
	return fmt.Sprintf("store: claim %s is held by %s (epoch %d) until %s", e.Key, e.Holder, e.Epoch, e.ExpiresAt)
}

// Is reports whether target is [ErrClaimHeld].
func (e *ClaimHeldError) Is(target error) bool { return target == ErrClaimHeld }

// DataError reports a record that cannot be decoded.
type DataError struct {
	// Kind is the record kind ("run", "checkpoint", "ledger", "event", …).
	Kind string
	// ID names the record.
	ID string
	// Err is the decoding error.
	Err error
}

func (e *DataError) Error() string {
	return fmt.Sprintf("store: corrupt %s %s: %v", e.Kind, e.ID, e.Err)
}

// Is reports whether target is [ErrData].
func (e *DataError) Is(target error) bool { return target == ErrData }

// Unwrap returns the decoding error.
func (e *DataError) Unwrap() error { return e.Err }

// NotFoundError reports a missing record.
type NotFoundError struct {
	// Kind is the record kind.
	Kind string
	// ID names the record looked for.
	ID string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("store: %s %s not found", e.Kind, e.ID) }

// Is reports whether target is [ErrNotFound].
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ExistsError reports a create that found the key taken.
type ExistsError struct {
	// Kind is the record kind.
	Kind string
	// ID names the record that exists.
	ID string
}

func (e *ExistsError) Error() string { return fmt.Sprintf("store: %s %s already exists", e.Kind, e.ID) }

// Is reports whether target is [ErrExists].
func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// InvalidError reports invalid parameters.
type InvalidError struct {
	// Field names the bad parameter, as Params.Field.
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("store: invalid %s: %s", e.Field, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// FullError wraps a backend's out-of-space error.
type FullError struct {
	// Err is the backend's error.
	Err error
}

func (e *FullError) Error() string { return fmt.Sprintf("store: storage full: %v", e.Err) }

// Is reports whether target is [ErrFull].
func (e *FullError) Is(target error) bool { return target == ErrFull }

// Unwrap returns the backend error.
func (e *FullError) Unwrap() error { return e.Err }

// BusyError reports a call that lost to lock contention and wrote
// nothing: SQLite's write lock held by another connection or process for
// longer than the store's busy timeout, or a PostgreSQL transaction the
// server aborted as a serialization failure, a deadlock victim or a lock
// it could not get, after the store's own retries. A backend returns it
// only where it knows that nothing of the call was stored (the
// transaction never began, or was rolled back): an outcome that is not
// known, such as a connection lost during COMMIT, is never a BusyError.
// Making the same call again is therefore safe; its revisions and fence
// decide, as the first time, whether it may commit.
type BusyError struct {
	// Err is the backend's error.
	Err error
}

func (e *BusyError) Error() string { return fmt.Sprintf("store: busy, nothing written: %v", e.Err) }

// Is reports whether target is [ErrBusy].
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Unwrap returns the backend error.
func (e *BusyError) Unwrap() error { return e.Err }
