package actoviq

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

type wkey struct{}

// writeCtx behaves as context.WithTimeout(context.WithoutCancel(parent), d).
func TestWriteCtxIsWithTimeoutOfDetached(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), wkey{}, "v"))
	cancelParent() // the caller's cancellation does not reach a write

	ctx, cancel := newWriteCtx(parent, time.Hour)
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err = %v before the deadline", err)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
	if ctx.Value(wkey{}) != "v" {
		t.Fatal("value of the parent lost")
	}
	// A derived context hangs off it and is cancelled with it.
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	select {
	case <-ctx.Done():
		t.Fatal("Done closed before cancel")
	default:
	}
	after := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { close(after) })
	defer stop()
	cancel()
	<-ctx.Done()
	<-child.Done()
	<-after
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v, child %v", ctx.Err(), child.Err())
	}

	// Cancelled before anything asked for Done.
	ctx2, cancel2 := newWriteCtx(parent, time.Hour)
	cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("Err after an early cancel: %v", ctx2.Err())
	}
	<-ctx2.Done()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("Err after Done: %v", ctx2.Err())
	}

	// Past its deadline, with or without Done asked for.
	for _, waitDone := range []bool{false, true} {
		ctx3, cancel3 := newWriteCtx(parent, time.Millisecond)
		if waitDone {
			<-ctx3.Done()
		} else {
			for ctx3.Err() == nil { // the deadline passes by itself
				runtime.Gosched()
			}
		}
		if !errors.Is(ctx3.Err(), context.DeadlineExceeded) {
			t.Fatalf("waitDone=%v: Err = %v", waitDone, ctx3.Err())
		}
		<-ctx3.Done()
		if !errors.Is(context.Cause(ctx3), context.DeadlineExceeded) {
			t.Fatalf("Cause = %v", context.Cause(ctx3))
		}
		cancel3()
		if !errors.Is(ctx3.Err(), context.DeadlineExceeded) {
			t.Fatalf("cancel after expiry changed Err to %v", ctx3.Err())
		}
	}
}
