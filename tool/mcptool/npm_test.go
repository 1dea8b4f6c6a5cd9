package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// npmServer returns the entry point of a pinned npm reference server, or
// skips the test saying why. scripts/mcp-servers installs them and prints
// the directory for ACTOVIQ_TEST_MCP_DIR.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv("ACTOVIQ_TEST_MCP_DIR")
	if dir == "" {
		t.Skip("ACTOVIQ_TEST_MCP_DIR is not set: run scripts/mcp-servers and export its output to test against the npm reference servers")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the npm reference-server tests need Node.js")
	}
	p := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("ACTOVIQ_TEST_MCP_DIR=%s has no %s (run scripts/mcp-servers): %v", dir, pkg, err)
	}
	return p
}

// fastClose keeps the reference servers (which ignore stdin closing) from
// costing TerminateWait each.
var fastClose = &mcptool.Options{TerminateWait: 100 * time.Millisecond}

func discover(t *testing.T, src *mcptool.Source, name string) map[string]*mcptool.Tool {
	t.Helper()
	ts, err := src.ServerTools(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return byName(t, ts)
}

// checkEverything runs the checks shared by the stdio and HTTP transports
// of server-everything.
func checkEverything(t *testing.T, src *mcptool.Source, name string, trusted bool) {
	t.Helper()
	ts := discover(t, src, name)
	if len(ts) < 10 {
		t.Fatalf("only %d tools", len(ts))
	}
	for n, x := range ts {
		if x.Annotations() == nil {
			t.Errorf("%s: server-everything sends annotations on every tool", n)
		}
		if !trusted && x.Spec().Effect != tool.SideEffect {
			t.Errorf("untrusted %s: effect %s", n, x.Spec().Effect)
		}
	}
	if trusted {
		want := map[string]tool.Effect{"get-sum": tool.Read, "echo": tool.Read,
			// idempotentHint:true with an explicit destructiveHint:false
			// (FACTS.md §3 lists it without destructiveHint; the
			// 2026.8.31 source sends false).
			"gzip-file-as-resource":    tool.IdempotentWrite,
			"toggle-simulated-logging": tool.SideEffect} // every hint false
		for n, eff := range want {
			x := ts[name+"__"+n]
			if x == nil {
				t.Fatalf("no tool %s", n)
			}
			if x.Spec().Effect != eff {
				t.Errorf("%s: effect %s, want %s", n, x.Spec().Effect, eff)
			}
		}
		if a := ts[name+"__gzip-file-as-resource"].Annotations(); a.DestructiveHint == nil || *a.DestructiveHint || !a.IdempotentHint {
			t.Errorf("gzip-file-as-resource annotations changed: %+v", a)
		}
	}
	sum := ts[name+"__get-sum"]
	ctx := tool.WithIdempotencyKey(context.Background(), "run:call")
	res, err := sum.Call(ctx, json.RawMessage(`{"a":2,"b":3}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "is 5") {
		t.Fatalf("get-sum: %+v %v", res, err)
	}
	// Bad arguments come back as an isError result, not as an error.
	res, err = sum.Call(ctx, json.RawMessage(`{"a":"x","b":1}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "-32602") {
		t.Fatalf("get-sum with bad args: %+v %v", res, err)
	}
	// Through a runner our own validation refuses them first; nothing is sent.
	r, err := tool.NewRunner([]tool.Tool{sum}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, &tool.Call{Name: sum.Spec().Name, Args: json.RawMessage(`{"a":"x","b":1}`)}); !errors.Is(err, tool.ErrValidation) {
		t.Fatalf("runner: %v", err)
	}
	if n := src.Connections(name); n != 1 {
		t.Fatalf("%d connections, want 1 reused", n)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	entry := npmServer(t, "server-everything")
	const secret = "stdio-secret-4e1f0a77"
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
			t.Parallel()
			src, err := mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
				"every": {Command: "node", Args: []string{entry, "stdio"}, Env: map[string]string{"ACTOVIQ_TEST_SECRET": secret},
					TrustAnnotations: trusted},
			}}, fastClose)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			checkEverything(t, src, "every", trusted)
			t.Logf("connect, list and 2 calls over stdio: %s", time.Since(start))
			// The server prints its environment: our secret is scrubbed.
			res, err := discover(t, src, "every")["every__get-env"].Call(context.Background(), nil)
			if err != nil || !strings.Contains(res.Content, "ACTOVIQ_TEST_SECRET") || strings.Contains(res.Content, secret) {
				t.Fatalf("get-env: leaked or failed (%v): %.300s", err, res.Content)
			}
			if strings.Contains(res.Content, "ACTOVIQ_TEST_MCP_DIR") {
				t.Fatalf("the child inherited this process's whole environment")
			}
			start = time.Now()
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("close took %s", d)
			} else {
				t.Logf("close of a stdio reference server: %s", d)
			}
		})
	}
}

