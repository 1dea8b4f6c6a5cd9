package mcptool_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// The fault tests run a real MCP server process (testdata/testserver) that
// records every tools/call it receives and every side effect in a journal
// file, then dies or hangs while the call is in flight. They drive it
// through actoviq.Runtime with the scripted model.

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// testServer builds testdata/testserver once per test binary.
func testServer(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not available to build the test MCP server")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "mcptool-testserver-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "testserver")
		out, err := exec.Command(goBin, "build", "-o", buildBin, "./testdata/testserver").CombinedOutput()
		if err != nil {
			buildErr = err
			buildBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build testserver: %v\n%s", buildErr, buildBin)
	}
	return buildBin
}

func removeTestServer() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// journal is what the test server recorded.
type journal struct {
	lines []string
}

func readJournal(t *testing.T, path string) journal {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var j journal
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			j.lines = append(j.lines, l)
		}
	}
	return j
}

// keys returns the idempotency keys of the lines of a kind ("request" or
// "effect") for a tool.
func (j journal) keys(kind, toolName string) []string {
	var out []string
	for _, l := range j.lines {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == kind && f[1] == "tool="+toolName {
			out = append(out, strings.TrimPrefix(f[2], "key="))
		}
	}
	return out
}

func (j journal) pid(kind, key string) int {
	for _, l := range j.lines {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == kind && f[2] == "key="+key {
			n, _ := strconv.Atoi(strings.TrimPrefix(f[3], "pid="))
			return n
		}
	}
	return 0
}

const faultSecret = "fault-secret-3c9d1e52"

type faultSetup struct {
	ctx     context.Context
	src     *mcptool.Source
	rt      *actoviq.Runtime
	tools   []tool.Tool
	journal string
	mu      sync.Mutex
	events  []actoviq.Event
}

func newFaultSetup(t *testing.T) *faultSetup {
	t.Helper()
	bin := testServer(t)
	f := &faultSetup{ctx: context.Background(), journal: filepath.Join(t.TempDir(), "journal.log")}
	// The source is created (and its cleanup registered) before the
	// runtime, so the runtime closes first.
	f.src = newSource(t, map[string]*mcptool.ServerConfig{
		"faulty": {Command: bin, Args: []string{"-log", f.journal}, Env: map[string]string{"FAULTY_TOKEN": faultSecret}, TrustAnnotations: true},
	}, &mcptool.Options{TerminateWait: 100 * time.Millisecond})
	var err error
	if f.tools, err = f.src.Tools(f.ctx); err != nil {
		t.Fatal(err)
	}
	if f.rt, err = actoviq.New(storemem.New(nil), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.rt.Close() })
	return f
}

func (f *faultSetup) agent(limits actoviq.Limits, turns ...scripted.Turn) *actoviq.AgentSpec {
	return &actoviq.AgentSpec{ID: "faulty-agent", Provider: scripted.New(turns...), Model: "scripted-1", Tools: f.tools, Limits: limits}
}

func (f *faultSetup) sink() actoviq.EventSink {
	return actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	})
}

// noLeak checks that the secret in the server's env reached no event and
// no interruption.
func (f *faultSetup) noLeak(t *testing.T, res *actoviq.RunResult) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range f.events {
		if strings.Contains(string(ev.Data), faultSecret) {
			t.Fatalf("event %s leaks the secret: %s", ev.Type, ev.Data)
		}
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), faultSecret) {
		t.Fatalf("run result leaks the secret: %s", b)
	}
}

