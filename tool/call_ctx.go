package tool

import (
	"context"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/toolrun"
)

// callCtx is the context a tool runs in: its parent's values plus the
// call's idempotency key and attempt ([WithIdempotencyKey],
// [WithAttempt]), cancelled with its parent and at the call's deadline,
// as context.WithTimeout would make it. It is made lazily: the
// cancelable context and its timer exist only once the tool asks for
// Done, for a value of its parent, or for Err past the deadline or after
// the parent ended. A tool that asks for none of them (most quick ones)
// costs no timer, no cancelable context and no registration with its
// parent. The runner waits for the tool with a pooled timer of its own
// (invoke) and ends the context (expire, cancel) as WithTimeout would.
type callCtx struct {
	parent   context.Context
	deadline time.Time // zero: none of its own (the parent's, if any)
	key      string
	attempt  int

	mu       sync.Mutex
	real     context.Context // made by materialize
	stop     context.CancelFunc
	canceled bool // cancel ran before real was made
}

// newCallCtx returns the context of one call, with a deadline timeout
// from now (none for timeout <= 0) or the parent's, if earlier.
func newCallCtx(parent context.Context, timeout time.Duration, key string, attempt int) *callCtx {
	c := &callCtx{parent: parent, key: key, attempt: attempt}
	if timeout > 0 {
		c.deadline = time.Now().Add(timeout)
		if pd, ok := parent.Deadline(); ok && pd.Before(c.deadline) {
			c.deadline = pd
		}
	}
	return c
}

// materialize makes the real context; c.mu is held.
func (c *callCtx) materialize() context.Context {
	if c.real == nil {
		if c.deadline.IsZero() {
			c.real, c.stop = context.WithCancel(c.parent)
		} else {
			c.real, c.stop = context.WithDeadline(c.parent, c.deadline)
		}
		if c.canceled {
			c.stop()
		}
	}
	return c.real
}

// cancel ends the context, as WithTimeout's cancel function does, except
// after its parent ended: the parent's own cancellation ends it then, with
// the parent's error and cause. The runner calls cancel as soon as it sees
// the parent's Done, which closes before the parent cancels its children;
// stopping the real context at that instant would give a tool's derived
// contexts a bare context.Canceled instead of the parent's cause (a
// Close's ErrClosed read as the caller's cancellation).
func (c *callCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canceled = true
	if c.stop != nil && c.parent.Err() == nil {
		c.stop()
	}
}

// ended returns the context's error once the runner ended it (cancel,
// expire) or its parent ended; nil otherwise, also past a deadline the
// runner's timer has not yet acted on. It reads no clock.
func (c *callCtx) ended() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.real != nil && c.real.Err() != nil:
		return c.real.Err()
	case c.parent.Err() != nil:
		return c.parent.Err()
	case c.canceled:
		return context.Canceled
	}
	return nil
}

// expire ends the context at its deadline (the runner's timer fired):
// the real context, made now if it was not, is past its deadline.
func (c *callCtx) expire() {
	c.mu.Lock()
	done := c.materialize().Done()
	c.mu.Unlock()
	<-done
}

// Deadline implements context.Context.
func (c *callCtx) Deadline() (time.Time, bool) {
	if c.deadline.IsZero() {
		return c.parent.Deadline()
	}
	return c.deadline, true
}

// Done implements context.Context.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.materialize().Done()
}

// Err implements context.Context.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.real != nil:
		if err := c.real.Err(); err != nil {
			return err
		}
		return c.parent.Err() // the parent ended; its cancellation is on its way to the real context
	case c.parent.Err() != nil:
		return c.materialize().Err() // the parent ended: so did the real context
	case c.canceled:
		return context.Canceled
	case !c.deadline.IsZero() && !time.Now().Before(c.deadline):
		return c.materialize().Err() // expired: the real context says so
	}
	return nil
}

// Value implements context.Context: the call's key and attempt, and any
// other key as the real context answers it (context's own lookup of a
// cancelable parent is one).
func (c *callCtx) Value(key any) any {
	switch key {
	case keyIdempotency:
		return c.key
	case keyAttempt:
		return c.attempt
	case toolrun.Key:
		return nil // the engine's, for the runner that runs this call; never a runner the tool uses
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.materialize().Value(key)
}

// String names the context, roughly as WithTimeout's does.
func (c *callCtx) String() string {
	return "tool.callCtx(" + c.key + ")"
}

// timers are the runner's timers for waiting on a call's deadline,
// reused: Stop leaves nothing in a stopped timer's channel (Go 1.23+).
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}
