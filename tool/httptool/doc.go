// Package httptool is for tools that call an HTTP API: a payment provider,
// a mail service, a ticketing system. It sends the call's idempotency key
// on the wire and says, in the ledger's words, what each answer means.
//
// A [Client] sends a request once, with [tool.IdempotencyKey] of the
// running call in the Idempotency-Key header ([Config.KeyHeader]): the key
// the runtime persisted before the call started and keeps on every
// attempt, never a key the model wrote (a request that already sets the
// header differently is not sent). [NewTool] builds a typed tool around
// one request.
//
// # What an answer means
//
//	answer                                       ledger                      error
//	2xx                                          committed                   none (*Response)
//	2xx with Idempotent-Replayed: true           committed, marked replayed  none (Response.Replayed)
//	409 (a request with this key in progress)    outcome unknown             *InProgressError (RetryAfter)
//	422 (this key, a different request)          outcome unknown: a person   *KeyReusedError
//	other 4xx (rejected before acting)           committed as an error       *RejectedError
//	                                             result the model sees
//	a 4xx whose body broke off                   outcome unknown             *UnknownOutcomeError
//	5xx, 1xx, 3xx                                outcome unknown             *UnknownOutcomeError
//	timeout, reset or closed connection after    outcome unknown             *UnknownOutcomeError
//	the connection was made
//	no key, a preset key, no connection          nothing sent: an error      *NotSentError
//	                                             result the model sees
//
// Every outcome-unknown error matches [tool.ErrOutcomeUnknown], so a tool
// that returns it as it is gets the runtime's handling: a side effect is
// never run again on the runtime's own; it waits for a probe or a person.
//
// # Targets that dedupe
//
// "Effectively once" exists only where the target dedupes on the key. A
// tool declares that its target does with [Config.Dedupes]; only then do
// the tools from [NewTool] implement [tool.Reconciler]: recovery sends the
// same request again with the same key, and the target's answer settles
// the call (the probe's evidence says it re-sent, and whether the target
// marked its answer replayed). Without the declaration nothing is ever sent
// twice, which includes turning off a replay Go's own transport makes: it
// re-sends a request carrying an Idempotency-Key header when a reused
// keep-alive connection breaks after the request was written, if it can
// rewind the body. The declaration is the tool owner's claim about the
// target; this package cannot check it.
//
// # The draft and real APIs
//
// It follows draft-ietf-httpapi-idempotency-key-header-07 (October 2025;
// expired, no RFC): the header is Idempotency-Key, its value a Structured
// Field String ([SFString], the default: the key in double quotes), 409
// means a request with the key is still being processed and 422 that the
// key was used with a different payload. Real APIs differ, and Config has
// a field for each difference:
//
//   - Value: Stripe, Zuora, Checkout.com and most others document a bare
//     value ([BareKey]); some take only UUIDs ([UUIDKey], derived from the
//     key, the same every time).
//   - Header name: Checkout.com uses Cko-Idempotency-Key, Qonto
//     X-Qonto-Idempotency-Key, PPRO Request-Idempotency-Key
//     ([Config.KeyHeader]).
//   - Replay mark: Stripe and Whop answer a replay with Idempotent-Replayed:
//     true, PPRO with Request-Idempotency: true; the draft names none
//     ([Config.ReplayedHeader]).
//   - Key reuse: Stripe and Whop answer 400, not 422 ([Config.KeyReused]);
//     Qonto returns the first answer even for a different body.
//   - What is stored: Stripe (API v1) stores the first answer once the
//     endpoint began executing, a 500 included, so asking again returns
//     that 500 (an unknown outcome stays unknown); Checkout.com stores only
//     2xx answers and acts again after a 4xx or 5xx.
//   - How long: Stripe may drop a key after 24 hours, Checkout.com after
//     24 hours, Qonto after 30 minutes, TrueLayer after 6 hours; after
//     that, the same key acts again. A target that dedupes does so only
//     within its window, so the probe re-sends only while the call started
//     less than [Config.KeyWindow] ago (default 24 hours), and otherwise
//     leaves the call to a person.
package httptool
