package tool

import "context"

type ctxKey int

const (
	keyIdempotency ctxKey = iota
	keyAttempt
)

// WithIdempotencyKey returns a context carrying the call's idempotency key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyIdempotency, key)
}

// IdempotencyKey returns the idempotency key of the running call, or "" when
// there is none. The key is the same on every attempt of one logical call;
// tools hand it to the systems they call (for HTTP, as the Idempotency-Key
// header) so those systems can dedupe.
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
