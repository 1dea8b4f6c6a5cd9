package actoviq

import (
	"context"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/handoff"
)

// writeCtx is context.WithTimeout(context.WithoutCancel(parent), d) for
// one store write, without a runtime timer of its own. Deadline and Err
// need nothing; a Done channel is made only when asked for, and it and
// the functions registered with AfterFunc (context.AfterFunc, a derived
// context's cancellation) are ended at the deadline by one process-wide
// watch (expiry) that all write contexts share, or by cancel.
//
// A store write asks for Done (a pool's acquire, a driver watching the
// statement's context), and context.WithTimeout would then start a
// runtime timer for every write: adding one wakes another thread of the
// scheduler (runtime.wakep: a futex wake, and that thread spins looking
// for work), about as much client CPU as the rest of the write's own
// work on a small machine. The watch keeps one timer, armed for the
// earliest deadline it holds: writes of one timeout register in deadline
// order and end long before it, so it is armed again about once per
// commit timeout, not once per write.
type writeCtx struct {
	parent   context.Context // without the caller's cancellation
	deadline time.Time
	// handoff is the write params the engine hands over to the store
	// (internal/handoff), answered for handoff.Key.
	handoff any

	mu    sync.Mutex
	done  chan struct{} // made on first Done or AfterFunc
	err   error         // why it ended (Canceled, DeadlineExceeded), or nil
	funcs []*afterFunc  // registered by AfterFunc, not yet run or stopped

	// In expiry's list (guarded by expiry.mu): watched while it waits
	// for its deadline.
	watched    bool
	prev, next *writeCtx
}

type afterFunc struct{ f func() }

// closedChan is Done of a context that ended before Done was asked for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

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

func (c *writeCtx) cancel() { c.end(context.Canceled) }

// end ends c with err, unless it has ended: closes Done, runs the
// functions registered with AfterFunc (synchronously, as a context
// cancels its children; context.AfterFunc starts its own goroutine) and
// leaves the watch.
func (c *writeCtx) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	joined := c.done != nil // in the watch (c.done is not closedChan: c had not ended)
	if joined {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	if joined {
		expiry.leave(c)
	}
	for _, a := range funcs {
		a.f()
	}
}

// watchLocked makes Done's channel and puts c in the watch, or ends c when
// its deadline has passed (it reports true then, and c.mu is released);
// c.mu is held.
func (c *writeCtx) watchLocked() (ended bool) {
	if c.done != nil {
		return false
	}
	if c.err != nil { // ended before anyone asked
		c.done = closedChan
		return false
	}
	c.done = make(chan struct{})
	if !time.Now().Before(c.deadline) {
		c.mu.Unlock()
		c.end(context.DeadlineExceeded)
		return true
	}
	expiry.join(c)
	return false
}

// Deadline implements context.Context.
func (c *writeCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *writeCtx) Done() <-chan struct{} {
	c.mu.Lock()
	if c.watchLocked() {
		return c.done // closed by end; never changes once made
	}
	d := c.done
	c.mu.Unlock()
	return d
}

// Err implements context.Context. Past the deadline it ends c (closing
// Done) before it says so: Err is never non-nil while Done is open.
func (c *writeCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil && !time.Now().Before(c.deadline) {
		c.end(context.DeadlineExceeded)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

// AfterFunc arranges for f to run when c ends, and returns a function
// that unregisters it (false when f has run or is running). The context
// package finds it (context.AfterFunc, a context derived from c) instead
// of starting a goroutine that waits on Done. f runs on the goroutine
// that ends c; the context package's own uses only cancel a child or
// start a goroutine.
func (c *writeCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err == nil && c.watchLocked() {
		c.mu.Lock()
	}
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.funcs = append(c.funcs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.funcs {
			if x == a {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Value implements context.Context: the parent's values, and the params
// handed over. It holds no cancelable context of the context package, so
// a context derived from it registers with AfterFunc.
func (c *writeCtx) Value(key any) any {
	if key == handoff.Key {
		return c.handoff
	}
	return c.parent.Value(key)
}

// String names the context as WithTimeout's does, roughly.
func (c *writeCtx) String() string {
	return "actoviq.writeCtx(deadline " + c.deadline.String() + ")"
}

// expiry is the watch of the write contexts waiting for their deadline.
var expiry deadlineWatch

// deadlineWatch ends the write contexts it holds at their deadlines, with
// one timer armed for the earliest deadline it knew when it was armed
// (a context leaving does not move it: the timer finds nothing to end
// and is armed for the next).
type deadlineWatch struct {
	mu         sync.Mutex
	head, tail *writeCtx
	timer      *time.Timer
	armed      bool
	at         time.Time // the deadline the timer is armed for
	arms       int       // times the timer was armed (tests)
}

func (w *deadlineWatch) join(c *writeCtx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.watched, c.prev, c.next = true, w.tail, nil
	if w.tail != nil {
		w.tail.next = c
	} else {
		w.head = c
	}
	w.tail = c
	if !w.armed || c.deadline.Before(w.at) {
		w.armLocked(c.deadline)
	}
}

func (w *deadlineWatch) leave(c *writeCtx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(c)
}

func (w *deadlineWatch) removeLocked(c *writeCtx) {
	if !c.watched {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		w.tail = c.prev
	}
	c.watched, c.prev, c.next = false, nil, nil
}

func (w *deadlineWatch) armLocked(at time.Time) {
	w.armed, w.at = true, at
	w.arms++
	d := time.Until(at)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

// fire ends the contexts whose deadline has passed and arms the timer
// for the earliest of the others.
func (w *deadlineWatch) fire() {
	var ended []*writeCtx
	w.mu.Lock()
	w.armed = false
	now := time.Now()
	var next time.Time
	for c := w.head; c != nil; {
		n := c.next
		if !now.Before(c.deadline) {
			w.removeLocked(c)
			ended = append(ended, c)
		} else if next.IsZero() || c.deadline.Before(next) {
			next = c.deadline
		}
		c = n
	}
	if !next.IsZero() {
		w.armLocked(next)
	}
	w.mu.Unlock()
	for _, c := range ended {
		c.end(context.DeadlineExceeded)
	}
}
