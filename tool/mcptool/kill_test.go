package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// The SIGKILL tests run the client in a child process (this test binary,
// TestKillHelper) that calls a tool of the in-process v26Server and keeps
// the handles it records in a file, one JSON line each, fsynced before
// RecordHandle returns: the stand-in for the ledger entry. The child can
// stop dead right after a given handle is durable; the test SIGKILLs it
// there (or while it polls), then a second child resumes the call from the
// file with Tool.Resume. The server counts, per idempotency key, the
// tools/call POSTs that reached it and the executions.

const helperEnv = "ACTOVIQ_MCPTOOL_KILL_HELPER"

// fileRecorder appends handles to a file and fsyncs it.
type fileRecorder struct {
	mu     sync.Mutex
	f      *os.File
	stopAt string // "kind/step" after whose write the process stops dead
}

func (r *fileRecorder) RecordHandle(_ context.Context, h tool.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := r.f.Sync(); err != nil {
		return err
	}
	at := h.Kind
	var step struct {
		Step string `json:"step"`
	}
	if json.Unmarshal(h.Data, &step) == nil && step.Step != "" {
		at += "/" + step.Step
	}
	fmt.Printf("RECORDED %s\n", at)
	if at == r.stopAt {
		fmt.Println("STOPPED")
		select {} // wait for the SIGKILL
	}
	return nil
}

func lastHandle(path string) (tool.Handle, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return tool.Handle{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var h tool.Handle
	err = json.Unmarshal([]byte(lines[len(lines)-1]), &h)
	return h, err
}

// TestKillHelper is the child process; it does nothing in a normal run.
func TestKillHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the child process of the SIGKILL tests")
	}
	opts := &mcptool.Options{TaskPoll: 5 * time.Millisecond, TaskPollMax: 20 * time.Millisecond}
	if os.Getenv("HELPER_ELICIT") == "1" {
		opts.Elicit = func(context.Context, *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
			return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		}
	}
	src, err := mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"v": {URL: os.Getenv("HELPER_URL")}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ts, err := src.ServerTools(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	tl := byName(t, ts)["v__"+os.Getenv("HELPER_TOOL")]
	f, err := os.OpenFile(os.Getenv("HELPER_FILE"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := os.Getenv("HELPER_KEY")
	ctx := callCtx(key, &fileRecorder{f: f, stopAt: os.Getenv("HELPER_STOP_AT")})
	var res tool.Result
	switch mode {
	case "call":
		fmt.Println("CALLING")
		res, err = tl.Call(ctx, nil)
	case "resume":
		h, herr := lastHandle(os.Getenv("HELPER_FILE"))
		if herr != nil {
			t.Fatal(herr)
		}
		res, err = tl.Resume(ctx, key, nil, h)
	}
	switch {
	case errors.Is(err, tool.ErrOutcomeUnknown):
		fmt.Printf("UNKNOWN %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	case err != nil:
		fmt.Printf("ERROR %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	default:
		fmt.Printf("RESULT %s\n", res.Content)
	}
}

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
}

func startChild(t *testing.T, s *v26Server, mode, toolName, key, file, stopAt string, elicit bool) *child {
	t.Helper()
	env := []string{helperEnv + "=" + mode, "HELPER_URL=" + s.url(), "HELPER_TOOL=" + toolName,
		"HELPER_KEY=" + key, "HELPER_FILE=" + file, "HELPER_STOP_AT=" + stopAt}
	if elicit {
		env = append(env, "HELPER_ELICIT=1")
	}
	return startChildEnv(t, "^TestKillHelper$", env...)
}

// startChildEnv starts this test binary running one test, with env added.
func startChildEnv(t *testing.T, run string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
	})
	return c
}

// waitLine returns the first line with the prefix; the test fails if the
// child ends first.
func (c *child) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case l := <-c.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-c.done:
			for {
				select {
				case l := <-c.lines:
					if strings.HasPrefix(l, prefix) {
						return l
					}
				default:
					t.Fatalf("the child ended without printing %q", prefix)
				}
			}
		}
	}
}

func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	_ = c.cmd.Wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed by SIGKILL: %v", c.cmd.ProcessState)
	}
}

func TestSIGKILLAfterTaskHandleStored(t *testing.T) {
	s := newV26Server(t, false)
	file := filepath.Join(t.TempDir(), "handles")
	const key = "run1:c1"
	c := startChild(t, s, "call", "slow_task", key, file, mcptool.HandleTask, false)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	if p, e := s.counts(key); p != 1 || e != 1 {
		t.Fatalf("after the kill: posts %d, executions %d; want 1, 1", p, e)
	}
	s.complete(key)
	r := startChild(t, s, "resume", "slow_task", key, file, "", false)
	if got := r.waitLine(t, "RESULT"); got != "RESULT report for "+key {
		t.Fatalf("resume: %s", got)
	}
	if p, e := s.counts(key); p != 1 || e != 1 {
		t.Fatalf("after the resume: posts %d, executions %d; want 1, 1", p, e)
	}
	if n := s.taskGets("task-1"); n < 1 {
		t.Fatalf("the resumed call did not poll the stored task (%d tasks/get)", n)
	}
}

func TestSIGKILLDuringTaskPolling(t *testing.T) {
	s := newV26Server(t, false)
	file := filepath.Join(t.TempDir(), "handles")
	const key = "run1:c1"
	polled := make(chan struct{})
	var once sync.Once
	s.setOnGet(func(_ string, n int) {
		if n == 3 {
			once.Do(func() { close(polled) })
		}
	})
	c := startChild(t, s, "call", "slow_task", key, file, "", false)
	<-polled
	c.kill(t)
	s.complete(key)
	r := startChild(t, s, "resume", "slow_task", key, file, "", false)
	if got := r.waitLine(t, "RESULT"); got != "RESULT report for "+key {
		t.Fatalf("resume: %s", got)
	}
	if p, e := s.counts(key); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}

func TestSIGKILLBetweenInputRequiredAndContinuation(t *testing.T) {
	s := newV26Server(t, false)
	file := filepath.Join(t.TempDir(), "handles")
	const key = "run1:c1"
	c := startChild(t, s, "call", "pay", key, file, mcptool.HandleInput+"/"+mcptool.StepAsked, true)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	if p, e := s.counts(key); p != 1 || e != 0 {
		t.Fatalf("after the kill: posts %d, executions %d; want 1, 0", p, e)
	}
	r := startChild(t, s, "resume", "pay", key, file, "", true)
	if got := r.waitLine(t, "RESULT"); got != "RESULT paid" {
		t.Fatalf("resume: %s", got)
	}
	// The continuation, with the same key: two POSTs, one payment.
	if p, e := s.counts(key); p != 2 || e != 1 {
		t.Fatalf("after the resume: posts %d, executions %d; want 2, 1", p, e)
	}
}

func TestSIGKILLDuringContinuationSend(t *testing.T) {
	s := newV26Server(t, false)
	file := filepath.Join(t.TempDir(), "handles")
	const key = "run1:c1"
	c := startChild(t, s, "call", "pay", key, file, mcptool.HandleInput+"/"+mcptool.StepSending, true)
	c.waitLine(t, "STOPPED")
	c.kill(t)
	r := startChild(t, s, "resume", "pay", key, file, "", true)
	if got := r.waitLine(t, "UNKNOWN"); !strings.Contains(got, "may have been sent") {
		t.Fatalf("resume: %s", got)
	}
	if p, e := s.counts(key); p != 1 || e != 0 {
		t.Fatalf("posts %d, executions %d; want 1, 0 (the continuation is never sent again)", p, e)
	}
}
