package tool

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

type ckey struct{}

// TestCallCtxIsWithTimeout: a call's lazy context answers as
// WithAttempt(WithIdempotencyKey(WithTimeout(parent, d))) does: values,
// deadline (its own or the parent's, if earlier), Err and Done before and
// after cancel, expiry and the parent's end, derived contexts and
// AfterFunc, Cause.
func TestCallCtxIsWithTimeout(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ckey{}, "v"))
	defer cancelParent()

	c := newCallCtx(parent, time.Hour, "k1", 2)
	if err := c.Err(); err != nil {
		t.Fatalf("Err = %v before the deadline", err)
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
	if IdempotencyKey(c) != "k1" || Attempt(c) != 2 {
		t.Fatalf("values: %q %d", IdempotencyKey(c), Attempt(c))
	}
	if c.real != nil {
		t.Fatal("made the real context before anything asked for it")
	}
	if c.Value(ckey{}) != "v" {
		t.Fatal("value of the parent lost")
	}
	// A derived context hangs off it and is cancelled with it.
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	select {
	case <-c.Done():
		t.Fatal("Done closed before cancel")
	default:
	}
	after := make(chan struct{})
	stop := context.AfterFunc(c, func() { close(after) })
	defer stop()
	c.cancel()
	<-c.Done()
	<-child.Done()
	<-after
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v, child %v", c.Err(), child.Err())
	}

	// Cancelled before anything asked for Done.
	c2 := newCallCtx(parent, time.Hour, "k", 1)
	c2.cancel()
	if !errors.Is(c2.Err(), context.Canceled) {
		t.Fatalf("Err after an early cancel: %v", c2.Err())
	}
	<-c2.Done()

	// Past its deadline, with or without Done asked for, or expired by
	// the runner.
	for _, how := range []string{"err", "done", "expire"} {
		c3 := newCallCtx(parent, time.Millisecond, "k", 1)
		switch how {
		case "done":
			<-c3.Done()
		case "expire":
			time.Sleep(time.Until(c3.deadline)) // the runner's timer
			c3.expire()
		default:
			for c3.Err() == nil { // the deadline passes by itself
				runtime.Gosched()
			}
		}
		if !errors.Is(c3.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(c3), context.DeadlineExceeded) {
			t.Fatalf("%s: Err = %v, Cause %v", how, c3.Err(), context.Cause(c3))
		}
		<-c3.Done()
		c3.cancel()
		if !errors.Is(c3.Err(), context.DeadlineExceeded) {
			t.Fatalf("cancel after expiry changed Err to %v", c3.Err())
		}
	}

	// The parent's earlier deadline, and its end.
	short, cancelShort := context.WithTimeout(parent, time.Minute)
	defer cancelShort()
	c4 := newCallCtx(short, time.Hour, "k", 1)
	if d, _ := c4.Deadline(); time.Until(d) > time.Minute {
		t.Fatalf("deadline %v, not the parent's", d)
	}
	c5 := newCallCtx(short, 0, "k", 1) // no timeout of its own
	if d, ok := c5.Deadline(); !ok || time.Until(d) > time.Minute {
		t.Fatalf("no timeout: deadline %v %v", d, ok)
	}
	cancelShort()
	for _, c := range []*callCtx{c4, c5} {
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("parent ended: Err = %v", c.Err())
		}
		<-c.Done()
	}
}
