package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// TestTimeoutInsideToolIsOutcomeUnknown: a side-effect tool that
// sends a request under its own shorter timeout (as http.Client.Timeout or a
// child context does) and gives up waiting for the answer returns an error
// matching context.DeadlineExceeded. The work may still complete on the
// other side, so the runner must report the outcome as unknown; it used to
// report a plain execution failure with a known outcome, and the engine then
// committed an error result that invited the model to call again.
func TestTimeoutInsideToolIsOutcomeUnknown(t *testing.T) {
	charge := tool.Func(tool.Spec{Name: "charge", Effect: tool.SideEffect},
		func(ctx context.Context, in struct {
			Amount int `json:"amount"`
		}) (string, error) {
			// "send the request", then wait for the answer under our own timeout.
			rctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			<-rctx.Done()
			return "", rctx.Err()
		})
	r, err := tool.NewRunner([]tool.Tool{charge}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background(), &tool.Call{Name: "charge", Args: json.RawMessage(`{"amount":5}`), Key: "r:c"})
	var te *tool.Error
	if !errors.As(err, &te) {
		t.Fatalf("want *tool.Error, got %v", err)
	}
	if !te.Started {
		t.Fatalf("tool ran, Started must be true: %+v", te)
	}
	if !te.OutcomeUnknown || !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("a timed-out side effect is reported with a known outcome: kind=%s outcome_unknown=%v err=%v", te.Kind, te.OutcomeUnknown, err)
	}
}
