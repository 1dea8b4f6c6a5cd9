package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	select {
	case s.ch <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// wait blocks until the output matches re (it is written once, at start).
func (s *syncBuffer) wait(t *testing.T, re *regexp.Regexp, exited <-chan int) []string {
	t.Helper()
	for {
		if m := re.FindStringSubmatch(s.String()); m != nil {
			return m
		}
		select {
		case <-s.ch:
		case code := <-exited:
			t.Fatalf("console exited %d before printing %s: %s", code, re, s.String())
		}
	}
}

// startConsole runs `actoviq console` in-process until the test ends.
func startConsole(t *testing.T, h *harness, args ...string) (out *syncBuffer, stderr *syncBuffer, stop func() int) {
	t.Helper()
	out, stderr = &syncBuffer{ch: make(chan struct{}, 1)}, &syncBuffer{ch: make(chan struct{}, 1)}
	e := &env{stdout: out, stderr: stderr, getenv: func(k string) string { return h.envs[k] }, executable: os.Executable}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		exited <- e.main(ctx, append([]string{"console", "--store", h.store, "--listen", "127.0.0.1:0"}, args...))
	}()
	out.wait(t, regexp.MustCompile(`on http://127\.0\.0\.1:\d+\n`), exited)
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() { cancel(); code = <-exited })
		return code
	}
	t.Cleanup(func() { stop() })
	return out, stderr, stop
}

func apiCall(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %d %q", method, url, res.StatusCode, b)
	}
	return res.StatusCode, v
}

func TestConsoleCommandApprovesAndResumes(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	out, _, stop := startConsole(t, h)
	m := out.wait(t, regexp.MustCompile(`sign in at (http://127\.0\.0\.1:\d+)/login#token=([0-9a-f]{48})\n`), nil)
	base, token := m[1], m[2]
	if n := strings.Count(out.String(), token); n != 1 {
		t.Errorf("the generated token is printed %d times", n)
	}
	if code, v := apiCall(t, "GET", base+"/api/v1/runs?status=interrupted", token+"x", ""); code != 401 || v["code"] != "unauthorized" {
		t.Fatalf("bad token: %d %v", code, v)
	}
	code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", token, `{"call_id":"call_pay","kind":"approve","by":"alice","note":"invoice checked"}`)
	if code != 200 {
		t.Fatalf("approve: %d %v", code, v)
	}
	if h.bankLines() != 0 {
		t.Fatal("paid before resume")
	}
	code, v = apiCall(t, "POST", base+"/api/v1/runs/r1/resume", token, "")
	if code != 200 || v["status"] != "completed" {
		t.Fatalf("resume: %d %v", code, v)
	}
	if h.bankLines() != 1 {
		t.Fatalf("%d payments", h.bankLines())
	}
	if c := stop(); c != ExitCompleted {
		t.Fatalf("console exit %d", c)
	}
	if !strings.Contains(out.String(), "console stopped") {
		t.Errorf("output: %s", out)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if !strings.Contains(h.stdout.String(), "approve by alice") {
		t.Fatalf("runs show: %s", h.stdout)
	}
}

func TestConsoleCommandShowsResumeCommand(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	tokenFile := filepath.Join(h.dir, "token")
	os.WriteFile(tokenFile, []byte("file-token-0123456789abcdef\n"), 0o600)
	out, _, _ := startConsole(t, h, "--token-file", tokenFile, "--operator", "bob", "--resume", "none", "--tenant", "default")
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	if strings.Contains(out.String(), "file-token") {
		t.Fatalf("a given token is printed: %s", out)
	}
	code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/resume", "file-token-0123456789abcdef", "")
	want := "actoviq resume r1 --store " + h.store
	if code != 501 || v["code"] != "resume_elsewhere" || v["command"] != want {
		t.Fatalf("resume: %d %v, want command %q", code, v, want)
	}
	code, v = apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", "file-token-0123456789abcdef", `{"call_id":"call_pay","kind":"approve"}`)
	if code != 200 || v["by"] != "bob" {
		t.Fatalf("approve with a bound token: %d %v", code, v)
	}
}

func TestConsoleCommandEnvTokenAndRefusals(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.envs["ACTOVIQ_CONSOLE_TOKEN"] = "env-token-0123456789abcdef"
	out, _, _ := startConsole(t, h)
	if strings.Contains(out.String(), "env-token") || !strings.Contains(out.String(), "with the console's token") {
		t.Fatalf("output: %s", out)
	}
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	if code, _ := apiCall(t, "GET", base+"/api/v1/runs/r1", "env-token-0123456789abcdef", ""); code != 200 {
		t.Fatalf("env token: %d", code)
	}

	short := filepath.Join(h.dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0"},
		{"--listen", ":0"},
		{"--listen", "nonsense"},
		{"--listen", "127.0.0.1:0", "--tls-cert", "c.pem"},
		{"--token-file", filepath.Join(h.dir, "missing")},
		{"--token-file", short},
		{"--operator", "console"},
	} {
		if code := h.run(append([]string{"console", "--store", h.store}, args...)...); code != ExitUsage {
			t.Errorf("console %v: exit %d, want 2 (%s)", args, code, h.stderr)
		}
		if msg := h.stderr.String(); msg == "" {
			t.Errorf("console %v: no message", args)
		}
	}
	h.want(ExitUsage, "console", "--store", "sqlite:"+filepath.Join(h.dir, "none.db"))

}

func TestConsoleCommandHandsResumeToTheWorkers(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	h.envs["ACTOVIQ_CONSOLE_TOKEN"] = "env-token-0123456789abcdef"
	out, _, _ := startConsole(t, h, "--resume", "queue")
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	if !strings.Contains(out.String(), "actoviq worker --store "+h.store) {
		t.Fatalf("no worker hint in the banner: %s", out)
	}
	tok := "env-token-0123456789abcdef"
	// No worker serves the run's agent yet: the queue is not offered (it
	// would not get the run driven); the command that resumes it is.
	if code, v := apiCall(t, "GET", base+"/api/v1/runs/r1", tok, ""); code != 200 || v["resume"].(map[string]any)["via"] != "command" ||
		v["resume"].(map[string]any)["command"] != "actoviq resume r1 --store "+h.store {
		t.Fatalf("run without a worker: %d %v", code, v["resume"])
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", tok, `{"call_id":"call_pay","kind":"approve","by":"alice"}`); code != 200 {
		t.Fatalf("approve: %d %v", code, v)
	}
	// A worker starts: now the queue is offered and takes the run.
	we := &env{stdout: &syncBuffer{ch: make(chan struct{}, 1)}, stderr: &syncBuffer{ch: make(chan struct{}, 1)},
		getenv: func(k string) string { return h.envs[k] }, executable: os.Executable}
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan int, 1)
	go func() { wdone <- we.main(wctx, []string{"worker", "--store", h.store, "--poll", "20ms"}) }()
	defer func() { wcancel(); <-wdone }()
	st, err := storesqlite.Open(strings.TrimPrefix(h.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		c, err := rt.AgentServed(ctx, cliAgentID)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the worker never said it serves the command's agent")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if code, v := apiCall(t, "GET", base+"/api/v1/runs/r1", tok, ""); code != 200 || v["resume"].(map[string]any)["via"] != "queue" ||
		!strings.Contains(v["resume"].(map[string]any)["description"].(string), "workers' queue") {
		t.Fatalf("run with a worker: %d %v", code, v["resume"])
	}
	code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/resume", tok, "")
	if code != 200 || v["status"] != "queued" {
		t.Fatalf("resume: %d %v", code, v)
	}
	res, err := rt.Wait(ctx, "r1")
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("wait: %v %+v", err, res)
	}
	if h.bankLines() != 1 {
		t.Fatalf("%d payments", h.bankLines())
	}
}

// TestConsoleCommandRefusesOtherHosts: the console answers its address and
// each --host, and refuses with 421 a Host it does not serve (a DNS
// rebinding page's own name).
func TestConsoleCommandRefusesOtherHosts(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.envs["ACTOVIQ_CONSOLE_TOKEN"] = "env-token-0123456789abcdef"
	out, _, _ := startConsole(t, h, "--host", "console.example.com")
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	for host, want := range map[string]int{"evil.example:18080": 421, "console.example.com": 200, "localhost": 200, "": 200} {
		req, _ := http.NewRequest("GET", base+"/login", nil)
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, res.StatusCode, want)
		}
	}
	if code := h.run("console", "--store", h.store, "--host", "https://x/"); code != ExitUsage || !strings.Contains(h.stderr.String(), "--host") {
		t.Errorf("--host with a URL: exit %d %s", code, h.stderr)
	}
}

