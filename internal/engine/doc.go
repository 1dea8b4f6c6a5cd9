// Package engine is the run loop behind the public actoviq API: checkpoint,
// model turn, ledger writes, tool dispatch, recovery rules, interruptions.
//
// It sees interfaces only (llm.Provider, tool.Tool, store.Store). Each model
// response is committed to the checkpoint, together with a `prepared`
// ledger entry for each tool call it asks for, before anything runs. A call
// then costs two more synchronous writes: `started` (returned before the
// tool is invoked) and `committed` (the result; the transcript is the
// checkpoint plus the committed results of the pending turn, so this one
// write is also the transcript append). On resume the recovery table of
// SPEC §4 is applied to whatever the ledger holds before any new work.
//
// Every write is a revision compare-and-swap fenced by the run's claim, so a
// worker that lost its lease cannot commit anything.
package engine
