package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitFor polls cond (the bank writes files from another goroutine) for
// at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A signal (SIGINT, SIGTERM: the end of the command's context) is a
// shutdown, not a decision: the run is not cancelled. A payment in flight
// stops the run interrupted for reconciliation, as a crash would, and the
// next resume settles it by the bank's probe and completes.
func TestSignalIsShutdownNotCancel(t *testing.T) {
	h := newHarness(t)
	h.envs["ACTOVIQ_DEMO_BANK_DELAY"] = "300ms"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return h.envs[k] }, executable: os.Executable}
		code <- e.main(ctx, h.runArgs("--run-id", "r1", "--approve", "none", "pay INV-42"))
	}()
	calls := filepath.Join(h.dir, "bank.jsonl.calls")
	waitFor(t, "the payment to start", func() bool { _, err := os.Stat(calls); return err == nil })
	cancel() // the signal
	if got := <-code; got != ExitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted for reconciliation)\nstdout:\n%s\nstderr:\n%s", got, ExitInterrupted, &stdout, &stderr)
	}
	if out := stdout.String(); !strings.Contains(out, "reconciliation") || strings.Contains(out, "run r1 cancelled") {
		t.Fatalf("output:\n%s", out)
	}
	waitFor(t, "the bank to finish the payment", func() bool { return h.bankLines() == 1 })
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	if h.bankLines() != 1 {
		t.Fatalf("bank has %d payments", h.bankLines())
	}
}
