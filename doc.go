// Package actoviq runs LLM agents whose tool calls have real consequences.
//
// Every tool call goes through a durable pending-tool ledger that is written
// before the tool runs. A call of a side-effect tool whose outcome is unknown
// (the process died while it ran, its transport failed) is never run again
// on the runtime's own initiative: the run stops with a reconciliation
// interruption until a person, or a probe written by the tool's owner,
// records what happened.
package actoviq
