package once_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/once"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// These tests kill a real child process (SIGKILL, no deferred code runs)
// that shares a real SQLite file with the parent. The child is this test
// binary re-executed into TestHelperProcess.

const (
	envHelper  = "ACTOVIQ_ONCE_HELPER" // "record" or "die-in-fn"
	envDB      = "ACTOVIQ_ONCE_DB"
	envCounter = "ACTOVIQ_ONCE_COUNTER"
	envTTL     = "ACTOVIQ_ONCE_TTL"

	killKey = "order-42/charge"
)

// appendLine stands for fn's effect on the outside world: one line per run,
// synced before fn goes on.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// blockUntilParentGone blocks on stdin, a pipe the parent never writes. The
// parent kills us first; if the parent dies instead, the pipe closes and we
// exit rather than linger.
func blockUntilParentGone() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// TestHelperProcess is the child of the kill tests, not a test itself.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper process for the kill tests")
	}
	ttl, err := time.ParseDuration(os.Getenv(envTTL))
	if err != nil {
		t.Fatal(err)
	}
	s, err := storesqlite.Open(os.Getenv(envDB), nil)
	if err != nil {
		t.Fatal(err)
	}
	counter := os.Getenv(envCounter)
	_, err = once.DoConfig(context.Background(), s, killKey, &once.Config{LeaseTTL: ttl},
		func(context.Context) (string, error) {
			if err := appendLine(counter, "child"); err != nil {
				return "", err
			}
			if mode == "die-in-fn" {
				// The effect happened; the record has not been written.
				fmt.Println("in-fn")
				blockUntilParentGone()
			}
			return "child-value", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// Do has returned: the record is committed.
	fmt.Println("recorded")
	blockUntilParentGone()
}

// runChildUntil starts the helper in mode, waits until it prints want, and
// SIGKILLs it.
func runChildUntil(t *testing.T, mode, db, counter string, ttl time.Duration, want string) {
	t.Helper()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envHelper+"="+mode, envDB+"="+db, envCounter+"="+counter, envTTL+"="+ttl.String())
	cmd.Stdin = stdinR
	cmd.Stdout = outW
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	outW.Close()

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	seen := false
	timeout := time.After(30 * time.Second)
	for !seen {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("child exited before printing %q; stderr:\n%s", want, stderr.String())
			}
			seen = line == want
		case <-timeout:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child did not print %q; stderr:\n%s", want, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // "signal: killed"
	for range lines {
		// drain until the reader sees EOF, so its goroutine ends
	}
}

func openSQLite(t *testing.T, path string) *storesqlite.Store {
	t.Helper()
	s, err := storesqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A result recorded before the process was killed is returned to the next
// caller, and fn does not run again.
func TestKillAfterRecordDoesNotRunFnAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, counter := filepath.Join(dir, "once.db"), filepath.Join(dir, "counter")

	runChildUntil(t, "record", db, counter, 30*time.Second, "recorded")

	s := openSQLite(t, db)
	got, err := once.Do(t.Context(), s, killKey, func(context.Context) (string, error) {
		if err := appendLine(counter, "parent"); err != nil {
			return "", err
		}
		return "parent-value", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != "child-value" {
		t.Fatalf("got %q, want the child's recorded %q", got, "child-value")
	}
	if n := countLines(t, counter); n != 1 {
		t.Fatalf("effect happened %d times, want 1", n)
	}
}

// TestKillInsideFnRunsFnAgainDocumentsWindow documents the window that no
// record can close: the child is killed after fn's effect happened and
// before the record was written. Once the child's lease expires, the next
// caller runs fn again and the effect happens twice. This is why fn must
// hand the key to a target that dedupes on it (see the package doc).
func TestKillInsideFnRunsFnAgainDocumentsWindow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, counter := filepath.Join(dir, "once.db"), filepath.Join(dir, "counter")
	const ttl = 200 * time.Millisecond

	runChildUntil(t, "die-in-fn", db, counter, ttl, "in-fn")

	s := openSQLite(t, db)
	// The dead child's lease is still live: this call polls until it
	// expires, then takes the claim and runs fn.
	got, err := once.DoConfig(t.Context(), s, killKey, &once.Config{LeaseTTL: ttl, PollInterval: 20 * time.Millisecond},
		func(context.Context) (string, error) {
			if err := appendLine(counter, "parent"); err != nil {
				return "", err
			}
			return "parent-value", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if got != "parent-value" {
		t.Fatalf("got %q, want %q (the child recorded nothing)", got, "parent-value")
	}
	if n := countLines(t, counter); n != 2 {
		t.Fatalf("effect happened %d times; the window makes it 2 (child, then parent)", n)
	}
}
