package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// workerProc is a running `actoviq worker` process.
type workerProc struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	done           chan error
}

func startWorker(t testing.TB, env []string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"worker"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	w := &workerProc{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: w.stdout}, &lockedWriter{b: w.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		w.done <- nil
	})
	return w
}

// listRuns reads `actoviq runs list --json`.
type listedRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Holder *struct {
		Host string `json:"host"`
		PID  int    `json:"pid"`
		Live bool   `json:"live"`
	} `json:"holder"`
}

func listRuns(t *testing.T, storeURL string) []listedRun {
	t.Helper()
	r := actoviqBin(t, nil, "runs", "list", "--store", storeURL, "--limit", "0", "--json")
	wantExit(t, r, 0, "runs list")
	var list struct {
		Runs []listedRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("runs list --json: %v\n%s", err, r.stdout)
	}
	return list.Runs
}

// run --detach queues runs, a worker process drives them, runs list shows
// the worker while it holds a run, and SIGTERM drains it: exit 0.
func TestBinaryWorkerDrivesDetachedRuns(t *testing.T) {
	x := newE2E(t)
	env := []string{"ACTOVIQ_DEMO_BANK_DELAY=300ms"}
	var ids []string
	for i := range 3 {
		r := actoviqBin(t, nil, "run", "--detach", "--store", x.store, "--run-id", fmt.Sprintf("d%d", i), "--approve", "none",
			"--model", "scripted:"+x.sc, "--demo-bank", x.bank, "pay INV-42")
		wantExit(t, r, 0, "run --detach")
		if strings.TrimSpace(r.stdout) != fmt.Sprintf("d%d", i) {
			t.Fatalf("run --detach printed %q, want the run id", r.stdout)
		}
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	for _, row := range listRuns(t, x.store) {
		if row.Status != "queued" {
			t.Fatalf("before any worker, run %s is %s", row.ID, row.Status)
		}
	}
	if len(x.payments()) != 0 {
		t.Fatal("a detached run paid without a worker")
	}
	w := startWorker(t, env, "--store", x.store, "--concurrency", "1", "--poll", "50ms")
	sawHolder := false
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := 0
		for _, row := range listRuns(t, x.store) {
			switch row.Status {
			case "completed":
				done++
			case "running":
				if row.Holder != nil && row.Holder.Live && row.Holder.PID == w.cmd.Process.Pid {
					sawHolder = true
				}
			}
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs not completed in time\nworker stderr:\n%s", w.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling the store a worker process writes; no signal to wait on
	}
	if !sawHolder {
		t.Error("runs list never showed the worker process as the holder of a running run")
	}
	if n := len(x.payments()); n != len(ids) {
		t.Fatalf("%d payments for %d runs", n, len(ids))
	}
	r := actoviqBin(t, nil, "runs", "show", ids[0], "--store", x.store)
	if !strings.Contains(r.stdout, fmt.Sprintf("pid %d", w.cmd.Process.Pid)) {
		t.Fatalf("runs show does not name the worker:\n%s", r.stdout)
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.done:
		w.done <- err
		if err != nil {
			t.Fatalf("worker after SIGTERM: %v\nstderr:\n%s", err, w.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop after SIGTERM")
	}
	if !strings.Contains(w.stdout.String(), "stopped") {
		t.Fatalf("worker stdout:\n%s", w.stdout)
	}
	// resume --detach of a finished run says so; of an unknown run, exit 2.
	wantExit(t, actoviqBin(t, nil, "resume", ids[0], "--detach", "--store", x.store), 1, "resume --detach of a completed run")
	wantExit(t, actoviqBin(t, nil, "resume", "nope", "--detach", "--store", x.store), 2, "resume --detach of an unknown run")
}

// lockedWriter lets a test read a process's output while it runs.
type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