// TestStoreReadableByOthersWarns: a SQLite store other users can read is
// used, with a warning on stderr naming it and the fix.
func TestStoreReadableByOthersWarns(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	path := strings.TrimPrefix(h.store, "sqlite:")
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("a new store: %v %v, want -rw-------", st.Mode().Perm(), err)
	}
	h.want(ExitCompleted, "runs", "list", "--store", h.store)
	if strings.Contains(h.stderr.String(), "warning") {
		t.Errorf("a private store warned: %s", h.stderr)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	h.want(ExitCompleted, "runs", "list", "--store", h.store)
	if msg := h.stderr.String(); !strings.Contains(msg, "actoviq: warning: "+path+" can be read") || !strings.Contains(msg, "chmod 600") {
		t.Errorf("stderr: %q", msg)
	}
}

// TestReview27ConsoleWarnsOfAnUnboundTokenUnderAPolicy: with an approvals
// policy, a console token bound to no name lets its holder decide under
// any name; the console says so when it starts, and not with --operator.
func TestReview27ConsoleWarnsOfAnUnboundTokenUnderAPolicy(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	pol := filepath.Join(h.dir, "approvals.json")
	if err := os.WriteFile(pol, []byte(`{"rules":[{"name":"all","approve":["alice"],"reject":["*"],"settle":["*"],"approvers":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, stop := startConsole(t, h, "--approvals", pol)
	stop()
	if !strings.Contains(stderr.String(), "bound to no name") {
		t.Errorf("no warning for an unbound token under a policy: %q", stderr)
	}
	_, stderr, stop = startConsole(t, h, "--approvals", pol, "--operator", "alice")
	stop()
	if strings.Contains(stderr.String(), "bound to no name") {
		t.Errorf("warned with --operator: %q", stderr)
	}
}
