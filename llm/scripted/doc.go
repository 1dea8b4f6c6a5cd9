// Package scripted is a deterministic [llm.Provider] driven by a script of
// model turns. The demo, the examples and the tests use it.
//
// It keeps no state between calls: the turn it answers is the number of
// assistant turns already in the request's transcript (a maximal run of
// consecutive assistant items counts as one). A run resumed in a fresh
// process therefore gets the same answer the crashed process would have.
//
// It fails loudly, with an error wrapping [llm.ErrDanglingToolCall], when a
// request carries a tool call without its result: no provider must ever
// receive such a transcript.
package scripted
