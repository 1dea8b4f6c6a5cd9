package tool_test

// Review 5A: the context a tool runs in is made lazily (callCtx); it must
// behave as context.WithTimeout's would, also for a tool that keeps it
// after it returned or that never asks for Done.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

type ctxTool struct {
	timeout time.Duration
	fn      func(ctx context.Context) (tool.Result, error)
}

func (c *ctxTool) Spec() tool.Spec {
	return tool.Spec{Name: "t", Description: "t", Effect: tool.Read, Timeout: c.timeout,
		InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (c *ctxTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) { return c.fn(ctx) }

type r5key struct{}

func runOne(t *testing.T, ctx context.Context, tl *ctxTool) (tool.Result, error) {
	t.Helper()
	r, err := tool.NewRunner([]tool.Tool{tl}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(ctx, &tool.Call{Name: "t", Args: json.RawMessage(`{}`), Key: "run:c1", Attempt: 2})
}

// waitDone fails the test when ch is not closed within a generous bound
// (a guard against a hang, not a timing assertion).
func waitDone(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: never done", what)
	}
}

// A tool that returns and keeps its context (a goroutine of its own, a
// context derived from it, an AfterFunc) sees it end when the call ends,
// cancelled, with the call's values and deadline still there, whether or
// not it asked for Done before returning.
func TestReview5KeptContextEndsWithItsCall(t *testing.T) {
	for _, asked := range []bool{false, true} {
		parent, stop := context.WithCancel(context.WithValue(context.Background(), r5key{}, "v"))
		var kept, derived context.Context
		var dstop context.CancelFunc
		after := make(chan struct{})
		_, err := runOne(t, parent, &ctxTool{timeout: time.Hour, fn: func(ctx context.Context) (tool.Result, error) {
			kept = ctx
			if asked {
				_ = ctx.Done()
				derived, dstop = context.WithTimeout(ctx, 2*time.Hour)
				context.AfterFunc(ctx, func() { close(after) })
			}
			return tool.Result{Content: "ok"}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !asked {
			derived, dstop = context.WithTimeout(kept, 2*time.Hour)
			context.AfterFunc(kept, func() { close(after) })
		}
		waitDone(t, "the kept context", kept.Done())
		waitDone(t, "a context derived from it", derived.Done())
		dstop()
		waitDone(t, "its AfterFunc", after)
		if !errors.Is(kept.Err(), context.Canceled) || !errors.Is(context.Cause(kept), context.Canceled) {
			t.Errorf("asked %v: Err %v, Cause %v, want Canceled", asked, kept.Err(), context.Cause(kept))
		}
		if kept.Value(r5key{}) != "v" || tool.IdempotencyKey(kept) != "run:c1" || tool.Attempt(kept) != 2 {
			t.Errorf("asked %v: values lost: %v %q %d", asked, kept.Value(r5key{}), tool.IdempotencyKey(kept), tool.Attempt(kept))
		}
		if dl, ok := kept.Deadline(); !ok || time.Until(dl) < 30*time.Minute {
			t.Errorf("asked %v: deadline %v %v, want about an hour ahead", asked, dl, ok)
		}
		if parent.Err() != nil {
			t.Errorf("the call's end cancelled its parent")
		}
		stop()
	}
}

// The parent's cancellation, with its cause, reaches a tool that never
// asked for Done (it reads Err, or Cause, only), while it runs and after.
func TestReview5ParentCancelReachesALazyTool(t *testing.T) {
	cause := errors.New("operator stop")
	parent, stop := context.WithCancelCause(context.Background())
	entered, release := make(chan struct{}), make(chan struct{})
	seen := make(chan [2]error, 1)
	go func() {
		<-entered
		stop(cause)
	}()
	_, err := runOne(t, parent, &ctxTool{timeout: time.Hour, fn: func(ctx context.Context) (tool.Result, error) {
		close(entered)
		<-release
		seen <- [2]error{ctx.Err(), context.Cause(ctx)}
		return tool.Result{Content: "late"}, nil
	}})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindCancelled || !te.OutcomeUnknown {
		t.Fatalf("Run after the parent's cancel: %v, want a cancelled call of unknown outcome", err)
	}
	close(release)
	got := <-seen
	if !errors.Is(got[0], context.Canceled) || got[1] != cause {
		t.Fatalf("the tool saw Err %v, Cause %v; want Canceled and the parent's cause", got[0], got[1])
	}
}

// Past its deadline a call's context says DeadlineExceeded to a tool that
// reads only Err, and an AfterFunc registered before the deadline runs.
func TestReview5DeadlineReachesALazyTool(t *testing.T) {
	release := make(chan struct{})
	seen := make(chan error, 1)
	fired := make(chan struct{})
	_, err := runOne(t, context.Background(), &ctxTool{timeout: 20 * time.Millisecond, fn: func(ctx context.Context) (tool.Result, error) {
		context.AfterFunc(ctx, func() { close(fired) })
		<-release
		seen <- ctx.Err()
		return tool.Result{Content: "late"}, nil
	}})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindTimeout || !te.OutcomeUnknown {
		t.Fatalf("Run past the deadline: %v, want a timeout of unknown outcome", err)
	}
	waitDone(t, "AfterFunc at the deadline", fired)
	close(release)
	if got := <-seen; !errors.Is(got, context.DeadlineExceeded) {
		t.Fatalf("the tool saw %v past its deadline", got)
	}
	// A tool that polls Err only, never Done, sees the deadline too (its
	// result may still win the race with the runner's timer, as with
	// WithTimeout).
	res, err := runOne(t, context.Background(), &ctxTool{timeout: 20 * time.Millisecond, fn: func(ctx context.Context) (tool.Result, error) {
		for ctx.Err() == nil {
			time.Sleep(time.Millisecond) // polling, as such a tool does; not synchronisation
		}
		return tool.Result{Content: ctx.Err().Error()}, nil
	}})
	if (err == nil && res.Content != context.DeadlineExceeded.Error()) || (err != nil && (!errors.As(err, &te) || te.Kind != tool.KindTimeout)) {
		t.Fatalf("polling tool: %+v %v, want a timeout or its result saying the deadline passed", res, err)
	}
}
