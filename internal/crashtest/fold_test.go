package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/tool"
)

// TestCrashInsideFoldedWrite SIGKILLs a child inside the store write that
// carries the model's answer with c1's start (drive_fold.go in the root
// package): on SQLite, after that write's events rows, before its COMMIT
// (kill point event-row-write; the write is the run's first with several
// records). Nothing of it is stored: the run reads as if the model had
// not answered, the resume asks the model again, and c1 runs once.
func TestCrashInsideFoldedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, backends()[0]) // SQLite: its kill point is inside the transaction
	sc := scenario{effect: tool.SideEffect, kill: "never"}
	tg, _ := json.Marshal(b.tg)
	rp, _ := json.Marshal(sc.recovery)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envChild+"=1", envStore+"="+string(tg), envRunID+"="+b.runID, envEffect+"="+sc.effect.String(),
		envRecovery+"="+string(rp), envKillAt+"="+sc.kill, envMode+"=run", envCounter+"="+b.counter,
		"ACTOVIQ_KILLPOINT="+killpoint.EventRowWrite)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed inside the write (%v):\n%s", err, out)
	}
	if got := readEffects(t, b.counter); len(got) != 0 {
		t.Fatalf("effects at the kill: %v", got)
	}
	rt := b.parent(t)
	checkDurable(t, rt, b, pointAnswer) // no call, no answer stored
	res, err := resumeWhenFree(ctx, rt, newAgent(sc.effect, sc.recovery, b.counter, nil), b.runID)
	if err != nil {
		t.Fatal(err)
	}
	checkCompleted(t, rt, b, res, []int{1})
}
