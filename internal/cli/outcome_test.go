package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// A rejected call's ledger row reads committed (the model got its answer),
// so the row says what the outcome was beside the state; runs show --json
// has one documented style: snake_case, zero values left out, a schema.
func TestRejectedOutcomeAndJSONStyle(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitCompleted, "reject", "r1", "call_pay", "--store", h.store, "--reason", "wrong payee")
	h.want(ExitCompleted, "resume", "r1", "--store", h.store)
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	var row string
	for _, l := range strings.Split(h.stdout.String(), "\n") {
		if strings.Contains(l, "call_pay") && strings.Contains(l, "pay_invoice") {
			row = l
		}
	}
	if !strings.Contains(row, "committed") || !strings.Contains(row, "rejected") {
		t.Fatalf("ledger row %q: want the state (committed) and the outcome (rejected)\n%s", row, h.stdout)
	}

	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store, "--json")
	raw := h.stdout.String()
	for _, bad := range []string{`"ID"`, `"Deadline"`, `"0001-01-01T00:00:00Z"`, `"deadline"`, `"Ledger"`, `"Tenant"`, `"RunID"`} {
		if strings.Contains(raw, bad) {
			t.Errorf("runs show --json has %s:\n%s", bad, raw)
		}
	}
	var v struct {
		Schema int    `json:"schema"`
		ID     string `json:"id"`
		Status string `json:"status"`
		Ledger []struct {
			CallID  string `json:"call_id"`
			State   string `json:"state"`
			Outcome string `json:"outcome"`
		} `json:"ledger"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != 1 || v.ID != "r1" || v.Status != "completed" || len(v.Ledger) != 2 {
		t.Fatalf("runs show --json = %+v", v)
	}
	if l := v.Ledger[1]; l.CallID != "call_pay" || l.State != "committed" || l.Outcome != "rejected" {
		t.Errorf("ledger[1] = %+v, want call_pay committed, outcome rejected", l)
	}

	h.want(ExitCompleted, "runs", "list", "--store", h.store, "--json")
	var list struct {
		Schema int `json:"schema"`
		Runs   []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &list); err != nil || list.Schema != 1 || len(list.Runs) != 1 || list.Runs[0].ID != "r1" {
		t.Fatalf("runs list --json: %v\n%s", err, h.stdout)
	}
	if strings.Contains(h.stdout.String(), `"session_id"`) {
		t.Errorf("runs list --json prints an empty session id:\n%s", h.stdout)
	}
}

// runs show on an interrupted run prints the commands that answer it, as
// run and resume do.
func TestRunsShowPrintsDecideWith(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	for _, s := range []string{"decide with:", "actoviq approve r1 call_pay --store " + h.store, "then: actoviq resume r1 --store " + h.store} {
		if !strings.Contains(h.stdout.String(), s) {
			t.Errorf("runs show lacks %q:\n%s", s, h.stdout)
		}
	}
}

// version and --version print the build's version and toolchain.
func TestVersion(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		h.want(ExitCompleted, args...)
		out := h.stdout.String()
		if !strings.HasPrefix(out, "actoviq ") || !strings.Contains(out, "go1.") {
			t.Errorf("actoviq %s printed %q", args[0], out)
		}
	}
}

// Shell completion offers the store's run ids, then the run's call ids
// (open questions first), and the --status values.
func TestCompletion(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r2", "pay")...)
	h.want(ExitCompleted, "__complete", "resume", "--store", h.store, "")
	if out := h.stdout.String(); !strings.Contains(out, "r1\tinterrupted") || !strings.Contains(out, "r2\tinterrupted") {
		t.Errorf("resume completes to:\n%s", out)
	}
	h.want(ExitCompleted, "__complete", "approve", "--store", h.store, "r1", "call_")
	out := h.stdout.String()
	if !strings.HasPrefix(out, "call_pay\tapproval: pay_invoice") || !strings.Contains(out, "call_lookup\t") {
		t.Errorf("approve r1 completes to:\n%s", out)
	}
	h.want(ExitCompleted, "__complete", "runs", "list", "--status", "int")
	if !strings.Contains(h.stdout.String(), "interrupted") {
		t.Errorf("--status completes to:\n%s", h.stdout)
	}
	// No store, no completion, and no store created.
	h.want(ExitCompleted, "__complete", "resume", "--store", "sqlite:"+h.dir+"/none.db", "")
	if strings.Contains(h.stdout.String(), "r1") {
		t.Errorf("completed from a store that does not exist:\n%s", h.stdout)
	}
	if _, err := os.Stat(h.dir + "/none.db"); err == nil {
		t.Error("completion created a store")
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		h.want(ExitCompleted, "completion", sh)
		if !strings.Contains(h.stdout.String(), "actoviq") {
			t.Errorf("completion %s printed %q", sh, h.stdout)
		}
	}
}

// A stdio MCP server that fails to start: the error shows its last
// stderr lines, and --mcp-log keeps all of it.
func TestMCPConnectErrorShowsServerStderr(t *testing.T) {
	h := newHarness(t)
	cfg := h.dir + "/mcp.json"
	logPath := h.dir + "/mcp.log"
	os.WriteFile(cfg, []byte(`{"mcpServers": {"fs": {"command": "sh", "args": ["-c", "echo 'Error: None of the specified directories are accessible' >&2; exit 1"]}}}`), 0o644)
	h.want(ExitUsage, "run", "--store", h.store, "--model", "scripted:"+h.dir+"/script.json", "--mcp-config", cfg, "--mcp-log", logPath, "hi")
	if msg := h.stderr.String(); !strings.Contains(msg, "None of the specified directories are accessible") {
		t.Errorf("error lacks the server's stderr:\n%s", msg)
	}
	b, err := os.ReadFile(logPath)
	if err != nil || !strings.Contains(string(b), "None of the specified directories are accessible") {
		t.Errorf("--mcp-log %s: %v %q", logPath, err, b)
	}
}

// --openai-no-store sends store:false and asks for the encrypted
// reasoning; it is refused with a provider that has no such setting.
func TestOpenAINoStore(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":1,\"output_index\":0,"+
			"\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi.\",\"annotations\":[]}]}}\n\n"+
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"model\":\"o4-test\","+
			"\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}}\n\n")
	}))
	defer srv.Close()
	h := newHarness(t)
	h.want(ExitCompleted, "run", "--store", h.store, "--run-id", "z1", "--model", "openai-responses:o4-test", "--base-url", srv.URL, "--openai-no-store", "hi")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"store":false`) || !strings.Contains(bodies[0], `"include":["reasoning.encrypted_content"]`) {
		t.Fatalf("request bodies = %q", bodies)
	}
	h.want(ExitUsage, "run", "--store", h.store, "--model", "openai:gpt-4.1", "--base-url", srv.URL, "--openai-no-store", "hi")
	if !strings.Contains(h.stderr.String(), "--openai-no-store goes with --model openai-responses:MODEL") {
		t.Errorf("stderr = %s", h.stderr)
	}
}
