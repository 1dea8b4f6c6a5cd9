package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// chatSSE is an OpenAI Chat Completions stream.
func chatSSE(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

var (
	payCallSSE = chatSSE(
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_pay","type":"function","function":{"name":"pay_invoice","arguments":"{\"invoice\":\"INV-42\",\"payee\":\"ACME Ltd\",\"amount_eur\":1250}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	doneSSE = chatSSE(
		`{"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Paid."},"finish_reason":null}]}`,
		`{"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
)

// TestProviderOutageResumeWithNewBaseURL: the model server goes away after
// the payment; the run is interrupted (provider), not failed. resume with
// --base-url pointing at a server that is up takes effect, is recorded in
// the run's meta, and the run completes with one payment.
func TestProviderOutageResumeWithNewBaseURL(t *testing.T) {
	h := newHarness(t)
	var first atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.Add(1) == 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(payCallSSE))
			return
		}
		// Gone: the connection drops before any response.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}))
	defer down.Close()
	var second atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		second.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(doneSSE))
	}))
	defer up.Close()
	h.envs["OPENAI_API_KEY"] = "sk-test-cli-000000"
	bank := filepath.Join(h.dir, "bank.jsonl")
	h.want(ExitInterrupted, "run", "--store", h.store, "--run-id", "r1", "--model", "openai:gpt-test", "--base-url", down.URL+"/v1",
		"--approve", "none", "--max-retries", "1", "--demo-bank", bank, "pay INV-42")
	for _, want := range []string{"- provider: the model call failed", "2 attempt(s)", "actoviq resume r1"} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Fatalf("run output lacks %q:\n%s", want, h.stdout)
		}
	}
	if h.bankLines() != 1 {
		t.Fatalf("%d payments before resume, want 1", h.bankLines())
	}
	// A flag that cannot take effect is refused, not ignored.
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--base-url", up.URL+"/v1", "--timeout", "1h")
	if !strings.Contains(h.stderr.String(), "a run's deadline is fixed when it starts") {
		t.Fatalf("refusal: %s", h.stderr)
	}
	h.want(ExitCompleted, "resume", "r1", "--store", h.store, "--base-url", up.URL+"/v1")
	if !strings.Contains(h.stderr.String(), "--base-url "+down.URL+"/v1 → "+up.URL+"/v1") {
		t.Fatalf("resume did not report the change: %s", h.stderr)
	}
	if h.bankLines() != 1 || second.Load() != 1 {
		t.Fatalf("%d payments, %d requests to the new server; want 1 and 1", h.bankLines(), second.Load())
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store, "--json")
	var info struct {
		Meta struct {
			CLI struct {
				BaseURL string `json:"base_url"`
			} `json:"cli"`
		}
	}
	if err := json.Unmarshal(h.stdout.Bytes(), &info); err != nil || info.Meta.CLI.BaseURL != up.URL+"/v1" {
		t.Fatalf("meta base_url = %q (%v), want the new one", info.Meta.CLI.BaseURL, err)
	}
	// A credential in the URL would be stored with the run: refused, on
	// run and on resume, whichever form it takes.
	for _, bad := range []string{"http://u:pw@127.0.0.1:9/v1", up.URL + "/v1?api-key=sk-in-the-url", up.URL + "/v1?key=AIzaSecret&alt=sse"} {
		h.want(ExitUsage, "run", "--store", h.store, "--model", "openai:gpt-test", "--base-url", bad, "hi")
		if !strings.Contains(h.stderr.String(), "must not carry credentials") {
			t.Fatalf("--base-url %s: %s", bad, h.stderr)
		}
	}
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--base-url", up.URL+"/v1?token=t0ken")
	if !strings.Contains(h.stderr.String(), `query parameter "token"`) {
		t.Fatalf("resume --base-url with a token: %s", h.stderr)
	}
	// A query that names no secret is a server's business.
	if err := baseURLWithoutCredentials(up.URL + "/v1?api-version=2024-10-21"); err != nil {
		t.Fatalf("a plain query was refused: %v", err)
	}
	// A finished run: flags are refused with the reason.
	h.want(ExitUsage, "resume", "r1", "--store", h.store, "--model", "openai:gpt-other")
	if !strings.Contains(h.stderr.String(), "never driven again") {
		t.Fatalf("finished-run refusal: %s", h.stderr)
	}
}

// TestProviderAuthErrorSaysWhatToDo: a 401 fails the run and names the
// variable to check.
func TestProviderAuthErrorSaysWhatToDo(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	h.envs["OPENAI_API_KEY"] = "sk-test-cli-000000"
	h.want(ExitFailed, "run", "--store", h.store, "--model", "openai:gpt-test", "--base-url", srv.URL+"/v1", "hi")
	if !strings.Contains(h.stdout.String()+h.stderr.String(), "check OPENAI_API_KEY") {
		t.Fatalf("output lacks the hint:\nstdout:\n%s\nstderr:\n%s", h.stdout, h.stderr)
	}
}
