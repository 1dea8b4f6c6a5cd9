package tool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// The parent's cancellation reaches what a tool derived from its context
// with the parent's cause, also when the runner gives up on the call (the
// parent ended) and ends the call's context at once. Runtime.Close cancels
// its drives with ErrClosed; a child run driven inside an agent tool must
// read that as a shutdown, not as a plain cancellation that ends it
// cancelled (CI at 477b23e: TestReadOnlyChildSurvivesClose). The runner's
// own end of the call used to race the parent's propagation: the runner
// wakes on the parent's Done, which closes before the parent cancels its
// children.
func TestParentCauseReachesDerivedContexts(t *testing.T) {
	cause := errors.New("shut down")
	for i := range 3000 {
		parent, stop := context.WithCancelCause(context.Background())
		entered, release := make(chan struct{}), make(chan struct{})
		seen := make(chan [2]error, 1)
		go func() {
			<-entered
			stop(cause)
		}()
		_, err := runOne(t, parent, &ctxTool{timeout: time.Hour, fn: func(ctx context.Context) (tool.Result, error) {
			derived, dstop := context.WithCancelCause(ctx)
			defer dstop(nil)
			close(entered)
			<-release
			<-derived.Done()
			seen <- [2]error{context.Cause(ctx), context.Cause(derived)}
			return tool.Result{}, nil
		}})
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindCancelled {
			t.Fatalf("try %d: Run after the parent's cancel: %v, want a cancelled call", i, err)
		}
		close(release)
		if got := <-seen; got[0] != cause || got[1] != cause {
			t.Fatalf("try %d: the call's context has cause %v, a context derived from it %v; want the parent's %v", i, got[0], got[1], cause)
		}
	}
}
