package actoviq_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// TestMCPFilesystemApprovalE2E runs an agent (scripted model) over the real
// npm server-filesystem through the engine: the destructive write_file
// needs approval, is approved, runs once, and a read sees the file.
func TestMCPFilesystemApprovalE2E(t *testing.T) {
	dir := os.Getenv("ACTOVIQ_TEST_MCP_DIR")
	if dir == "" {
		t.Skip("ACTOVIQ_TEST_MCP_DIR is not set: run scripts/mcp-servers and export its output to run the MCP end-to-end test")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP end-to-end test needs Node.js")
	}
	t.Parallel()
	ctx := context.Background()
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	root := t.TempDir()
	file := filepath.Join(root, "greeting.txt")

	// The configuration file, as a user would write it.
	doc, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{
			"command":          "node",
			"args":             []string{entry, root},
			"trustAnnotations": true,
			"allowedTools":     []string{"write_file", "read_text_file"},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mcptool.ParseConfig(doc)
	if err != nil {
		t.Fatal(err)
	}
	// The source outlives the runtime: its cleanup is registered first, so
	// it runs after the runtime's.
	src, err := mcptool.New(cfg, &mcptool.Options{TerminateWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	tools, err := src.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Spec().Name != "fs__read_text_file" || tools[0].Spec().Effect != tool.Read ||
		tools[1].Spec().Name != "fs__write_file" || tools[1].Spec().Effect != tool.SideEffect {
		t.Fatalf("tools: %v", []tool.Spec{tools[0].Spec(), tools[1].Spec()})
	}
	st := storemem.New(nil)
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })

	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "fs__write_file",
			Arguments: json.RawMessage(`{"path":` + jsonQuoteMCP(file) + `,"content":"hello from actoviq"}`)}}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "fs__read_text_file",
			Arguments: json.RawMessage(`{"path":` + jsonQuoteMCP(file) + `}`)}}},
		scripted.Turn{Text: "The file says hello."})
	agent := &actoviq.AgentSpec{ID: "fs-agent", Provider: model, Model: "scripted-1", Tools: tools,
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}

	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("write a greeting")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
		t.Fatalf("want an approval interruption: %+v", res)
	}
	in := res.Interruptions[0]
	if in.Kind != actoviq.InterruptApproval || in.Tool != "fs__write_file" || in.Effect != "side-effect" || in.IdempotencyKey != "r1:c1" {
		t.Fatalf("interruption %+v", in)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the file was written before approval: %v", err)
	}

	if err := rt.Decide(ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice", Reason: "harmless"}); err != nil {
		t.Fatal(err)
	}
	res, err = rt.Resume(ctx, agent, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "The file says hello." {
		t.Fatalf("after approval: %+v", res)
	}
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "hello from actoviq" {
		t.Fatalf("file: %q %v", b, err)
	}

	info, err := rt.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range info.Ledger {
		if en.State != store.LedgerCommitted || en.Attempt != 1 {
			t.Fatalf("ledger entry %s: %+v", en.CallID, en)
		}
	}
	results := map[string]*item.ToolResult{}
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			results[it.ToolResult.CallID] = it.ToolResult
		}
	}
	if r := results["c2"]; r == nil || r.IsError || r.Content != "hello from actoviq" {
		t.Fatalf("read result %+v", r)
	}
	// The write was started once.
	evs, err := st.EventList(ctx, &store.EventListParams{Tenant: rt.Tenant(), RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, ev := range evs {
		if ev.Type == "tool.started" {
			var d struct {
				CallID string `json:"call_id"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			if d.CallID == "c1" {
				started++
			}
		}
	}
	if started != 1 {
		t.Fatalf("write_file started %d times", started)
	}
	if n := src.Connections("fs"); n != 1 {
		t.Fatalf("%d connections to the filesystem server, want 1 reused across discovery, runs and calls", n)
	}
}

func jsonQuoteMCP(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
