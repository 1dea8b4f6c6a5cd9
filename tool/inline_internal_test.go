package tool

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/internal/toolrun"
)

// host is a toolrun.Host that records what the runner told it and, when
// take is set, takes the call over while the tool runs.
type host struct {
	entered  int
	deadline time.Time
	take     bool
	inTool   bool // take the call over while the tool runs (takeNow, called by the tool), not in Enter
	expired  bool
	ended    error // what end returned
	end      func(expired bool) error
	left     int
}

func (h *host) Enter(deadline time.Time, end func(expired bool) error) {
	h.entered++
	h.deadline = deadline
	h.end = end
	if h.take && !h.inTool {
		h.takeNow()
	}
}

// takeNow takes the call over, as the engine's drive does.
func (h *host) takeNow() {
	if h.expired {
		time.Sleep(time.Until(h.deadline)) // the engine's drive ends a call as expired once its deadline passed
	}
	h.ended = h.end(h.expired)
}

func (h *host) Leave() bool {
	h.left++
	return !h.take
}

type ctxTool struct {
	timeout time.Duration // zero: a minute
	during  func()        // called while the tool runs
	seen    context.Context
	errAt   error // the context's error when the tool returned
}

func (c *ctxTool) Spec() Spec {
	if c.timeout == 0 {
		return Spec{Name: "t", Description: "t", Effect: SideEffect, Timeout: time.Minute}
	}
	return Spec{Name: "t", Description: "t", Effect: SideEffect, Timeout: c.timeout}
}

func (c *ctxTool) Call(ctx context.Context, _ json.RawMessage) (Result, error) {
	c.seen = ctx
	if c.during != nil {
		c.during()
	}
	c.errAt = ctx.Err()
	return Result{Content: "ran"}, nil
}

// A call whose context carries a toolrun.Host runs its tool on the calling
// goroutine between Enter and Leave, with its deadline given to Enter; the
// tool's context does not show the host (a runner the tool uses runs its
// calls as usual).
func TestRunOnTheHostsGoroutine(t *testing.T) {
	tl := &ctxTool{}
	r, err := NewRunner([]Tool{tl}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{}
	before := time.Now()
	res, err := r.Run(toolrun.With(context.Background(), h), &Call{Name: "t", Key: "k"})
	if err != nil || res.Content != "ran" || h.entered != 1 || h.left != 1 {
		t.Fatalf("%+v %v, entered %d left %d", res, err, h.entered, h.left)
	}
	if h.deadline.Before(before.Add(time.Minute)) || h.deadline.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Enter's deadline %v, want a minute from the call", h.deadline)
	}
	if toolrun.From(tl.seen) != nil || IdempotencyKey(tl.seen) != "k" {
		t.Fatalf("the tool's context: host %v, key %q", toolrun.From(tl.seen), IdempotencyKey(tl.seen))
	}
}

// A call the host took over while its tool ran returns ErrTakenOver,
// whatever the tool returned; end, which the host called, ended the
// tool's context and gave the error Run returns at a deadline or a
// cancellation: started, outcome unknown. A call taken over as Enter let
// it go, before its tool was called, does not call the tool (docs/design.md#effects-and-keys: never
// started with an ended context).
func TestRunTakenOverByTheHost(t *testing.T) {
	for _, inTool := range []bool{true, false} {
		for _, expired := range []bool{false, true} {
			tl := &ctxTool{timeout: 10 * time.Millisecond}
			r, err := NewRunner([]Tool{tl}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := &host{take: true, inTool: inTool, expired: expired}
			if inTool {
				tl.during = h.takeNow
			}
			res, err := r.Run(toolrun.With(context.Background(), h), &Call{Name: "t"})
			if !errors.Is(err, toolrun.ErrTakenOver) || res.Content != "" {
				t.Fatalf("in tool %v, expired %v: %+v %v, want ErrTakenOver", inTool, expired, res, err)
			}
			var te *Error
			want := KindCancelled
			if expired {
				want = KindTimeout
			}
			if !errors.As(h.ended, &te) || te.Kind != want || !te.Started || !te.OutcomeUnknown {
				t.Fatalf("in tool %v, expired %v: end returned %v, want %s, started, outcome unknown", inTool, expired, h.ended, want)
			}
			switch {
			case inTool && tl.errAt == nil:
				t.Fatalf("expired %v: the tool's context had not ended when the call was taken over", expired)
			case !inTool && tl.seen != nil:
				t.Fatalf("expired %v: the tool was called after the call was taken over (its context's error %v)", expired, tl.errAt)
			}
		}
	}
}

// A call whose context ended before its tool started does not start, on
// the host's goroutine as on a goroutine of its own.
func TestRunOnTheHostNotStartedOnceEnded(t *testing.T) {
	tl := &ctxTool{}
	r, err := NewRunner([]Tool{tl}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{}
	ctx := &endsOnDoneInternal{Context: toolrun.With(context.Background(), h)}
	_, err = r.Run(ctx, &Call{Name: "t"})
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindCancelled || te.Started || tl.seen != nil || h.entered != 0 {
		t.Fatalf("%v, entered %d, tool ran %v", err, h.entered, tl.seen != nil)
	}
}

// endsOnDoneInternal says nil to Run's first question, then Canceled.
type endsOnDoneInternal struct {
	context.Context
	asked int
}

func (c *endsOnDoneInternal) Err() error {
	c.asked++
	if c.asked == 1 {
		return nil
	}
	return context.Canceled
}

type goexitTool struct{}

func (goexitTool) Spec() Spec { return Spec{Name: "g", Description: "g", Effect: SideEffect} }
func (goexitTool) Call(context.Context, json.RawMessage) (Result, error) {
	runtime.Goexit()
	return Result{}, nil
}

// A tool that ends its goroutine (runtime.Goexit) did not return: its
// outcome is unknown, as a panic's. It used to read as a success with an
// empty result.
func TestToolGoexitIsOutcomeUnknown(t *testing.T) {
	r, err := NewRunner([]Tool{goexitTool{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background(), &Call{Name: "g"})
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindExecution || !te.Started || !te.OutcomeUnknown || !errors.Is(err, errGoexit) {
		t.Fatalf("%v, want an execution error of unknown outcome", err)
	}
}
