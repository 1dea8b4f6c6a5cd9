// Package storesqlite is the embedded default [store.Store]: one SQLite
// file, through the pure-Go driver modernc.org/sqlite (no cgo).
//
// # Durability
//
// Every connection runs with journal_mode=WAL and synchronous=FULL: a
// write method returns only after its transaction's commit record is in the
// write-ahead log and the log has been fsync'ed, so a committed transition
// (a ledger entry moved to started or committed, a session append, a claim)
// survives a crash of the process and a loss of power. Nothing is ever
// acknowledged from memory alone. The cost is one fsync per write
// transaction; bench_test.go compares a ledger transition with an empty
// transaction on the same file (the floor).
//
// # Concurrency and compare-and-swap
//
// Any number of Stores, in one process or many, may open the same file.
// Every write transaction begins with BEGIN IMMEDIATE (the DSN sets
// _txlock=immediate), which takes SQLite's single write lock before the
// first statement. Every check a write depends on (the fence's holder,
// epoch and held flag, the run's and each ledger entry's revision, a
// session's revision) is made inside that same transaction, by
// conditional UPDATE ... WHERE revision = ? with a row count check, or by
// a read under the lock.
// A stale writer therefore gets a [*store.ConflictError] or
// [*store.FencedError] and changes nothing, also across processes: there
// is no last-writer-wins path. Writers in different processes wait up to
// Config.BusyTimeout for the file lock.
//
// # Group commit
//
// Writers in one Store queue in a commit queue. The writes that arrive
// while one commit is syncing share the next transaction, each in a
// SAVEPOINT of its own, and return after its single fsync: N concurrent
// runs pay about one fsync per batch instead of N (see [Store.Stats]). Each
// write's checks run in that transaction in queue order, exactly as if the
// writes had committed one by one; a write that fails is rolled back to its
// savepoint alone, and a write returns only once the COMMIT that holds it
// is durable. A lone write is a plain transaction, as before. Readers never block writers (WAL); a multi-statement read
// such as SessionLoad runs in one read transaction and sees one snapshot.
// The file must be on a local file system: SQLite's locking (and so the
// guarantees above) does not hold on network file systems.
//
// # Files
//
// [Open] creates a new database file with mode 0600 (owner read and write
// only) before SQLite opens it, whatever the umask; SQLite creates the
// -wal and -shm files beside it with the database file's mode. The files
// hold transcripts and tool arguments. An existing file keeps its mode: if
// other users can read or write the database, its WAL or its SHM file,
// Open says so through [Config.Warn] and goes on.
//
// # Errors
//
// A database or disk that is full yields a [*store.FullError]; the
// transaction is rolled back and the Store works again once there is room.
// A write that could not take the file's write lock within
// Config.BusyTimeout yields a [*store.BusyError] (matching
// [store.ErrBusy]): it wrote nothing, and may be made again as it is.
// A row that does not decode (JSON that is not JSON, an unknown status, a
// row holding several records of one write whose more column does not
// match its checksum, see migrations/0012_event_rows.sql) yields a
// [*store.DataError] naming it, and list calls that meet one fail
// with that error rather than skip it. Context errors are returned wrapped
// (errors.Is works).
//
// # Schema
//
// The schema is a set of numbered migrations embedded in the binary and
// recorded in schema_migrations; Open applies the missing ones in one write
// transaction, so reopening is a no-op and two processes opening a new
// file at once apply them once. Times are INTEGER unix microseconds (UTC),
// JSON is TEXT, and every primary key begins with the tenant.
//
// A write costs its fsync and the pages it puts in the WAL (4 kB each). The
// events table, where every ledger transition is a row, is a rowid table
// whose new rows go at its end, with its key (tenant, run_id, seq) and a
// call's lookup (events_by_call) as indexes: a side-effect call's write
// puts about four pages in the WAL (migrations/0015_events_rowid.sql;
// keyed WITHOUT ROWID, a run's rows went into its place among all runs'
// rows and split a full leaf at most writes: five to seven pages). The
// run's log (run_log, a write's transcript items) is a rowid table too
// (migrations/0016_run_log_rowid.sql). Migrations 0015 and 0016 copy the
// two tables once, on the first Open of a file made by an older version:
// that Open takes time in proportion to what they hold (9 s for 200,000
// events, 107 MB, on a loaded 2-core machine).
//
// # Once records and their window
//
// [Store.OncePut] records a result after the effect it describes has
// happened somewhere else. Between the effect and that record's commit
// there is a window: a crash inside it leaves an effect without a record,
// and only a target that dedupes on the idempotency key makes a retry
// harmless. Nothing here is exactly-once across the store and an external
// system.
//
// [OnceTx] is for effects on tables in this same database file. It runs
// the effect and inserts the record in the caller's transaction, so they
// commit together or not at all: with this variant there is no window.
package storesqlite
