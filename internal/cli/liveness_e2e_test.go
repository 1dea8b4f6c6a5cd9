package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangingModel is an OpenAI-compatible server that never answers: a run
// that calls it holds its claim until it is killed. entered receives once
// per request.
func hangingModel(t *testing.T) (url string, entered chan struct{}) {
	entered = make(chan struct{}, 8)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/v1", entered
}

// startInModelCall starts the binary with a run whose model call hangs and
// returns once the call reached the server; stop SIGKILLs and reaps it.
func (x *e2e) startInModelCall(extra ...string) (cmd *exec.Cmd, stop func()) {
	x.t.Helper()
	url, entered := hangingModel(x.t)
	args := append([]string{"run", "--store", x.store, "--run-id", "r1", "--model", "openai:gpt-test", "--base-url", url}, extra...)
	cmd = exec.Command(binary(x.t), append(args, "hello")...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test-000000")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Start(); err != nil {
		x.t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}
	x.t.Cleanup(stop)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		stop()
		x.t.Fatalf("the run never called the model\nstderr:\n%s", errb.String())
	}
	return cmd, stop
}

type listedRow struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	StoredStatus string `json:"stored_status"`
	Holder       *struct {
		Host string `json:"host"`
		PID  int    `json:"pid"`
		Live bool   `json:"live"`
		Dead bool   `json:"dead"`
	} `json:"holder"`
}

func (x *e2e) list(status string) []listedRow {
	x.t.Helper()
	r := actoviqBin(x.t, nil, "runs", "list", "--store", x.store, "--status", status, "--json")
	wantExit(x.t, r, 0, "runs list --status "+status)
	var out struct {
		Runs []listedRow `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		x.t.Fatalf("runs list --json: %v\n%s", err, r.stdout)
	}
	return out.Runs
}

// A first drive SIGKILLed mid-call is listed as stalled (not running, not
// interrupted), and resumes.
func TestBinaryKilledFirstDriveIsStalled(t *testing.T) {
	x := newE2E(t)
	x.runUntil(nil, demoHangMarker,
		"run", "--store", x.store, "--run-id", "r1", "--approve", "none", "--model", "scripted:"+x.sc, "--demo-bank", x.bank, "--demo-crash", "before-pay", "pay INV-42")
	if rows := x.list("stalled"); len(rows) != 1 || rows[0].ID != "r1" || rows[0].StoredStatus != "running" ||
		rows[0].Holder == nil || rows[0].Holder.Live || !rows[0].Holder.Dead {
		t.Fatalf("runs list --status stalled = %+v", rows)
	}
	if rows := x.list("running"); len(rows) != 0 {
		t.Fatalf("runs list --status running lists the dead run: %+v", rows)
	}
	r := actoviqBin(t, nil, "runs", "list", "--store", x.store)
	if !strings.Contains(r.stdout, "stalled") || !strings.Contains(r.stdout, "actoviq resume RUN") {
		t.Fatalf("runs list:\n%s", r.stdout)
	}
	r = actoviqBin(t, nil, "runs", "show", "r1", "--store", x.store)
	if !strings.Contains(r.stdout, "stalled: stored as running") || !strings.Contains(r.stdout, "actoviq resume r1") {
		t.Fatalf("runs show:\n%s", r.stdout)
	}
	// No wait for the lease: the holder is dead. The started payment goes
	// to reconciliation, as after any crash.
	r = actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, 3, "resume of the stalled run")
	if rows := x.list("stalled"); len(rows) != 0 {
		t.Fatalf("still stalled after resume: %+v", rows)
	}
	if rows := x.list("interrupted"); len(rows) != 1 || rows[0].ID != "r1" {
		t.Fatalf("runs list --status interrupted = %+v", rows)
	}
}

// A resume refused because another live process drives the run has its
// own exit code and names that process.
func TestBinaryResumeOfHeldRunExits4(t *testing.T) {
	x := newE2E(t)
	cmd, stop := x.startInModelCall()
	rows := x.list("running")
	if len(rows) != 1 || rows[0].Holder == nil || rows[0].Holder.PID != cmd.Process.Pid || !rows[0].Holder.Live {
		t.Fatalf("runs list --status running = %+v, want r1 held by pid %d", rows, cmd.Process.Pid)
	}
	r := actoviqBin(t, nil, "resume", "r1", "--store", x.store)
	wantExit(t, r, ExitHeld, "resume of a run another process drives")
	host, _ := os.Hostname()
	for _, want := range []string{fmt.Sprintf("process %d on host %s", cmd.Process.Pid, host), "wait for it to finish", "stop that process"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("message lacks %q:\n%s", want, r.stderr)
		}
	}
	stop()
	if rows := x.list("stalled"); len(rows) != 1 {
		t.Fatalf("after the kill: stalled = %+v", rows)
	}
}

// stickyServer is a minimal MCP stdio server in Node that, like several
// real ones, neither exits when its stdin closes nor on SIGTERM. It writes
// its pid to STICKY_PID_FILE.
const stickyServer = `
const fs = require('fs');
fs.writeFileSync(process.env.STICKY_PID_FILE, String(process.pid));
process.on('SIGTERM', () => {});
process.stdin.on('end', () => {});
setInterval(() => {}, 1 << 30);
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    let m; try { m = JSON.parse(line); } catch { continue; }
    if (m.id === undefined) continue;
    let result;
    if (m.method === 'initialize') result = {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'sticky', version: '1.0.0'}};
    else if (m.method === 'tools/list') result = {tools: [{name: 'noop', description: 'Does nothing.', inputSchema: {type: 'object'}}]};
    else if (m.method === 'ping') result = {};
    if (result === undefined) {
      process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'unknown method'}}) + '\n');
    } else {
      process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, result}) + '\n');
    }
  }
});
`

// procGone reports whether pid no longer runs (absent, or a zombie).
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// A SIGKILLed actoviq run leaves no orphaned stdio MCP server: the kernel
// kills the server with it (parent-death signal), even one that ignores
// stdin closing and SIGTERM.
func TestBinaryKilledRunLeavesNoMCPServer(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux) to watch the server process")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: no stdio MCP server to start")
	}
	x := newE2E(t)
	script := filepath.Join(x.dir, "sticky.js")
	pidFile := filepath.Join(x.dir, "sticky.pid")
	if err := os.WriteFile(script, []byte(stickyServer), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"sticky": map[string]any{
		"command": node, "args": []string{script}, "env": map[string]string{"STICKY_PID_FILE": pidFile}}}})
	mcpCfg := filepath.Join(x.dir, "mcp.json")
	if err := os.WriteFile(mcpCfg, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stop := x.startInModelCall("--mcp-config", mcpCfg)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the MCP server did not start: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || procGone(pid) {
		t.Fatalf("server pid %q not running", b)
	}
	t.Cleanup(func() {
		if !procGone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // never leave it behind
		}
	})
	stop() // SIGKILL the run
	deadline := time.Now().Add(10 * time.Second)
	for !procGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("MCP server %d outlived the SIGKILLed run", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's pid; no signal to wait on
	}
}
