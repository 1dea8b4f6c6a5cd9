package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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

// A signal while nothing is in flight but a model call leaves the run not
// ended: the command exits ExitStopped (not "failed"), says how to go on,
// and the run resumes to completion.
func TestSignalDuringModelCallExitsStopped(t *testing.T) {
	entered := make(chan struct{}, 1)
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		default:
			select {
			case entered <- struct{}{}:
			default:
			}
			select { // hang until the client gives up
			case <-r.Context().Done():
			case <-block:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return h.envs[k] }, executable: os.Executable}
		code <- e.main(ctx, []string{"run", "--store", h.store, "--model", "openai:local", "--base-url", srv.URL + "/v1", "--no-stream", "--run-id", "r1", "hello"})
	}()
	<-entered
	cancel() // the signal
	if got := <-code; got != ExitStopped {
		t.Fatalf("exit %d, want %d (stopped, resumable)\nstdout:\n%s\nstderr:\n%s", got, ExitStopped, &stdout, &stderr)
	}
	if !strings.Contains(stderr.String(), "actoviq resume r1") {
		t.Fatalf("stderr does not say how to continue:\n%s", &stderr)
	}
	close(block)
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
}
