// Package storepg is the PostgreSQL backend of [store.Store], for many
// processes and machines sharing one database.
//
// # Layout
//
// Every table lives in one PostgreSQL schema ([Config.Schema], default
// "actoviq"), created on first use; several installations share a database
// by using different schemas. Every primary key starts with the tenant.
// Migrations are embedded, numbered SQL files recorded in
// schema_migrations and applied by [Open] and [New] under a transaction
// advisory lock, so processes starting together migrate a schema once.
//
// JSON (checkpoints, ledger arguments and results, session items) is stored
// as text, not jsonb: jsonb reorders keys, and a checkpoint must come back
// byte for byte. A row that does not decode (invalid JSON, an unknown status
// or state, an unexpected NULL) is reported as a [*store.DataError].
//
// A write's event records are one events row when it has two or more and
// its ledger records are all new entries (a model response with its
// prepared calls): the first record in the row's columns, the others in
// its more column (JSON with a CRC-32C, their calls in more_calls, found
// through an inverted index). See migrations/014_event_rows.sql.
//
// # Concurrency
//
// Every write is a revision compare-and-swap executed by the server
// (UPDATE ... WHERE revision = expected), so a stale writer gets a
// [*store.ConflictError] also when the other writer is another process. A
// fenced [Store.RunWrite] holds a share lock on the claim row for the whole
// transaction: a takeover waits for it, so a fenced write never commits after
// a takeover committed, nor after the holder's own release (the row's held
// flag; migration 019). Claims are leases with an epoch (a fencing token);
// expiry is decided with the configured clock's time, passed as a
// parameter, never the server's now().
//
// A run write is one call of a server-side function (run_write, an
// embedded migration) sent as one autocommit statement: one round trip and
// one commit, with the fence, the revisions and the event numbering all
// checked inside it. Run writes that arrive while [Config.CommitLeaders]
// transactions are in flight share a transaction (group commit): the next
// free one sends them in one pipelined BEGIN ... COMMIT, in run order, and
// if any of them fails the server rolls all of it back and they are sent
// again one by one, each getting the answer it would have had alone.
// Several such transactions run at once, each on its own connection, so
// that the server's work for the writes of a process is not done in one
// backend, one after another. [Store.Stats] counts statements, rows and
// commits.
//
// Transactions run at read committed. A write transaction that the server
// aborts as a serialization failure or deadlock victim (SQLSTATE 40001,
// 40P01) changed nothing, and is run again from the start a few times;
// when it still fails, or a lock could not be had (55P03), the error is a
// [*store.BusyError] (matching [store.ErrBusy]): nothing was written.
// A failure whose outcome is unknown (the connection broke during COMMIT) is
// returned, never retried. A full disk (SQLSTATE 53100) is a
// [*store.FullError].
//
// [Store.OnceTx] records a once key in the caller's own transaction, so the
// record and that transaction's database writes commit together. This does
// not extend to effects outside the database.
package storepg
