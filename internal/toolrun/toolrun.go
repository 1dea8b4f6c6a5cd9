// Package toolrun lets the engine run a call's tool on the goroutine that
// runs its batch, instead of on a goroutine of its own, without weakening
// what [tool.Runner.Run] promises: the engine's drive waits for the
// batch and, when the call's context ends (its deadline, a cancellation, a
// Close) while the tool runs, takes the batch over at once, records the
// call's outcome as unknown and goes on, as Run would have returned; the
// tool's goroutine, when it returns, finds the call taken and writes
// nothing.
//
// The tool package asks the call's context for a [Host]; the engine puts
// one there for the calls of a batch it runs on a worker goroutine. A tool
// never sees it: the context a tool runs in answers nil for it, so a
// runner a tool uses with that context runs its calls as usual.
//
// It imports no module package.
package toolrun

import (
	"context"
	"errors"
	"time"
)

// Host is the engine's side of a call whose tool runs on the goroutine that
// asked for it. Enter and Leave are called on that goroutine, in pairs, by
// the runner; the goroutine holds the batch (its lock) except between
// them.
type Host interface {
	// Enter is called just before the tool runs. deadline is the call's
	// (zero: none); end ends the call for the drive that takes it over:
	// it ends the tool's context (at its deadline when expired) and
	// returns the error [tool.Runner.Run] returns for a call whose
	// context ended while its tool ran. Enter lets the batch go, to be
	// taken over while the tool runs.
	Enter(deadline time.Time, end func(expired bool) error)
	// Leave is called when the tool returned (or panicked). It takes the
	// batch back and reports whether the call is still the goroutine's:
	// false means the drive took it over, and the runner returns
	// [ErrTakenOver] at once without looking at what the tool returned.
	Leave() bool
}

// ErrTakenOver is what the runner returns when Leave said the call was
// taken over: the goroutine must write nothing and touch nothing of the
// drive's.
var ErrTakenOver = errors.New("toolrun: the call was taken over")

type key struct{}

// Key is the context key of a Host. A tool's context answers nil for it.
var Key any = key{}

// With returns ctx carrying h.
func With(ctx context.Context, h Host) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// From returns the Host ctx carries, or nil.
func From(ctx context.Context) Host {
	h, _ := ctx.Value(key{}).(Host)
	return h
}
