// Package crashtest proves the durability rules of the tool ledger
// (docs/design.md#the-ledger and #recovery) by killing real processes. It holds no production code: everything
// lives in its _test.go files, and this file only documents what they show.
//
// The test binary re-executes itself as a child process (TestCrashChild,
// configured through CRASHTEST_* environment variables). The child builds
// the same agent as the parent — a scripted model that asks for one call
// "c1" of tool "act" and then answers "done" — over a SQLite file or a
// PostgreSQL schema, and is SIGKILLed at one ledger transition of that call:
//
//  1. answer: the write of the model's response is about to be sent
//     (nothing of it stored; with one call that starts at once, that
//     write also stores the call started: drive_fold.go in the root
//     package), and the resume asks the model again;
//  2. started: the started entry is durable, the tool has not run;
//  3. running: the tool appended its effect (fsynced) and has not returned;
//  4. returned: the tool returned, committed is not yet written;
//  5. committed: the result is durable.
//
// The kill points are hooks outside the engine: a store.Store wrapper that
// stops the child after a RunWrite that stored the target state (before
// the write, for point 1), and the
// tool itself for points 3 and 4. The tool appends "<idempotency key>
// <attempt>" to a counter file with O_APPEND and fsync, so the file counts
// the side effects that really happened, across processes.
//
// The parent then resumes the run in a fresh runtime, once the dead child's
// claim has expired, and checks docs/design.md#recovery for every effect and kill point:
// a prepared call runs normally; a started side effect stops the run with a
// reconciliation interruption and is never run again without a decision;
// a started read or idempotent write stops with a recovery interruption,
// or is re-run with the same idempotency key when the agent's
// RecoveryPolicy allows it; a committed call is never run again. Every
// scenario ends completed, with exactly one tool result for the call in the
// transcript, and with at most one side effect unless a re-execute decision
// or the recovery policy asked for another attempt (which reuses the key).
//
// TestCrashMatrixTwoCalls runs a second agent whose one model turn asks for
// two side-effect calls c1 and c2. They run one after the other, so c1's
// committed record is carried in the same store write as c2's started
// record (drive_carry.go in the root package). The child is killed when c1
// is started, when c1's tool returned (its committed record held), just
// before the carried write is sent, just after it is stored, when c2's
// tool returned, and when c2 is committed. The resume stops for
// reconciliation on the call whose tool may have run without its
// committed record stored, runs no effect twice, and keeps every stored
// result.
//
// None of this makes a call happen exactly once: the runtime shares no
// transaction with the world. What the tests show is that the runtime never
// repeats a call on its own when it cannot know the outcome, and that every
// repeat it does make carries the same idempotency key.
//
// The benchmarks measure the durable cost of one side-effect call (the
// started and committed writes) against the floor of two synchronous
// commits on the same database.
package crashtest
