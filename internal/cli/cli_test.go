package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type harness struct {
	t      *testing.T
	dir    string
	store  string
	envs   map[string]string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, store: "sqlite:" + filepath.Join(dir, "a.db"), envs: map[string]string{}}
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(demoScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs the command line in-process and returns its exit code.
func (h *harness) run(args ...string) int {
	h.t.Helper()
	h.stdout, h.stderr = &bytes.Buffer{}, &bytes.Buffer{}
	e := &env{stdout: h.stdout, stderr: h.stderr, getenv: func(k string) string { return h.envs[k] },
		executable: os.Executable}
	return e.main(context.Background(), args)
}

func (h *harness) want(code int, args ...string) {
	h.t.Helper()
	if got := h.run(args...); got != code {
		h.t.Fatalf("actoviq %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, h.stdout, h.stderr)
	}
}

func (h *harness) bankLines() int {
	b, err := os.ReadFile(filepath.Join(h.dir, "bank.jsonl"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func (h *harness) runArgs(extra ...string) []string {
	return append([]string{"run", "--store", h.store, "--model", "scripted:" + filepath.Join(h.dir, "script.json"),
		"--demo-bank", filepath.Join(h.dir, "bank.jsonl")}, extra...)
}

func TestApproveAndResume(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	for _, s := range []string{"awaits approval", "actoviq approve r1 call_pay", "idempotency key r1:call_pay"} {
		if !strings.Contains(h.stdout.String(), s) {
			t.Fatalf("run output lacks %q:\n%s", s, h.stdout)
		}
	}
	if h.bankLines() != 0 {
		t.Fatal("paid before approval")
	}
	h.want(ExitInterrupted, "resume", "r1", "--store", h.store) // no decision yet
	h.want(ExitCompleted, "approve", "r1", "call_pay", "--store", h.store, "--by", "alice", "--note", "checked")
	h.want(ExitUsage, "approve", "r1", "call_pay", "--store", h.store) // already approved
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	if h.bankLines() != 1 {
		t.Fatalf("bank has %d payments", h.bankLines())
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	out := h.stdout.String()
	for _, s := range []string{"status completed", "call_pay", "committed", "approve by alice", "r1:call_pay"} {
		if !strings.Contains(out, s) {
			t.Fatalf("runs show lacks %q:\n%s", s, out)
		}
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store, "--json")
	var info struct {
		Status string
		Ledger []struct{ State string }
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &info); err != nil || info.Status != "completed" || len(info.Ledger) != 2 {
		t.Fatalf("runs show --json: %v %+v", err, info)
	}
	h.want(ExitCompleted, "runs", "list", "--store", h.store, "--status", "completed")
	if !strings.Contains(h.stdout.String(), "r1") {
		t.Fatalf("runs list: %s", h.stdout)
	}
	// The run id is never re-run.
	h.want(ExitUsage, h.runArgs("--run-id", "r1", "again")...)
	if h.bankLines() != 1 {
		t.Fatal("re-ran")
	}
}

func TestRejectAndJSON(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "--json", "pay")...)
	lines := strings.Split(strings.TrimSpace(h.stdout.String()), "\n")
	var last struct {
		Schema int
		Seq    int64
		Type   string
		RunID  string `json:"run_id"`
	}
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &last); err != nil || last.Schema != 1 || last.RunID != "r1" {
			t.Fatalf("line %d is not an event envelope: %s", i, l)
		}
	}
	if last.Type != "run.interrupted" || last.Seq == 0 {
		t.Fatalf("last event %+v", last)
	}
	h.want(ExitUsage, "reject", "r1", "call_pay", "--store", h.store) // needs --reason
	h.want(ExitCompleted, "reject", "r1", "call_pay", "--store", h.store, "--reason", "wrong payee")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if !strings.Contains(h.stdout.String(), "rejected by") || h.bankLines() != 0 {
		t.Fatalf("reject: %s", h.stdout)
	}
}

func TestUsageErrorsLeaveStoreUntouched(t *testing.T) {
	h := newHarness(t)
	db := strings.TrimPrefix(h.store, "sqlite:")
	bad := filepath.Join(h.dir, "bad-mcp.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"command": 5}}}`), 0o644)
	script := "scripted:" + filepath.Join(h.dir, "script.json")
	cases := [][]string{
		{"run", "--store", h.store, "hi"},                                // no model
		{"run", "--store", h.store, "--model", "bogus:x", "hi"},          // unknown provider
		{"run", "--store", h.store, "--model", "openai:gpt-4.1", "hi"},   // no API key
		{"run", "--store", h.store, "--model", "anthropic:claude", "hi"}, // no API key
		{"run", "--store", h.store, "--model", "scripted:/nonexistent.json", "hi"},
		{"run", "--store", h.store, "--model", script, "--mcp-config", bad, "hi"},
		{"run", "--store", h.store, "--model", script, "--mcp-config", filepath.Join(h.dir, "missing.json"), "hi"},
		{"run", "--store", h.store, "--model", script, "--approve", "sometimes", "hi"},
		{"run", "--store", h.store, "--model", script, "--recover", "maybe", "hi"},
		{"run", "--store", h.store, "--model", script, "--max-retries", "-1", "hi"},
		{"run", "--store", "mysql://x", "--model", script, "hi"},
		{"run", "--store", h.store, "--no-such-flag", "hi"},
		{"resume", "nope", "--store", h.store},
		{"runs", "show", "nope", "--store", h.store},
		{"resolve", "r", "c", "--store", h.store, "--committed", "--failed"},
	}
	for _, args := range cases {
		if code := h.run(args...); code != ExitUsage {
			t.Errorf("actoviq %s: exit %d, want 2 (stderr %s)", strings.Join(args, " "), code, h.stderr)
		}
		// One line says what is wrong; only usage and help pointers follow.
		lines := strings.Split(strings.TrimSpace(h.stderr.String()), "\n")
		if lines[0] == "" {
			t.Errorf("actoviq %s: no error message", strings.Join(args, " "))
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "usage: ") && !strings.HasPrefix(l, "see: ") {
				t.Errorf("actoviq %s: want a one-line error (then usage and see lines), got %q", strings.Join(args, " "), lines)
			}
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("actoviq %s created the store", strings.Join(args, " "))
		}
	}
	// An unknown run in an existing store is a usage error too, and the
	// store keeps what it had.
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitUsage, "approve", "nope", "call_pay", "--store", h.store)
	h.want(ExitUsage, "resolve", "r1", "call_pay", "--store", h.store, "--reexecute") // it awaits approval
	h.want(ExitCompleted, "runs", "list", "--store", h.store)
	if strings.Count(h.stdout.String(), "interrupted") != 1 {
		t.Fatalf("store changed: %s", h.stdout)
	}
}

func TestResumeRefusesChangedAgent(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--approve", "none")
	for _, want := range []string{"tool pay_invoice: approval needs approval → no approval (unsettled call call_pay (awaiting_approval))",
		"actoviq resume r1 --accept-agent-change --by NAME --note WHY"} {
		if !strings.Contains(h.stderr.String(), want) {
			t.Fatalf("message lacks %q: %s", want, h.stderr)
		}
	}
	// A flag that leaves the definition alone is fine.
	h.want(ExitInterrupted, "resume", "r1", "--store", h.store, "--max-retries", "0")
}
