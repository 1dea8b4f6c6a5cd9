package actoviq

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// review10b: the process-wide deadline watch of write contexts.

// Many contexts at once, deadlines 1-40 ms in random order (each earlier
// or later than the one the watch is armed for), some cancelled before,
// some watched by AfterFunc only, some never asked for Done: every
// watched one's Done closes at or after its deadline and not long after,
// each with the error WithTimeout's would have, and the watch holds none
// of them afterwards (it does not grow with the writes it saw).
func TestReview10bWatchManyDeadlines(t *testing.T) {
	const n = 2000
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var late time.Duration
	errs := make(chan string, n)
	mine := make(map[*writeCtx]bool, n)
	for i := 0; i < n; i++ {
		d := time.Duration(1+rng.Intn(40)) * time.Millisecond
		kind := rng.Intn(4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := handingOver(context.Background(), time.Now(), d, nil)
			mu.Lock()
			mine[c] = true
			mu.Unlock()
			dl, _ := c.Deadline()
			switch kind {
			case 0: // cancelled before the deadline
				done := c.Done()
				c.cancel()
				<-done
				if err := c.Err(); err != context.Canceled && (err != context.DeadlineExceeded || time.Now().Before(dl)) {
					errs <- "cancelled: " + errString(err)
				}
				return
			case 1: // AfterFunc only
				ran := make(chan time.Time, 1)
				c.AfterFunc(func() { ran <- time.Now() })
				at := <-ran
				if at.Before(dl) {
					errs <- "AfterFunc ran before the deadline"
				}
				mu.Lock()
				late = max(late, at.Sub(dl))
				mu.Unlock()
			case 2: // never asked for Done
				time.Sleep(d)
				if c.Err() != context.DeadlineExceeded {
					errs <- "never watched: Err " + errString(c.Err())
				}
			default:
				<-c.Done()
				at := time.Now()
				if at.Before(dl) {
					errs <- "Done before the deadline"
				}
				mu.Lock()
				late = max(late, at.Sub(dl))
				mu.Unlock()
			}
			if c.Err() != context.DeadlineExceeded {
				errs <- "past the deadline: Err " + errString(c.Err())
			}
			c.cancel() // after the end: nothing
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	t.Logf("latest end after a deadline: %v", late)
	if late > 2*time.Second {
		t.Errorf("a watched context ended %v after its deadline", late)
	}
	// (Other tests' write contexts may be in it meanwhile.)
	held := 0
	expiry.mu.Lock()
	for c := expiry.head; c != nil; c = c.next {
		if mine[c] {
			held++
		}
	}
	expiry.mu.Unlock()
	if held > 0 {
		t.Errorf("the watch still holds %d of the contexts after all ended", held)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// AfterFunc's stop answers as context.AfterFunc's does: true when it kept
// f from running (f never runs then), false once f ran or is running,
// and false again when called a second time.
func TestReview10bAfterFuncStopAsContexts(t *testing.T) {
	type mk func() (context.Context, func())
	makers := map[string]mk{
		"WithTimeout": func() (context.Context, func()) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		},
		"writeCtx": func() (context.Context, func()) {
			c := handingOver(context.Background(), time.Now(), 20*time.Millisecond, nil)
			return c, c.cancel
		},
	}
	type answers struct{ stopBefore, stopAgain, ranStopped, stopAfter, ranAfter, stopOnEnded bool }
	got := map[string]answers{}
	for name, m := range makers {
		var a answers
		// Stopped before the end.
		ctx, cancel := m()
		ran := make(chan struct{}, 1)
		stop := context.AfterFunc(ctx, func() { ran <- struct{}{} })
		a.stopBefore = stop()
		a.stopAgain = stop()
		cancel()
		select {
		case <-ran:
			a.ranStopped = true
		case <-time.After(50 * time.Millisecond):
		}
		// Stopped after the deadline ran it.
		ctx, cancel = m()
		stop = context.AfterFunc(ctx, func() { ran <- struct{}{} })
		select {
		case <-ran:
			a.ranAfter = true
		case <-time.After(5 * time.Second):
		}
		a.stopAfter = stop()
		cancel()
		// Registered on an ended context.
		ctx, cancel = m()
		cancel()
		stop = context.AfterFunc(ctx, func() { ran <- struct{}{} })
		<-ran
		a.stopOnEnded = stop()
		got[name] = a
	}
	if got["writeCtx"] != got["WithTimeout"] {
		t.Errorf("context.AfterFunc's answers on a writeCtx %+v, on WithTimeout's %+v", got["writeCtx"], got["WithTimeout"])
	}
	// And the method itself, as the context package calls it.
	c := handingOver(context.Background(), time.Now(), time.Hour, nil)
	n := 0
	stop := c.AfterFunc(func() { n++ })
	if !stop() || stop() {
		t.Error("writeCtx.AfterFunc's stop: want true then false")
	}
	stop2 := c.AfterFunc(func() { n++ })
	c.cancel()
	if n != 1 || stop2() {
		t.Errorf("after cancel: ran %d times (want 1), stop answered true", n)
	}
}
