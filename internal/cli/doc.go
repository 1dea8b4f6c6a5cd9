// Package cli implements the actoviq command: run agents, read runs,
// record decisions, resume, and a demo that tells the whole story.
//
// Commands take injected stdout and stderr so they run in-process in tests.
// They use the root package's public API only, plus the concrete stores,
// providers and MCP tool source they wire together.
//
// `actoviq mcp login|logout|list` manage MCP servers' OAuth tokens, kept in
// a 0600 file under the user's config dir ($ACTOVIQ_MCP_TOKENS overrides),
// never in the run store; a run uses and refreshes them but never signs in.
// An MCP server's request for input (elicitation) is asked on the terminal,
// and declined, with a message, when there is none.
//
// Every command that opens a store reads the approvals policy from
// --approvals FILE or $ACTOVIQ_APPROVALS (package approvals): approve,
// reject and resolve are checked against it and a refused decision exits 2
// saying why; `actoviq audit export` writes the audit trail of runs or of a
// time window as JSON lines.
//
// Exit codes are the same for every command that drives a run: 0 completed,
// 3 interrupted (it needs a decision), 1 failed or cancelled, 2 a usage or
// configuration error (which leaves the store untouched), 4 another live
// process drives the run, 5 a signal stopped the command before the run
// ended (the run is resumable).
package cli
