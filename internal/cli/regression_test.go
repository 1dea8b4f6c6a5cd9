package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 6: the run remembers how it was started but "never remembers
// secrets". A base URL with credentials (user:password@host) used to be
// stored verbatim in the run meta; now it is refused before anything is
// written, without echoing the password.
func TestBaseURLCredentialsRefused(t *testing.T) {
	h := newHarness(t)
	const secret = "s3cr3t-gateway-pass"
	code := h.run("run", "--store", h.store, "--model", "openai:gpt-x", "--base-url", "http://alice:"+secret+"@127.0.0.1:1/v1", "--run-id", "r1", "hi")
	if code != ExitUsage {
		t.Fatalf("run: exit %d\nstdout %s\nstderr %s", code, h.stdout, h.stderr)
	}
	if strings.Contains(h.stdout.String()+h.stderr.String(), secret) {
		t.Errorf("output shows the password:\n%s%s", h.stdout, h.stderr)
	}
	if _, err := os.Stat(strings.TrimPrefix(h.store, "sqlite:")); err == nil {
		t.Fatal("the refused run created the store")
	}
}

// Issue 6: a bad flag is a one-line error, exit 2, store untouched. A
// negative --timeout used to be turned into "no deadline".
func TestNegativeTimeoutIsUsageError(t *testing.T) {
	h := newHarness(t)
	h.want(ExitUsage, h.runArgs("--run-id", "r1", "--timeout", "-5m", "pay")...)
}

// Issue 6: resume "needs only the run id" and uses the settings the run
// was started with. Relative paths (--model scripted:FILE, --mcp-config,
// --demo-bank) used to be remembered verbatim and resolved against the
// resume's working directory, so a resume from another directory drove the
// run with other files. Now they are remembered absolute.
func TestResumeFromOtherDirUsesSameFiles(t *testing.T) {
	h := newHarness(t)
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "script.json"), []byte(demoScript), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(h.dir)
	h.want(ExitInterrupted, "run", "--store", h.store, "--model", "scripted:script.json", "--demo-bank", "bank.jsonl", "--run-id", "r1", "pay")
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store)
	t.Chdir(other)
	code := h.run("resume", "r1", "--store", h.store)
	if _, err := os.Stat(filepath.Join(other, "bank.jsonl")); err == nil {
		t.Fatalf("resume from another directory (exit %d) paid into %s/bank.jsonl, not the run's bank", code, other)
	}
}
