package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/tool"
)

// startHolder starts a child process that drives the bundle's run until
// its side effect is running (the effect is on disk, the tool blocks), and
// returns once it is there. The child holds the run's claim and keeps its
// heartbeat going.
func startHolder(t *testing.T, b *bundle) *exec.Cmd {
	t.Helper()
	tg, _ := json.Marshal(b.tg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envChild+"=1", envStore+"="+string(tg), envRunID+"="+b.runID,
		envEffect+"="+tool.SideEffect.String(), envRecovery+"={}", envKillAt+"="+pointRunning, envMode+"=run", envCounter+"="+b.counter)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	at := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == markerPrefix+pointRunning {
				at <- true
				return
			}
		}
		at <- false
	}()
	select {
	case ok := <-at:
		if !ok {
			t.Fatalf("the holder exited before its side effect ran: %s", stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the holder did not reach its side effect in 60 s: %s", stderr.String())
	}
	return cmd
}

// A Cancel from this process while another process holds the run, its side
// effect in flight: the holder reads the request at its next heartbeat and
// ends the run cancelled, and Cancel returns nil only then. Then the same
// with the holder SIGSTOPped: it cannot read anything, so Cancel waits for
// its lease to run out, takes the claim and cancels the run itself; when
// the holder is SIGCONTed its writes are fenced. In both, the run ends
// cancelled, the effect that was in flight is not run again, and its call
// keeps its ledger state for the record (issue 23, break 1).
func TestCancelAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		for _, stop := range []bool{false, true} {
			name := bk.name + "/live-holder"
			if stop {
				name = bk.name + "/sigstopped-holder"
			}
			t.Run(name, func(t *testing.T) {
				bk.available(t)
				t.Parallel()
				ctx := context.Background()
				b := setup(t, bk)
				holder := startHolder(t, b)
				if stop {
					if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
				}
				rt := b.parent(t)
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				err := rt.Cancel(cctx, b.runID)
				// SQLite has one write lock per file, and a process
				// stopped inside a write transaction (a heartbeat) keeps
				// it: nobody writes until it runs again or dies
				// (docs/workers.md). Cancel then fails with
				// SQLITE_BUSY, as it must; the case under test is a
				// holder stopped between writes, so let it finish its
				// write and stop it again.
				for try := 0; stop && err != nil && strings.Contains(err.Error(), "SQLITE_BUSY") && try < 5; try++ {
					t.Logf("the holder was stopped inside a write (%v): continue it and stop it again", err)
					if err := holder.Process.Signal(syscall.SIGCONT); err != nil {
						t.Fatal(err)
					}
					// Let it run a moment (longer each try): the lock is
					// freed by its running, which nothing here can await.
					time.Sleep(time.Duration(50<<try) * time.Millisecond)
					if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
					err = rt.Cancel(cctx, b.runID)
				}
				if err != nil {
					t.Fatalf("Cancel of a run another process holds: %v", err)
				}
				info, err := rt.Get(ctx, b.runID)
				if err != nil {
					t.Fatal(err)
				}
				if info.StoredStatus != actoviq.StatusCancelled {
					t.Fatalf("Cancel returned nil; the run is %s (stored %s)", info.Status, info.StoredStatus)
				}
				if stop {
					if err := holder.Process.Signal(syscall.SIGCONT); err != nil {
						t.Fatal(err)
					}
				}
				_ = holder.Process.Kill()
				_ = holder.Wait()
				info, err = rt.Get(ctx, b.runID)
				if err != nil {
					t.Fatal(err)
				}
				if info.StoredStatus != actoviq.StatusCancelled || len(info.Ledger) != 1 || info.Ledger[0].Attempt != 1 {
					t.Fatalf("after the holder went on and died: %s, ledger %+v; want cancelled, c1 at attempt 1", info.StoredStatus, info.Ledger)
				}
				if got := readEffects(t, b.counter); len(got) != 1 {
					t.Fatalf("%d effects on disk, want the one in flight: %v", len(got), got)
				}
				// A later resume does nothing: the run is cancelled for good.
				res, err := rt.Resume(ctx, newAgent(tool.SideEffect, actoviq.RecoveryPolicy{}, b.counter, nil), b.runID, nil)
				if err != nil || res.Status != actoviq.StatusCancelled || len(readEffects(t, b.counter)) != 1 {
					t.Fatalf("resume of the cancelled run: %+v %v", res, err)
				}
			})
		}
	}
}
