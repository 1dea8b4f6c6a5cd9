package tool

import "context"

type ctxKey int

const (
	keyIdempotency ctxKey = iota
	keyAttempt
	keyRecorder
	keyAnswer
)

// WithIdempotencyKey returns a context carrying the call's idempotency key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyIdempotency, key)
}

// IdempotencyKey returns the idempotency key of the running call, or "" when
// there is none. The key is the same on every attempt of one logical call;
// tools hand it to the systems they call (for HTTP, as the Idempotency-Key
// header) so those systems can dedupe.
//
// The actoviq runtime gives a new call the key "<runID>:<callID>" in the
// tenant "default" and "<tenant>/<runID>:<callID>" in any other; run ids and
// call ids never contain ':' or '/', so two logical calls never share a key.
// The key is persisted with the call before it starts and never recomputed:
// a call recorded by an earlier build keeps the key that build gave it.
// Treat it as an opaque string of at most a few hundred bytes.
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(keyIdempotency).(string)
	return k
}

// WithAttempt returns a context carrying the call's attempt number.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, keyAttempt, n)
}

// Attempt returns the attempt number of the running call, starting at 1, or
// 0 when none is set. A number above 1 means an operator chose to re-execute
// a call whose earlier attempt may have taken effect.
func Attempt(ctx context.Context) int {
	n, _ := ctx.Value(keyAttempt).(int)
	return n
}