func tc(id, name, args string) scripted.ToolCall {
	return scripted.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func TestFaultWrite(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"die", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFaultSetup(t)
			a := f.agent(actoviq.Limits{ToolTimeout: 2 * time.Second},
				scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "faulty__write", `{"text":"first","mode":"`+mode+`"}`)}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c2", "faulty__write", `{"text":"second","mode":"ok"}`)}},
				scripted.Turn{Text: "done"})
			if got := a.Tools[1].Spec(); got.Name != "faulty__write" || got.Effect != tool.SideEffect {
				t.Fatalf("write tool spec %+v", got)
			}
			start := time.Now()
			res, err := f.rt.Run(f.ctx, a, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("write twice")}}, f.sink())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: run stopped after %s", mode, time.Since(start))
			// The run stops with a reconciliation interruption.
			if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
				t.Fatalf("want one interruption: %+v", res)
			}
			in := res.Interruptions[0]
			if in.Kind != actoviq.InterruptReconciliation || in.CallID != "c1" || in.IdempotencyKey != "r1:c1" || in.Effect != "side-effect" {
				t.Fatalf("interruption %+v", in)
			}
			t.Logf("%s: interruption reason: %s", mode, in.Reason)
			info, err := f.rt.Get(f.ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if en := info.Ledger[0]; en.State != store.LedgerUnknown || en.Attempt != 1 {
				t.Fatalf("ledger entry %+v", en)
			}
			// The side effect happened once, and the call was sent once.
			j := readJournal(t, f.journal)
			if got := strings.Join(j.keys("effect", "write"), " "); got != "r1:c1" {
				t.Fatalf("effects %q", got)
			}
			if got := strings.Join(j.keys("request", "write"), " "); got != "r1:c1" {
				t.Fatalf("requests %q: the call was re-sent", got)
			}
			// An operator confirms the effect from the journal; the model's
			// next call on that server reconnects and works.
			res, err = f.rt.Resume(f.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideCommitted, By: "operator",
				Reason: "journal shows the write", Result: "wrote first"}}, Sinks: []actoviq.EventSink{f.sink()}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted {
				t.Fatalf("after the decision: %+v", res)
			}
			j = readJournal(t, f.journal)
			if got := strings.Join(j.keys("effect", "write"), " "); got != "r1:c1 r1:c2" {
				t.Fatalf("effects %q", got)
			}
			if got := strings.Join(j.keys("request", "write"), " "); got != "r1:c1 r1:c2" {
				t.Fatalf("requests %q", got)
			}
			if n := f.src.Connections("faulty"); n != 2 {
				t.Fatalf("%d connections, want 2 (one reconnect)", n)
			}
			// The server process of the failed call is gone (it exited, or
			// was terminated when its connection was dropped).
			pid := j.pid("effect", "r1:c1")
			if pid == 0 || pid == j.pid("effect", "r1:c2") {
				t.Fatalf("pids %d %d: no new process", pid, j.pid("effect", "r1:c2"))
			}
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("process %d of the failed call still runs", pid)
				}
				time.Sleep(20 * time.Millisecond) // polling a pid; no signal to wait on
			}
			f.noLeak(t, res)
		})
	}
}

func TestFaultRead(t *testing.T) {
	t.Parallel()
	f := newFaultSetup(t)
	if f.tools[0].Spec().Name != "faulty__read" || f.tools[0].Spec().Effect != tool.Read {
		t.Fatalf("read tool spec %+v", f.tools[0].Spec())
	}
	a := f.agent(actoviq.Limits{},
		scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "faulty__read", `{"mode":"die"}`)}},
		// The model decides to call again: a new call, with a new key.
		scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c2", "faulty__read", `{"mode":"ok"}`)}},
		scripted.Turn{Text: "done"})
	res, err := f.rt.Run(f.ctx, a, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("read")}}, f.sink())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || len(res.Interruptions) != 0 {
		t.Fatalf("a read with an unknown outcome must not interrupt: %+v", res)
	}
	info, err := f.rt.Get(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]*item.ToolResult{}
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			results[it.ToolResult.CallID] = it.ToolResult
		}
	}
	if r := results["c1"]; r == nil || !r.IsError || !strings.Contains(r.Content, "unknown") || !strings.Contains(r.Content, "not retried") {
		t.Fatalf("c1 result %+v", r)
	}
	if r := results["c2"]; r == nil || r.IsError || !strings.Contains(r.Content, "bytes of journal") {
		t.Fatalf("c2 result %+v", r)
	}
	j := readJournal(t, f.journal)
	if got := strings.Join(j.keys("request", "read"), " "); got != "r1:c1 r1:c2" {
		t.Fatalf("requests %q: want one per logical call, each with its own key", got)
	}
	if n := f.src.Connections("faulty"); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	f.noLeak(t, res)
}
