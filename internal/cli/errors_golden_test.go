package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/errors.golden")

// TestErrorMessagesGolden pins what a person reads when a command goes
// wrong: each message names what was looked at and the next command, in
// the CLI's words (actoviq resume RUN, OPENAI_API_KEY, --store), never the
// Go API's (Runtime.Resume, Config.APIKey). go test -update rewrites the
// file; read the diff.
func TestErrorMessagesGolden(t *testing.T) {
	h := newHarness(t)
	script := "scripted:" + filepath.Join(h.dir, "script.json")
	bank := filepath.Join(h.dir, "bank.jsonl")
	missing := "sqlite:" + filepath.Join(h.dir, "missing.db")
	h.want(ExitInterrupted, "run", "--store", h.store, "--run-id", "r1", "--model", script, "--demo-bank", bank, "pay")
	cases := [][]string{
		{"approve"},
		{"approve", "r1"},
		{"approve", "r1", "call_pay", "extra"},
		{"runs", "show"},
		{"runs", "lst"},
		{"bogus"},
		{"aprove", "r1", "call_pay"},
		{"version", "x"},
		{"run", "--store", h.store, "--frobnicate", "hi"},
		{"run", "--store", h.store, "hi"},
		{"run", "--store", h.store, "--model", "gpt-4.1", "hi"},
		{"run", "--store", h.store, "--model", "bogus:x", "hi"},
		{"run", "--store", h.store, "--model", "openai:gpt-4.1", "hi"},
		{"run", "--store", h.store, "--model", "anthropic:claude-sonnet-4-5", "hi"},
		{"run", "--store", h.store, "--run-id", "r1", "--model", script, "--demo-bank", bank, "pay"},
		{"run", "--store", h.store, "--model", script, "--demo-crash", "sideways", "--demo-bank", bank, "pay"},
		{"run", "--store", h.store, "--model", script, "--demo-crash", "before-pay", "pay"},
		{"run", "--store", "mysql://x", "--model", script, "hi"},
		{"resume", "w1", "--store", h.store},
		{"resume", "w1", "--store", h.store, "--tenant", "acme"},
		{"resume", "r1", "--store", missing},
		{"runs", "show", "w1", "--store", h.store},
		{"runs", "list", "--store", h.store, "--status", "bogus"},
		{"approve", "w1", "call_pay", "--store", h.store},
		{"approve", "r1", "call_nope", "--store", h.store},
		{"reject", "r1", "call_pay", "--store", h.store},
		{"resolve", "r1", "call_pay", "--store", h.store},
		{"resolve", "r1", "call_pay", "--store", h.store, "--committed"},
		{"resolve", "r1", "call_pay", "--store", h.store, "--committed", "--result", "not json"},
		{"resolve", "r1", "call_pay", "--store", h.store, "--reexecute"},
		{"demo", "--crash", "sideways"},
		{"resume", "r1", "--store", h.store, "--timeout", "1h"},
		{"resume", "r1", "--store", h.store, "--note", "why"},
		{"resume", "r1", "--store", h.store, "--approve", "none"},
		{"resume", "r1", "--store", h.store, "--approve", "none", "--accept-agent-change"},
	}
	var b strings.Builder
	for _, args := range cases {
		code := h.run(args...)
		if h.stdout.Len() > 0 && code == ExitUsage {
			t.Errorf("actoviq %s: a usage error wrote to stdout: %s", strings.Join(args, " "), h.stdout)
		}
		fmt.Fprintf(&b, "$ actoviq %s\n[exit %d]\n%s\n", strings.Join(args, " "), code, h.stderr.String())
		for _, word := range []string{"Runtime.", "Config.", "use Resume", "::", "arg(s)", "1 attempts"} {
			if strings.Contains(h.stderr.String(), word) {
				t.Errorf("actoviq %s: the message says %q:\n%s", strings.Join(args, " "), word, h.stderr)
			}
		}
	}
	got := strings.ReplaceAll(b.String(), h.dir, "$DIR")
	path := filepath.Join("testdata", "errors.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("the CLI's error messages changed (go test -run ErrorMessagesGolden -update rewrites %s):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, by position.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d\n- %s\n+ %s\n", i+1, a, c)
		}
	}
	return b.String()
}
