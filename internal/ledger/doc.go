// Package ledger is the state machine of one tool call in the pending-tool
// ledger (docs/design.md#the-ledger) and the recovery table that says what a resuming
// run does with each entry it finds (docs/design.md#recovery).
//
// It is pure: no I/O, no clock, no store. The engine asks [Next] whether a
// transition is legal before it writes the new state with a revision
// compare-and-swap, and asks [Recover] what to do with an entry it loaded
// after a crash, restart or lease takeover. Keeping both here, as data the
// tests can enumerate, means the rule "a side-effect whose outcome is unknown
// is never run again on the runtime's own initiative" is checked in one
// place instead of being spread through the run loop.
//
// The machine:
//
//	prepared ──ask_approval──> awaiting_approval ──approve──> prepared
//	awaiting_approval ──reject──> committed      (error result; the tool never ran)
//	awaiting_approval ──sign──> awaiting_approval (one approval of several needed)
//	prepared ──skip──> committed                 (error result; the tool never ran)
//	prepared ──start──> started ──commit──> committed
//	started  ──lose──> unknown                   (crash, transport failure, timeout of running work)
//	started/unknown ──settle──> committed        (operator or probe recorded the outcome)
//	started/unknown ──reexecute──> prepared      (explicit decision or recovery policy only)
//
// committed is terminal: no trigger leaves it. started and unknown are the
// states in which the tool may have acted ([MayHaveRun]); the only ways out
// are a recorded outcome (settle) or an explicit new attempt (reexecute),
// which keeps the idempotency key and increments the attempt at the next
// start.
//
// The engine must write started, and see that write return, before it
// invokes the tool. That ordering, not this package, is what makes a crash
// during the tool land in started rather than prepared; the property test in
// this package models it and checks that a side-effect tool then runs at most
// once per explicit re-execute decision, plus the first run. That is "at most
// once per decision", never "exactly once": the external system shares no
// transaction with the ledger.
package ledger
