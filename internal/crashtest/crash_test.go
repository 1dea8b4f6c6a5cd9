package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// scenario is one cell of the matrix: which tool effect, which recovery
// policy (in both child and parent), where the child dies.
type scenario struct {
	effect   tool.Effect
	recovery actoviq.RecoveryPolicy
	kill     string
}

func (sc scenario) name() string {
	pol := "default"
	if sc.recovery.RerunReads || sc.recovery.RerunIdempotentWrites {
		pol = "rerun"
	}
	return sc.effect.String() + "/" + pol + "/" + sc.kill
}

// expectation is what docs/design.md#recovery says happens after the kill.
type expectation struct {
	atKill int // effects on disk when the child died
	// interrupt is the kind the first resume stops with; "" means it
	// completes.
	interrupt actoviq.InterruptionKind
	// decide answers that interruption; the second resume completes.
	decide actoviq.DecisionKind
	// attempts lists the attempt numbers in the counter file at the end,
	// all with the key <runID>:c1.
	attempts []int
}

func (sc scenario) expect() expectation {
	var e expectation
	switch sc.kill {
	case pointAnswer:
		// Nothing stored: the resume asks the model again, which asks
		// for the call again; it runs normally.
		return expectation{atKill: 0, attempts: []int{1}}
	case pointCommitted:
		// The result is durable: the tool is never called again.
		return expectation{atKill: 1, attempts: []int{1}}
	case pointStarted:
		e.atKill = 0
	default: // running, returned: the effect happened, the ledger says started
		e.atKill = 1
	}
	rerun := (sc.effect == tool.Read && sc.recovery.RerunReads) ||
		(sc.effect == tool.IdempotentWrite && sc.recovery.RerunIdempotentWrites)
	switch {
	case sc.effect == tool.SideEffect:
		e.interrupt = actoviq.InterruptReconciliation
		if sc.kill == pointStarted {
			// The operator knows it did not happen and asks for a new
			// attempt with the same key.
			e.decide, e.attempts = actoviq.DecideReexecute, []int{2}
		} else {
			// The operator saw the effect and records its result.
			e.decide, e.attempts = actoviq.DecideCommitted, []int{1}
		}
	case rerun:
		// The policy re-runs it on its own, same key, next attempt.
		e.attempts = []int{2}
		if e.atKill == 1 {
			e.attempts = []int{1, 2}
		}
	default:
		e.interrupt, e.decide = actoviq.InterruptRecovery, actoviq.DecideReexecute
		e.attempts = []int{2}
		if e.atKill == 1 {
			e.attempts = []int{1, 2}
		}
	}
	return e
}

func matrix() []scenario {
	points := []string{pointAnswer, pointStarted, pointRunning, pointReturned, pointCommitted}
	var out []scenario
	for _, p := range points {
		out = append(out,
			scenario{effect: tool.SideEffect, kill: p},
			scenario{effect: tool.Read, kill: p},
			scenario{effect: tool.Read, recovery: actoviq.RecoveryPolicy{RerunReads: true}, kill: p},
			scenario{effect: tool.IdempotentWrite, kill: p},
			scenario{effect: tool.IdempotentWrite, recovery: actoviq.RecoveryPolicy{RerunIdempotentWrites: true}, kill: p},
		)
	}
	return out
}

// TestCrashMatrix kills a child at each ledger transition of one call, for
// each effect, and checks what a fresh runtime does with the run.
func TestCrashMatrix(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			for _, sc := range matrix() {
				t.Run(sc.name(), func(t *testing.T) {
					t.Parallel()
					runScenario(t, bk, sc)
				})
			}
		})
	}
}

// bundle is one scenario's world: where the run lives, its id, the
// counter file.
type bundle struct {
	tg      target
	runID   string
	counter string
	key     string
}

func setup(t *testing.T, bk backend) *bundle {
	t.Helper()
	tg := bk.new(t)
	runID := "run-" + randHex(6)
	return &bundle{tg: tg, runID: runID, counter: filepath.Join(t.TempDir(), "effects.log"), key: runID + ":" + callID}
}

// parent opens a fresh store handle and runtime, as a new process would
// after the crash.
func (b *bundle) parent(t *testing.T) *actoviq.Runtime {
	t.Helper()
	s, err := b.tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: leaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		s.Close()
	})
	return rt
}

