// Package cli implements the actoviq command: run agents, read runs,
// record decisions, resume, and a demo that tells the whole story.
//
// Commands take injected stdout and stderr so they run in-process in tests.
// They use the root package's public API only, plus the concrete stores,
// providers and MCP tool source they wire together.
//
// Exit codes are the same for every command that drives a run: 0 completed,
// 3 interrupted (it needs a decision), 1 failed or cancelled, 2 a usage or
// configuration error (which leaves the store untouched).
package cli
