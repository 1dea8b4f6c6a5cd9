package tool_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// endsOnDone is a context whose Done is closed from the start while its Err
// says nil to the first question (Runner.Run's check before it invokes):
// the runner gives up on the call at once, before the tool's goroutine ran.
type endsOnDone struct {
	context.Context
	asked atomic.Int32
}

func (c *endsOnDone) Done() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (c *endsOnDone) Err() error {
	if c.asked.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// A tool whose goroutine is scheduled after the runner gave up on the call
// (its parent ended, its deadline passed) is not started with its context
// already ended (docs/design.md#effects-and-keys). With one P the tool's goroutine cannot run before
// invoke gives up; without the check in its goroutine the tool was called.
func TestToolNotStartedAfterTheRunnerGaveUp(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var calls atomic.Int32
	_, err := runOne(t, &endsOnDone{Context: context.Background()}, &ctxTool{timeout: time.Hour, fn: func(ctx context.Context) (tool.Result, error) {
		calls.Add(1)
		return tool.Result{Content: "ran"}, nil
	}})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindCancelled {
		t.Fatalf("Run: %v, want a cancelled call", err)
	}
	time.Sleep(100 * time.Millisecond) // the goroutine runs now, if it ever does
	if n := calls.Load(); n != 0 {
		t.Fatalf("the tool was called %d times after the runner gave up on the call", n)
	}
}
