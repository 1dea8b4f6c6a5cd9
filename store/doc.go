// Package store is the persistence SPI of actoviq: the interfaces every
// backend implements, their parameter structs, and the error vocabulary.
//
// Every key is scoped by a tenant: identical ids in two tenants are two
// unrelated records. Every durable state change is a revision
// compare-and-swap. A writer states the revision it read; when the stored
// revision differs the write changes nothing and returns a [*ConflictError]
// that matches [ErrConflict] and carries both revisions. There is no
// last-writer-wins path anywhere, also not across processes.
//
// A worker that drives a run holds a [Claim] with an epoch (a fencing token).
// Writes made on its behalf carry a [Fence]; when another holder has taken the
// claim over since, or the worker released it, the write changes nothing and
// returns a [*FencedError] (matching [ErrFenced]).
//
// A write carries its own change, not the run's history. A run's state is
// a small checkpoint, replaced by each run write, and a log of items that
// writes only append to ([RunUpdate.Append], [Run.Log]): each item is
// stored once, and backends compact old log records together off the
// write path. A ledger transition names its event ([LedgerWrite.Event])
// and the two are one stored record: [Store.LedgerGet] reads the entry
// from the latest one, [Store.EventList] lists the event with the others.
//
// Parameters are checked before anything is stored, by every backend
// alike: a bad one is an [*InvalidError] (matching [ErrInvalid]) naming
// the field. Every JSON field must be valid JSON in UTF-8 (json.Valid
// accepts other bytes inside strings; PostgreSQL's text refuses them, so
// every backend does), and so must ids, keys, holders, tool names and
// event types (storepg also maps the server's refusal of any other text
// that is not UTF-8 to an [*InvalidError]). A NUL is stored as the escape \u0000: JSON is kept
// as text, never jsonb.
//
// A call that lost to lock contention (SQLite's write lock held by another
// process past the busy timeout, a PostgreSQL serialization failure) and
// wrote nothing is a [*BusyError] (matching [ErrBusy]): the same call may
// be made again as it is. An outcome that is not known (a connection lost
// during COMMIT) is never reported so. This is the contract of the
// [Store] methods, each its own transaction. The OnceTx functions of
// storesqlite and storepg run in the caller's transaction instead: their
// documentation says what each error means for it (storesqlite never
// returns a BusyError once fn ran; PostgreSQL aborts the transaction at
// any error, which is then rolled back and made again whole).
//
// A row that cannot be decoded is reported as a [*DataError] (matching
// [ErrData]) naming the record; it never panics and never hides other rows.
//
// Backends: storemem (in memory), storesqlite (embedded default) and storepg
// (PostgreSQL). storetest holds the conformance suite all of them pass.
package store