// httpEverything starts server-everything over streamable HTTP on a free
// port. It binds every interface; we only ever reach it on 127.0.0.1. It
// is killed by PID at cleanup, or earlier by calling the returned stop.
func httpEverything(t *testing.T, entry string, port int) (stop func()) {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("server-everything did not listen on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a port; there is no signal to wait on
	}
	return stop
}

func TestEverythingStreamableHTTP(t *testing.T) {
	entry := npmServer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	stop := httpEverything(t, entry, port)
	const token = "http-token-8d2c6b19"
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	// answered is closed when the server has begun answering the POST of
	// the long call: then it holds the call.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	answered := &signalOnAnswer{rt: tr, marker: "trigger-long-running-operation", answered: make(chan struct{})}
	src := newSource(t, map[string]*mcptool.ServerConfig{
		"web": {URL: url, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, TrustAnnotations: true},
	}, &mcptool.Options{LookupEnv: func(string) (string, bool) { return token, true }, HTTPClient: &http.Client{Transport: answered}})
	start := time.Now()
	checkEverything(t, src, "web", true)
	t.Logf("connect, list and 2 calls over streamable HTTP: %s", time.Since(start))

	// The server exits while a call is in flight: outcome unknown, the
	// connection is dropped, nothing is re-sent.
	ts := discover(t, src, "web")
	long, sum := ts["web__trigger-long-running-operation"], ts["web__get-sum"]
	done := make(chan error, 1)
	go func() {
		_, err := long.Call(tool.WithIdempotencyKey(context.Background(), "run:long"), json.RawMessage(`{"duration":30,"steps":30}`))
		done <- err
	}()
	select {
	case <-answered.answered:
	case err := <-done:
		t.Fatalf("the long call ended before the server answered its POST: %v", err)
	}
	stop()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight call did not end when the server died")
	}
	if !errors.Is(err, tool.ErrOutcomeUnknown) || strings.Contains(err.Error(), token) {
		t.Fatalf("in-flight failure: %v", err)
	}
	t.Logf("in-flight failure: %v", err)
	// While the server is down, a call cannot connect: a known failure.
	_, err = sum.Call(context.Background(), json.RawMessage(`{"a":1,"b":1}`))
	if err == nil || errors.Is(err, tool.ErrOutcomeUnknown) || strings.Contains(err.Error(), token) {
		t.Fatalf("call with the server down: %v", err)
	}
	// The server comes back on the same port: the next call reconnects.
	httpEverything(t, entry, port)
	res, err := sum.Call(context.Background(), json.RawMessage(`{"a":1,"b":1}`))
	if err != nil || !strings.Contains(res.Content, "is 2") {
		t.Fatalf("after restart: %+v %v", res, err)
	}
	if n := src.Connections("web"); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestFilesystemAnnotations(t *testing.T) {
	t.Parallel()
	entry := npmServer(t, "server-filesystem")
	dir := t.TempDir()
	for _, trusted := range []bool{true, false} {
		src := newSource(t, map[string]*mcptool.ServerConfig{
			"fs": {Command: "node", Args: []string{entry, dir}, TrustAnnotations: trusted},
		}, fastClose)
		ts := discover(t, src, "fs")
		for _, n := range []string{"write_file", "edit_file", "move_file"} {
			x := ts["fs__"+n]
			if x == nil {
				t.Fatalf("no %s", n)
			}
			if a := x.Annotations(); a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("%s is not destructive: %+v", n, a)
			}
			if x.Spec().Effect != tool.SideEffect {
				t.Errorf("%s: effect %s", n, x.Spec().Effect)
			}
		}
		want := map[string]tool.Effect{"create_directory": tool.IdempotentWrite, "read_text_file": tool.Read, "list_directory": tool.Read}
		for n, eff := range want {
			if !trusted {
				eff = tool.SideEffect
			}
			if got := ts["fs__"+n].Spec().Effect; got != eff {
				t.Errorf("trusted=%v %s: effect %s, want %s", trusted, n, got, eff)
			}
		}
		if !trusted {
			continue
		}
		file := filepath.Join(dir, "note.txt")
		ctx := tool.WithIdempotencyKey(context.Background(), "run:w1")
		args := mustJSON(t, map[string]string{"path": file, "content": "hello"})
		if res, err := ts["fs__write_file"].Call(ctx, args); err != nil || res.IsError {
			t.Fatalf("write_file: %+v %v", res, err)
		}
		r, err := tool.NewRunner([]tool.Tool{ts["fs__read_text_file"]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(ctx, &tool.Call{Name: "fs__read_text_file", Args: mustJSON(t, map[string]string{"path": file}), Key: "run:r1"})
		if err != nil || res.Content != "hello" {
			t.Fatalf("read_text_file: %+v %v", res, err)
		}
		// Outside the allowed directory: an error result from the server.
		res, err = ts["fs__read_text_file"].Call(ctx, mustJSON(t, map[string]string{"path": "/etc/hostname"}))
		if err != nil || !res.IsError {
			t.Fatalf("outside the allowed dir: %+v %v", res, err)
		}
	}
}

func TestMemoryServer(t *testing.T) {
	t.Parallel()
	entry := npmServer(t, "server-memory")
	mem := filepath.Join(t.TempDir(), "memory.jsonl")
	src := newSource(t, map[string]*mcptool.ServerConfig{
		"mem": {Command: "node", Args: []string{entry}, Env: map[string]string{"MEMORY_FILE_PATH": mem}, TrustAnnotations: true},
	}, fastClose)
	ts := discover(t, src, "mem")
	want := map[string]tool.Effect{
		"create_entities": tool.SideEffect, "create_relations": tool.SideEffect, "add_observations": tool.SideEffect,
		"delete_entities": tool.SideEffect, "delete_observations": tool.SideEffect, "delete_relations": tool.SideEffect,
		"read_graph": tool.Read, "search_nodes": tool.Read, "open_nodes": tool.Read,
	}
	for n, eff := range want {
		x := ts["mem__"+n]
		if x == nil {
			t.Fatalf("no %s", n)
		}
		if x.Spec().Effect != eff {
			t.Errorf("%s: effect %s, want %s", n, x.Spec().Effect, eff)
		}
	}
	if a := ts["mem__delete_entities"].Annotations(); a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint {
		t.Errorf("delete_entities annotations: %+v", a)
	}
	r, err := tool.NewRunner([]tool.Tool{ts["mem__create_entities"], ts["mem__read_graph"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := json.RawMessage(`{"entities":[{"name":"actoviq","entityType":"project","observations":["never replays a call"]}]}`)
	if res, err := r.Run(ctx, &tool.Call{Name: "mem__create_entities", Args: args, Key: "run:c1"}); err != nil || res.IsError {
		t.Fatalf("create_entities: %+v %v", res, err)
	}
	res, err := r.Run(ctx, &tool.Call{Name: "mem__read_graph", Key: "run:c2"})
	if err != nil || !strings.Contains(res.Content, "never replays a call") {
		t.Fatalf("read_graph: %+v %v", res, err)
	}
}

// signalOnAnswer closes answered when the response headers to the first
// POST whose body holds marker arrive: the server has the request.
type signalOnAnswer struct {
	rt       http.RoundTripper
	marker   string
	once     sync.Once
	answered chan struct{}
}

func (s *signalOnAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	watch := false
	if r.Method == http.MethodPost && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		watch = bytes.Contains(b, []byte(s.marker))
	}
	res, err := s.rt.RoundTrip(r)
	if err == nil && watch {
		s.once.Do(func() { close(s.answered) })
	}
	return res, err
}
