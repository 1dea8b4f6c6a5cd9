package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests build the actoviq binary and drive it as a user would.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "actoviq-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "actoviq")
		// Built with the test's own cgo setting, so that it reuses the
		// packages go test just compiled: with CGO_ENABLED=0 here, a cold
		// build cache compiled every dependency a second time, and on a
		// loaded machine that alone ran past go test's 10-minute default
		// timeout. scripts/test checks that the command builds without cgo.
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/actoviq/actoviq-go/cmd/actoviq")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

type cliRun struct {
	code           int
	stdout, stderr string
}

func actoviqBin(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliRun{code, out.String(), errb.String()}
}

func wantExit(t *testing.T, r cliRun, code int, what string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
}

func TestBinaryDemo(t *testing.T) {
	r := actoviqBin(t, nil, "demo", "--dir", t.TempDir())
	wantExit(t, r, 0, "demo")
	for _, s := range []string{"was SIGKILLed", "started (attempt 1", "bank: 1 payment", "settled by probe", "probe by probe:pay_invoice", "actoviq resume",
		// The HTTP bank (tool/httptool): a lost answer settled by a re-send the bank replays.
		"the same payment over HTTP", "interrupted for reconciliation", `Idempotency-Key: "demo-http:call_pay"`,
		"Idempotent-Replayed: true", "The bank received 2 requests with that key and made 1 payment"} {
		if !strings.Contains(r.stdout, s) {
			t.Fatalf("demo output lacks %q:\n%s", s, r.stdout)
		}
	}
}

type e2e struct {
	t                    *testing.T
	dir, store, bank, sc string
}

func newE2E(t *testing.T) *e2e {
	dir := t.TempDir()
	x := &e2e{t: t, dir: dir, store: "sqlite:" + filepath.Join(dir, "a.db"), bank: filepath.Join(dir, "bank.jsonl"), sc: filepath.Join(dir, "script.json")}
	if err := os.WriteFile(x.sc, []byte(demoScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return x
}

func (x *e2e) payments() []string {
	b, err := os.ReadFile(x.bank)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		x.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestBinaryApprovalFlow(t *testing.T) {
	x := newE2E(t)
	r := actoviqBin(t, nil, "run", "--store", x.store, "--run-id", "r1", "--model", "scripted:"+x.sc, "--demo-bank", x.bank, "pay INV-42")
	wantExit(t, r, 3, "run")
	wantExit(t, actoviqBin(t, nil, "approve", "r1", "call_pay", "--store", x.store, "--by", "alice"), 0, "approve")
	if len(x.payments()) != 0 {
		t.Fatal("paid before resume")
	}
	r = actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, 0, "resume")
	if n := len(x.payments()); n != 1 {
		t.Fatalf("%d payments", n)
	}
}

// runUntil starts a run and SIGKILLs it when its output shows marker.
func (x *e2e) runUntil(env []string, marker string, args ...string) {
	x.t.Helper()
	cmd := exec.Command(binary(x.t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		x.t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		x.t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), marker) {
				done <- true
				return
			}
		}
		done <- false
	}()
	var seen bool
	select {
	case seen = <-done:
	case <-time.After(30 * time.Second):
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, out)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !seen || !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		x.t.Fatalf("the run did not reach %q before it was killed (%v)\nstderr:\n%s", marker, err, errb.String())
	}
}

// A crash before the payment: the probe finds nothing, so a person decides;
// re-execute pays once, with the same key.
func TestBinaryCrashReconcileReexecute(t *testing.T) {
	x := newE2E(t)
	x.runUntil(nil, demoHangMarker,
		"run", "--store", x.store, "--run-id", "r1", "--approve", "none", "--model", "scripted:"+x.sc, "--demo-bank", x.bank, "--demo-crash", "before-pay", "pay INV-42")
	if len(x.payments()) != 0 {
		t.Fatal("paid before the kill")
	}
	r := actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, 3, "resume after crash")
	for _, s := range []string{"reconciliation", "? probe for call call_pay answered not_executed", "probe answered not_executed",
		"cannot prove the call will not land later", "r1:call_pay", "actoviq resolve r1 call_pay"} {
		if !strings.Contains(r.stdout, s) {
			t.Fatalf("resume output lacks %q:\n%s", s, r.stdout)
		}
	}
	wantExit(t, actoviqBin(t, nil, "resume", "r1", "--store", x.store), 3, "resume without a decision")
	wantExit(t, actoviqBin(t, nil, "resolve", "r1", "call_pay", "--store", x.store, "--reexecute", "--note", "bank has nothing"), 0, "resolve")
	r = actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, 0, "resume after re-execute")
	p := x.payments()
	if len(p) != 1 || !strings.Contains(p[0], `"idempotency_key":"r1:call_pay"`) {
		t.Fatalf("payments %v", p)
	}
	r = actoviqBin(t, nil, "runs", "show", "r1", "--store", x.store)
	if !strings.Contains(r.stdout, "re-execute by") || !strings.Contains(r.stdout, "committed (re-executed)") {
		t.Fatalf("runs show:\n%s", r.stdout)
	}
}

