// Command campaign is the crash campaign of scripts/crash-campaign: it
// SIGKILLs real processes at random instants while they drive agent runs,
// resumes every run in new processes until it ends, and then counts what
// the durability rules of docs/design.md#the-ledger and #recovery forbid.
//
//	go run ./internal/crashtest/campaign -n 2000 -seed 1 -store all
//
// The program re-executes itself (-child) for every drive. A child opens
// the store, builds the scenario's agents (scripted models, tools that
// append each invocation to a fsynced log, an MCP stdio server that is
// this binary again with -mcp-server), and runs or resumes the scenario's
// runs. Each drive is armed with one kill, drawn from the campaign's seed:
// either a store write (the child counts its writes and SIGKILLs itself
// just before or just after the chosen one returns: the instant is uniform
// over the run's writes) or a wall-clock instant (the parent SIGKILLs the
// child at a time drawn uniformly over the drive's measured duration). The
// first drive of a run is always armed; each resume is armed with
// probability 1/2, so runs see one or more kills and one or more resumes.
// When runs stop for a decision, the parent acts as an operator who looks
// at the tools' own logs: it approves, records committed when the effect is
// in the log and asks for a re-execution when it is not.
//
// After each episode the checker reads the store, the tools' logs and the
// log of every request the scripted model received, and counts:
//
//   - dup_effects: executions of a call beyond 1 + the re-execute
//     decisions recorded for it, or two executions of one attempt;
//   - lost: a committed result seen once and later gone or changed, or
//     missing from the final transcript;
//   - dup_items: a tool call or result twice in a transcript, or an item
//     twice in a session journal;
//   - unanswered: a request to the model holding a tool call without its
//     result;
//   - unexplained: a run that did not end completed, or ended with a
//     status that does not say why;
//   - key_changes: an idempotency key that differs between observations
//     or attempts of one call, or is not <runID>:<callID>;
//   - incomplete: a run that did not end completed within 30 drives;
//   - errors: a drive that returned an error instead of a status;
//   - cancel_lost (scenario cancel): the coordinator's Runtime.Cancel, made
//     from its own process while a child drives the run, returned nil but
//     the run did not end cancelled, or a call of it started after that;
//   - downgrade (scenario takeover): a model request of a run by agent
//     version 1 after version 2 took the run over, under worker pools that
//     have both versions registered.
//
// Scenario readchild (a parent whose child agent only reads; a drive's
// runtime may also be closed at a random instant, a shutdown rather than a
// kill) counts as lost a parent's call answered with anything but its
// child's own answer.
//
// Scenario window (four runs of one session whose session windows, a few
// items, cut it) counts as lost a completed run whose own items are not
// exactly the items the session holds for it, whose session part is not
// the window of the session as of its revision, or whose
// RunInfo.SessionOmitted does not count what the window left out.
//
// A decision refused with ErrDecision is counted (refused), not a
// violation: on PostgreSQL a killed drive's last statement can still
// commit after the operator read the run, and the runtime reads the truth
// again. Every other count must be 0. The program prints a table per store and
// scenario and exits 1 on any violation, naming the seed and scenario to
// replay. Kills at a write are reproducible from the seed; kills at a
// wall-clock instant depend on the machine's timing.
package main
