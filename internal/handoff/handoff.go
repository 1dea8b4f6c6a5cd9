// Package handoff marks a store write whose values the caller hands over
// to the store: the engine builds a write's entries, events and JSON for
// that write alone and never changes them afterwards, so a store that
// keeps values in memory (storemem) may keep them as they are instead of
// copying each. The mark travels in the write's context and names the
// very params it covers; only this module can set it, so a store copies
// whatever any other caller gives it, as before.
package handoff

import "context"

type key struct{}

// Key is the context key under which a context holds the params it hands
// over. A context type of the engine answers it directly (without a
// context.WithValue per write); [With] is the plain way.
var Key any = key{}

// With returns a context that hands p over to the store it is given to.
func With(ctx context.Context, p any) context.Context {
	return context.WithValue(ctx, Key, p)
}

// Given reports whether ctx hands p over: p is the very value (pointer)
// the mark names.
func Given(ctx context.Context, p any) bool {
	return p != nil && ctx.Value(Key) == p
}