func runScenario(t *testing.T, bk backend, sc scenario) {
	ctx := context.Background()
	b := setup(t, bk)
	want := sc.expect()

	crashChild(t, b, sc, "run", "", sc.kill)
	if got := readEffects(t, b.counter); len(got) != want.atKill {
		t.Fatalf("after the kill at %s: %d effects on disk, want %d: %v", sc.kill, len(got), want.atKill, got)
	}

	rt := b.parent(t)
	checkDurable(t, rt, b, sc.kill)
	agent := newAgent(sc.effect, sc.recovery, b.counter, nil)
	res, err := resumeWhenFree(ctx, rt, agent, b.runID)
	if err != nil {
		t.Fatalf("resume after kill at %s: %v", sc.kill, err)
	}
	if want.interrupt != "" {
		checkInterrupted(t, rt, b, res, want.interrupt, 1)
		if got := readEffects(t, b.counter); len(got) != want.atKill {
			t.Fatalf("the interrupted resume ran the tool: %d effects, want %d: %v", len(got), want.atKill, got)
		}
		dec := actoviq.Decision{CallID: callID, Kind: want.decide, By: "test", Reason: "crash test", Result: "ok"}
		res, err = rt.Resume(ctx, agent, b.runID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{dec}})
		if err != nil {
			t.Fatalf("resume with %s: %v", want.decide, err)
		}
	}
	checkCompleted(t, rt, b, res, want.attempts)
}

// TestCrashTwice kills a child at started, has the operator ask for a
// re-execution in a second child that dies while the new attempt runs, and
// checks that the re-execution is not repeated: the run stops for
// reconciliation again, at attempt 2, with the same key.
func TestCrashTwice(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			ctx := context.Background()
			b := setup(t, bk)
			sc := scenario{effect: tool.SideEffect, kill: pointStarted}
			crashChild(t, b, sc, "run", "", pointStarted)

			rt := b.parent(t)
			agent := newAgent(sc.effect, sc.recovery, b.counter, nil)
			res, err := resumeWhenFree(ctx, rt, agent, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			checkInterrupted(t, rt, b, res, actoviq.InterruptReconciliation, 1)

			// The second child records re-execute, starts attempt 2, and
			// dies after the effect happened.
			crashChild(t, b, scenario{effect: tool.SideEffect}, "resume", actoviq.DecideReexecute, pointRunning)
			if got := readEffects(t, b.counter); len(got) != 1 {
				t.Fatalf("after the second kill: %d effects, want 1: %v", len(got), got)
			}
			res, err = resumeWhenFree(ctx, rt, agent, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			checkInterrupted(t, rt, b, res, actoviq.InterruptReconciliation, 2)
			res, err = rt.Resume(ctx, agent, b.runID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: callID, Kind: actoviq.DecideCommitted, By: "test", Result: "ok"}}})
			if err != nil {
				t.Fatal(err)
			}
			checkCompleted(t, rt, b, res, []int{2})
		})
	}
}

// crashChild runs a child until it reports kill point `at`, then SIGKILLs
// it and waits for it to be gone.
func crashChild(t *testing.T, b *bundle, sc scenario, mode string, decide actoviq.DecisionKind, at string, env ...string) {
	t.Helper()
	tg, _ := json.Marshal(b.tg)
	rp, _ := json.Marshal(sc.recovery)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(),
		envChild+"=1",
		envStore+"="+string(tg),
		envRunID+"="+b.runID,
		envEffect+"="+sc.effect.String(),
		envRecovery+"="+string(rp),
		envKillAt+"="+at,
		envMode+"="+mode,
		envDecide+"="+string(decide),
		envCounter+"="+b.counter,
	)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	marker := make(chan string, 1)
	var seen []string
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, markerPrefix); ok {
				marker <- p
				return
			}
			seen = append(seen, line)
		}
		close(marker)
	}()
	fail := func(format string, args ...any) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		exited = true
		t.Fatalf("child (%s, kill at %s): %s\nstdout:\n%s\nstderr:\n%s", mode, at, fmt.Sprintf(format, args...),
			strings.Join(seen, "\n"), stderr.String())
	}
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	select {
	case p, ok := <-marker:
		if !ok {
			fail("exited without reaching its kill point")
		}
		if p != at {
			fail("stopped at %q", p)
		}
	case <-timeout.C:
		fail("no marker after 60s")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	exited = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\nstderr:\n%s", err, stderr.String())
	}
}

