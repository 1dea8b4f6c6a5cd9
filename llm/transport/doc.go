// Package transport is the one retrying HTTP client that every provider
// adapter uses, and the Server-Sent Events decoder for their streams.
//
// It sits at the bottom of the module's layering and imports only the
// standard library.
//
// # Retry rules
//
// A call makes at most Config.MaxRetries+1 attempts (default 2 retries, so
// 3 attempts; Retries(0) turns retrying off). An attempt is retried when:
//
//   - the response status is 408, 409, 425, 429 or 500–599;
//   - or http.Client.Do failed before a response header arrived while the
//     context was still live: refused or reset connection, EOF before the
//     header, a temporary DNS or TLS failure, a response-header timeout.
//     A certificate that does not verify and a host that does not exist
//     are final.
//
// A response header "x-should-retry: true" or "false" overrides the status
// rule for statuses of 400 and above. A status below 400 is a success and
// is never retried. Other 4xx statuses are final.
//
// An error after the request body was fully sent and before the response
// header arrived IS retried. The server may already be working on the
// first request, so the provider may run the same inference twice. That is
// a deliberate trade: a duplicate model call costs money, it performs no
// business side effect (tools run above this package, under the tool
// ledger, never here). Callers that need the server to recognise a retry
// set Request.IdempotencyKey: the same Idempotency-Key header is sent on
// every attempt. Whether a duplicate is then dropped depends on the
// server; this package promises at most MaxRetries+1 requests, not that a
// request took effect once.
//
// Every attempt carries X-Actoviq-Retry-Count: the number of retries before
// it ("0" on the first).
//
// # Waiting
//
// After failed attempt n the computed backoff is InitialBackoff·2^(n-1)
// (250ms, 500ms, 1s, …), capped at MaxBackoff (30s), then jittered (by
// default 0–25% is taken off). A server-requested wait — retry-after-ms
// (milliseconds, fractions allowed), else Retry-After (seconds, fractions
// allowed, or an HTTP date measured from Options.Clock) — is used instead when
// it is larger. Invalid, negative and past values are ignored.
//
// A wait is not slept when the server asks for more than MaxBackoff, or
// when it would end after the context deadline (judged by Options.Clock): the
// call fails at once with the last failure, the wait in its Wait field,
// and ErrRetryWaitTooLong or ErrRetryPastDeadline as its Cause. Context
// cancellation interrupts a sleep at once. A failed response body is read
// (at most MaxErrorBody bytes) and closed before the next attempt.
//
// # Results and errors
//
// Client.Do returns the open response for any status below 400 that was
// not retried; the caller closes its body. A final status of 400 or more
// becomes *StatusError (Status, Header, a bounded and scrubbed Body,
// Attempts, Retryable); a failure without a response becomes
// *TransportError. Their Retryable and Status fields are diagnostics: the
// layers above never retry a whole run because of them.
//
// Secrets never appear in an error message or an Attempt: the values of
// Config.Redact and of every request header with a secret name
// (Authorization, Proxy-Authorization, X-Api-Key, Api-Key, Cookie, ...: the
// module's one redactor, internal/redact, decides) are replaced by
// "[REDACTED]", also in response bodies kept for diagnostics.
//
// # Streams
//
// Client.Stream retries only until the first event has been delivered to
// the caller. After that nothing is re-requested: a broken connection ends
// the stream with *llm.StreamInterruptedError (llm.ErrStreamInterrupted), and the
// events already delivered are the partial output the caller keeps as
// evidence. Request.ErrorEvent lets an adapter mark an error event inside
// a 200 stream with the status it stands for; before delivery it is
// retried like that status, after delivery it ends the stream with a
// *StatusError. The iterator closes the response body on every path,
// including when the caller breaks out of the range loop.
//
// Decoder is the SSE parser Stream uses. It bounds memory per line and per
// event (Config.MaxEventSize, default 64 MiB) and fails with
// *EventTooLargeError beyond it.
package transport
