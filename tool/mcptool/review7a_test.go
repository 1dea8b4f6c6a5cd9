package mcptool_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// Closing a runtime is a process shutting down, not a decision: a call
// that waits on a task of the Tasks extension leaves the task running
// (no tasks/cancel), and the run's next drive polls it and takes its
// result. On main the Close reached the tool as a bare cancellation, the
// tool sent tasks/cancel, and the resumed run found the task cancelled on
// the server (interrupted for reconciliation) instead of its report.
func TestReview7RuntimeCloseLeavesTaskRunning(t *testing.T) {
	s := newV26Server(t, false)
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := storesqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: killLease})
	if err != nil {
		t.Fatal(err)
	}
	src, err := killSource(s.url(), false)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := killAgent(src, "slow_task")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	var once sync.Once
	s.setOnGet(func(_ string, n int) {
		if n == 2 {
			once.Do(func() { go func() { defer close(closed); rt.Close() }() })
		}
	})
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("go")}})
	<-closed
	if err != nil && !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("the drive Close stopped: %+v %v", res, err)
	}
	if res != nil && res.Status != actoviq.StatusInterrupted {
		t.Fatalf("the drive Close stopped: %+v, want ErrClosed or interrupted (resumable)", res)
	}
	// The tool would send tasks/cancel on its own goroutine as its
	// context ends.
	select {
	case id := <-s.cancelled:
		t.Fatalf("tasks/cancel of %s after a Close: the task was cancelled on the server by a process shutdown", id)
	case <-time.After(time.Second):
	}
	src.Close()
	st.Close()
	s.complete("r1:c1")
	res, info := resumeRun(t, s, db, "slow_task", false)
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("resumed run: %+v", res)
	}
	if r := toolResult(info); r == nil || r.Content != "report for r1:c1" {
		t.Fatalf("tool result %+v, want the task's report", r)
	}
	if p, e := s.counts("r1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}
