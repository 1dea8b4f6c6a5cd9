// Package tool defines tools, their declared effects, and the [Runner] that
// executes one tool call at a time.
//
// A [Tool] has a [Spec] (name, JSON Schemas, [Effect], approval and timeout)
// and a Call method. [Func] builds a typed tool from a Go function and derives
// its schemas from the Go types; implementing [Tool] directly is the escape
// hatch.
//
// The [Runner] executes a call once and never retries. Inside that one call
// boundary it resolves the tool, validates the input against the input
// schema, asks the [Policy], refuses to start when the context is already
// cancelled or past its deadline, invokes the tool under the call's deadline
// with the idempotency key and attempt number in the context, and validates
// the output. Every failure is an [*Error] whose Kind says which step failed
// and whose OutcomeUnknown says whether the tool may have acted.
//
// A tool result the model sees ([Result] with IsError) is not a runtime
// error: a tool reports "file not found" as a result, and returns an error
// only when it could not do its job. A tool that cannot tell whether its
// effect happened returns an error wrapping [ErrOutcomeUnknown]; the runtime
// then never re-runs the call on its own.
//
// Tools that call external systems should pass [IdempotencyKey] along (for
// HTTP, as the Idempotency-Key header) so the target can dedupe: that key is
// identical on every attempt of the same logical call. Package httptool
// does this for HTTP APIs and maps their answers (409, 422, timeouts, 5xx)
// to the ledger's outcomes. A tool may also
// implement [Reconciler] to let the runtime ask whether a call whose outcome
// is unknown took effect.
package tool