// A crash after the payment: the probe finds it by its key.
func TestBinaryCrashAfterPaymentProbeSettles(t *testing.T) {
	x := newE2E(t)
	x.runUntil(nil, demoHangMarker,
		"run", "--store", x.store, "--run-id", "r1", "--approve", "none", "--model", "scripted:"+x.sc, "--demo-bank", x.bank, "--demo-crash", "after-pay", "pay INV-42")
	if len(x.payments()) != 1 {
		t.Fatal("the bank did not take the payment")
	}
	// The probe finds the payment by its key and settles the call: no
	// second payment, no question for a person.
	r := actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, 0, "resume after crash")
	if n := len(x.payments()); n != 1 {
		t.Fatalf("%d payments", n)
	}
}

// After resolve --failed, the ledger row reads committed (the model was
// told) and says failed beside it.
func TestBinaryResolveFailedShowsOutcome(t *testing.T) {
	x := newE2E(t)
	x.runUntil(nil, demoHangMarker,
		"run", "--store", x.store, "--run-id", "r1", "--approve", "none", "--model", "scripted:"+x.sc, "--demo-bank", x.bank, "--demo-crash", "before-pay", "pay INV-42")
	wantExit(t, actoviqBin(t, nil, "resume", "r1", "--store", x.store), 3, "resume after crash")
	wantExit(t, actoviqBin(t, nil, "resolve", "r1", "call_pay", "--store", x.store, "--failed", "--message", "not sent"), 0, "resolve")
	wantExit(t, actoviqBin(t, nil, "resume", "r1", "--store", x.store), 0, "resume")
	r := actoviqBin(t, nil, "runs", "show", "r1", "--store", x.store)
	var row string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "pay_invoice") {
			row = l
		}
	}
	if !strings.Contains(row, "committed") || !strings.Contains(row, "failed") {
		t.Fatalf("ledger row %q, want committed and failed:\n%s", row, r.stdout)
	}
}

// The demo's variants: a crash before the payment (the probe finds
// nothing, a person re-executes) and a bank without a probe (a person
// finds the payment and records it). Each ends with one payment.
func TestBinaryDemoVariants(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--crash", "before-pay"}, []string{"bank: 0 payment", "answered not_executed", "cannot prove the call will not land later",
			"run it again, with the same key", "resolve demo-run call_pay --reexecute", "committed (re-executed)"}},
		{[]string{"--no-probe"}, []string{"bank: 1 payment", "no probe", "a person decides: it happened",
			"resolve demo-run call_pay --committed --result", "attempt 1"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			r := actoviqBin(t, nil, append([]string{"demo", "--dir", dir}, tc.args...)...)
			wantExit(t, r, 0, "demo")
			for _, s := range tc.want {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("demo output lacks %q:\n%s", s, r.stdout)
				}
			}
			b, _ := os.ReadFile(filepath.Join(dir, "bank.jsonl"))
			if n := strings.Count(string(b), "\n"); n != 1 {
				t.Errorf("the bank has %d payments, want 1", n)
			}
		})
	}
}

// A run whose deadline passes while a payment's outcome is unknown (the
// process died inside the tool) ends cancelled, and the call can still be
// seen and settled for the record: runs show lists it with the resolve
// command, resolve records it. (runs show and resolve once panicked here.)
func TestBinaryDeadlinePassedWithStartedPayment(t *testing.T) {
	x := newE2E(t)
	binary(t) // built before the clock starts
	start := time.Now()
	x.runUntil(nil, demoHangMarker,
		"run", "--store", x.store, "--run-id", "r1", "--approve", "none", "--timeout", "1s", "--model", "scripted:"+x.sc,
		"--demo-bank", x.bank, "--demo-crash", "before-pay", "pay INV-42")
	// The deadline is wall-clock time recorded with the run (1 s after it
	// was created, which is after start): wait it out with a margin.
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	wantExit(t, actoviqBin(t, nil, "resume", "r1", "--store", x.store), 1, "resume past the deadline")
	r := actoviqBin(t, nil, "runs", "show", "r1", "--store", x.store)
	wantExit(t, r, 0, "runs show of the cancelled run")
	if !strings.Contains(r.stdout, "call_pay") || !strings.Contains(r.stdout, "actoviq resolve r1 call_pay") {
		t.Fatalf("runs show does not offer to settle the unsettled payment:\n%s", r.stdout)
	}
	wantExit(t, actoviqBin(t, nil, "runs", "show", "r1", "--store", x.store, "--json"), 0, "runs show --json")
	wantExit(t, actoviqBin(t, nil, "resolve", "r1", "call_pay", "--store", x.store, "--committed", "--result", `"the bank says: not paid"`), 0, "resolve for the record")
	if p := x.payments(); len(p) != 0 {
		t.Fatalf("payments %v: the cancelled run must not have paid", p)
	}
}
