package actoviq

import (
	"context"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/handoff"
)

// writeCtx is context.WithTimeout(context.WithoutCancel(parent), d) for
// one store write, made lazily: the timer and the cancelable context
// behind it exist only once something asks for Done, or for a value the
// parent does not hold (a derived context looking for its parent's
// cancellation does). Deadline and Err need neither. A store that only
// checks Err (the memory store) costs no timer per write; one that waits
// on Done gets exactly what WithTimeout gives.
type writeCtx struct {
	parent   context.Context // without the caller's cancellation
	deadline time.Time
	// handoff is the write params the engine hands over to the store
	// (internal/handoff), answered for handoff.Key.
	handoff any

	mu       sync.Mutex
	real     context.Context // context.WithDeadline(parent, deadline), once made
	stop     context.CancelFunc
	canceled bool // cancel ran before real was made
}

// newWriteCtx returns the context and its cancel function, which, as
// WithTimeout's, must be called when the write is done.
func newWriteCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	c := &writeCtx{parent: context.WithoutCancel(ctx), deadline: time.Now().Add(timeout)}
	return c, c.cancel
}

// handingOver is newWriteCtx for a write that hands p's values over to
// the store (internal/handoff), over a parent already without the
// caller's cancellation (drive.uncancelled), its deadline timeout after
// now (a reading of the wall clock the caller took). Its cancel method
// must be called when the write is done.
func handingOver(uncancelled context.Context, now time.Time, timeout time.Duration, p any) *writeCtx {
	return &writeCtx{parent: uncancelled, deadline: now.Add(timeout), handoff: p}
}

// materialize makes the real context; c.mu is held.
func (c *writeCtx) materialize() context.Context {
	if c.real == nil {
		c.real, c.stop = context.WithDeadline(c.parent, c.deadline)
		if c.canceled {
			c.stop()
		}
	}
	return c.real
}

func (c *writeCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canceled = true
	if c.stop != nil {
		c.stop()
	}
}

// Deadline implements context.Context.
func (c *writeCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *writeCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.materialize().Done()
}

// Err implements context.Context.
func (c *writeCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.real != nil:
		return c.real.Err()
	case c.canceled:
		return context.Canceled
	case !time.Now().Before(c.deadline):
		return c.materialize().Err() // expired: the real context says so
	}
	return nil
}

// Value implements context.Context. A key the parent holds is the
// parent's value, as for WithDeadline; any other lookup is answered by
// the real context (context's own lookup of a cancelable parent is one).
func (c *writeCtx) Value(key any) any {
	if key == handoff.Key {
		return c.handoff
	}
	if v := c.parent.Value(key); v != nil {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.materialize().Value(key)
}

// String names the context as WithTimeout's does, roughly.
func (c *writeCtx) String() string {
	return "actoviq.writeCtx(deadline " + c.deadline.String() + ")"
}