// checkDurable checks what the dead child left in the store: the run still
// running, and the call's entry in the state the kill point follows.
func checkDurable(t *testing.T, rt *actoviq.Runtime, b *bundle, kill string) {
	t.Helper()
	want := store.LedgerStarted
	switch kill {
	case pointCommitted:
		want = store.LedgerCommitted
	}
	info, err := rt.Get(context.Background(), b.runID)
	if err != nil {
		t.Fatal(err)
	}
	if kill == pointAnswer {
		// As if the model had not answered: no call, no answer stored.
		if info.StoredStatus != actoviq.StatusRunning || len(info.Ledger) != 0 || len(info.Transcript) != 1 {
			t.Fatalf("after the kill at %s: run stored %s, ledger %+v, transcript %+v; want running, no call, the user's item alone",
				kill, info.StoredStatus, info.Ledger, info.Transcript)
		}
		return
	}
	// The killed process held the claim: the stored status is still
	// running, and Get derives stalled from the dead holder.
	if info.StoredStatus != actoviq.StatusRunning || info.Status != actoviq.StatusStalled ||
		len(info.Ledger) != 1 || info.Ledger[0].State != want || info.Ledger[0].IdempotencyKey != b.key {
		t.Fatalf("after the kill at %s: run %s (stored %s) with %d ledger entries %+v; want stalled (stored running), one entry %s with key %s",
			kill, info.Status, info.StoredStatus, len(info.Ledger), info.Ledger, want, b.key)
	}
}

// checkInterrupted checks a run stopped with one interruption of kind for
// c1, at the given attempt, with its stable key, as both the result and an
// operator's view show it.
func checkInterrupted(t *testing.T, rt *actoviq.Runtime, b *bundle, res *actoviq.RunResult, kind actoviq.InterruptionKind, attempt int) {
	t.Helper()
	if res.Status != actoviq.StatusInterrupted {
		t.Fatalf("status %s, want interrupted (%s); error %v", res.Status, kind, res.Error)
	}
	info, err := rt.Get(context.Background(), b.runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ins := range [][]actoviq.Interruption{res.Interruptions, info.Interruptions} {
		if len(ins) != 1 {
			t.Fatalf("%d interruptions, want one: %+v", len(ins), ins)
		}
		in := ins[0]
		if in.Kind != kind || in.CallID != callID || in.IdempotencyKey != b.key || in.Attempt != attempt || in.State != store.LedgerStarted {
			t.Fatalf("interruption %+v; want kind %s, call %s, key %s, attempt %d, state started", in, kind, callID, b.key, attempt)
		}
	}
}

// checkCompleted checks the end of every scenario: completed with the
// model's final answer, exactly one result for c1 in the transcript, the
// ledger entry committed at the last attempt, and the effects on disk
// exactly the expected attempts, all with the call's one key.
func checkCompleted(t *testing.T, rt *actoviq.Runtime, b *bundle, res *actoviq.RunResult, attempts []int) {
	t.Helper()
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("status %s, want completed; interruptions %+v, error %v", res.Status, res.Interruptions, res.Error)
	}
	if len(res.Output) != 1 || res.Output[0].Text != "done" {
		t.Fatalf("output %+v, want the text \"done\"", res.Output)
	}
	info, err := rt.Get(context.Background(), b.runID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != actoviq.StatusCompleted {
		t.Fatalf("stored status %s, want completed", info.Status)
	}
	results := 0
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult && it.ToolResult.CallID == callID {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("%d tool results for %s in the transcript, want exactly 1: %+v", results, callID, info.Transcript)
	}
	if len(info.Ledger) != 1 {
		t.Fatalf("%d ledger entries, want 1", len(info.Ledger))
	}
	en := info.Ledger[0]
	last := attempts[len(attempts)-1]
	if en.State != store.LedgerCommitted || en.IdempotencyKey != b.key || en.Attempt != last {
		t.Fatalf("ledger entry %s key %s attempt %d; want committed, %s, attempt %d", en.State, en.IdempotencyKey, en.Attempt, b.key, last)
	}
	got := readEffects(t, b.counter)
	var gotAttempts []int
	for _, l := range got {
		if l.Key != b.key {
			t.Fatalf("effect with key %q, want the call's one key %q: %v", l.Key, b.key, got)
		}
		gotAttempts = append(gotAttempts, l.Attempt)
	}
	if !slices.Equal(gotAttempts, attempts) {
		t.Fatalf("effects on disk at attempts %v, want %v", gotAttempts, attempts)
	}
}
