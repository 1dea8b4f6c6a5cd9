package actoviq

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
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

// A write context that is asked for Done starts no runtime timer of its
// own: writes share the watch's one timer (adding a runtime timer per
// write woke a second scheduler thread per write). It allocates its
// channel and nothing else: context.WithDeadline allocated its context,
// its channel and its timer.
func TestWriteCtxDoneWithoutTimer(t *testing.T) {
	parent := context.WithoutCancel(context.Background())
	allocs := testing.AllocsPerRun(200, func() {
		c := handingOver(parent, time.Now(), time.Hour, nil)
		_ = c.Done()
		c.cancel()
	})
	if allocs > 2 {
		t.Fatalf("%v allocations per write context asked for Done, want at most 2 (itself and its channel)", allocs)
	}
	expiry.mu.Lock()
	before := expiry.arms
	expiry.mu.Unlock()
	for range 1000 {
		c := handingOver(parent, time.Now(), time.Hour, nil)
		stop := context.AfterFunc(c, func() { t.Error("AfterFunc ran for a write that was cancelled after stop") })
		_ = c.Done()
		stop()
		c.cancel()
	}
	expiry.mu.Lock()
	arms := expiry.arms - before
	expiry.mu.Unlock()
	if arms > 1 {
		t.Fatalf("the watch's timer was armed %d times for 1000 writes of one timeout, want at most 1", arms)
	}
}

// The watch ends each context at its own deadline, an earlier deadline
// registered after a later one included; AfterFunc's functions and
// derived contexts end with it; Err is never set while Done is open.
func TestWriteCtxWatchDeadlines(t *testing.T) {
	parent := context.Background()
	long, cancelLong := newWriteCtx(parent, time.Hour)
	defer cancelLong()
	_ = long.Done()
	start := time.Now()
	short, cancelShort := newWriteCtx(parent, 30*time.Millisecond)
	defer cancelShort()
	ran := make(chan struct{})
	context.AfterFunc(short, func() { close(ran) })
	child, cancelChild := context.WithCancel(short)
	defer cancelChild()
	stopped, cancelStopped := newWriteCtx(parent, 10*time.Millisecond)
	defer cancelStopped()
	stop := context.AfterFunc(stopped, func() { t.Error("a stopped AfterFunc ran") })
	if !stop() {
		t.Fatal("stop before the deadline reported false")
	}
	<-short.Done()
	if waited := time.Since(start); waited < 25*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("Done closed after %v for a 30ms deadline", waited)
	}
	<-ran
	<-child.Done()
	<-stopped.Done()
	if !errors.Is(short.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) ||
		!errors.Is(stopped.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err: %v, child %v, stopped %v", short.Err(), child.Err(), stopped.Err())
	}
	select {
	case <-long.Done():
		t.Fatal("the hour-long context ended")
	default:
	}
	// A registration after the end runs at once.
	late := make(chan struct{})
	if context.AfterFunc(short, func() { close(late) })() {
		t.Fatal("stop of an AfterFunc registered after the end reported true")
	}
	<-late

	// Err turns non-nil only with Done closed, whoever looks first.
	for range 20 {
		c, cancel := newWriteCtx(parent, time.Millisecond)
		done := c.Done()
		for c.Err() == nil {
			runtime.Gosched()
		}
		select {
		case <-done:
		default:
			t.Fatal("Err set while Done open")
		}
		cancel()
	}
}

// Write contexts made, watched, ended by their deadline or cancelled at
// once from many goroutines: each ends once, with its AfterFunc run
// exactly when it was not stopped in time.
func TestWriteCtxWatchConcurrent(t *testing.T) {
	parent := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []*writeCtx
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				timeout := time.Hour
				if (g+i)%3 == 0 {
					timeout = time.Duration(i%5) * 100 * time.Microsecond
				}
				cc, cancel := newWriteCtx(parent, timeout)
				c := cc.(*writeCtx)
				mu.Lock()
				all = append(all, c)
				mu.Unlock()
				var ran atomic.Int32
				stop := context.AfterFunc(c, func() { ran.Add(1) })
				<-time.After(0)
				if i%2 == 0 {
					_ = c.Done()
				}
				stopped := stop()
				cancel()
				<-c.Done()
				if c.Err() == nil {
					t.Error("Err nil after cancel")
				}
				if stopped {
					time.Sleep(10 * time.Microsecond)
					if ran.Load() != 0 {
						t.Error("a stopped AfterFunc ran")
					}
				}
			}
		}()
	}
	wg.Wait()
	expiry.mu.Lock()
	defer expiry.mu.Unlock()
	for _, c := range all {
		if c.watched {
			t.Fatal("an ended context stayed in the watch")
		}
	}
}
