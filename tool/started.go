package tool

import (
	"context"
	"time"
)

type startedKey struct{}

// WithCallStarted returns a context carrying the time the call's ledger
// entry says its last attempt started. The runtime sets it on the context
// of a probe ([Reconciler]).
func WithCallStarted(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, startedKey{}, t)
}

// CallStarted returns the time the call being probed last started, as its
// ledger entry records it, or the zero time when it is not known. A probe
// that sends the call again to a target that dedupes only for a while (a
// key kept 24 hours) uses it to refuse once that window may have passed.
func CallStarted(ctx context.Context) time.Time {
	t, _ := ctx.Value(startedKey{}).(time.Time)
	return t
}
