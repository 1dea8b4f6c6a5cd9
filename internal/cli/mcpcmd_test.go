package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// oauthServer is an MCP server behind the MCP authorization flow, with
// its authorization server (metadata, dynamic registration, an
// authorization endpoint that consents at once, a PKCE-checking token
// endpoint) on one httptest server.
func oauthServer(t *testing.T) (url string, tokens func() []string) {
	t.Helper()
	var mu sync.Mutex
	issued := map[string]bool{}
	codes := map[string]string{} // code -> challenge
	n := 0
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "open", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var ts *httptest.Server
	mux := http.NewServeMux()
	j := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		j(w, map[string]any{"resource": ts.URL + "/mcp", "authorization_servers": []string{ts.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		j(w, map[string]any{"issuer": ts.URL, "authorization_endpoint": ts.URL + "/authorize", "token_endpoint": ts.URL + "/token",
			"registration_endpoint": ts.URL + "/register", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		j(w, map[string]any{"client_id": "dyn-1", "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		n++
		code := fmt.Sprintf("code-%d", n)
		codes[code] = q.Get("code_challenge")
		mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		ch, ok := codes[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			w.WriteHeader(http.StatusBadRequest)
			j(w, map[string]string{"error": "invalid_grant"})
			return
		}
		n++
		at := fmt.Sprintf("cli-at-%d-5e8d1f", n)
		issued[at] = true
		j(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": fmt.Sprintf("cli-rt-%d-77b0c2", n)})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := issued[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+ts.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	ts = httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return ts.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for k := range issued {
			out = append(out, k)
		}
		return out
	}
}

// browserWriter is the terminal the person reads: when `mcp login` prints
// the URL, the person opens it (follows the redirects to the loopback
// listener).
type browserWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	opened chan error
}

var authURLLine = regexp.MustCompile(`(?m)^  (http://127\.0\.0\.1:\d+/authorize\?\S+)$`)

func (b *browserWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if m := authURLLine.FindSubmatch(b.buf.Bytes()); m != nil && b.opened == nil {
		b.opened = make(chan error, 1)
		go func(u string) {
			resp, err := http.Get(u)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.opened <- err
		}(string(m[1]))
	}
	return len(p), nil
}

func (b *browserWriter) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMCPLoginListLogout(t *testing.T) {
	url, issued := oauthServer(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, []byte(`{"mcpServers":{"tickets":{"type":"http","url":"`+url+`"},"local":{"command":"true","disabled":true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "config", "mcp-tokens.json")
	envs := map[string]string{"ACTOVIQ_MCP_TOKENS": tokens, "OPENAI_API_KEY": "sk-test"}
	run := func(stderr io.Writer, args ...string) (int, string) {
		var out bytes.Buffer
		e := &env{stdout: &out, stderr: stderr, getenv: func(k string) string { return envs[k] }, executable: os.Executable}
		return e.main(context.Background(), args), out.String()
	}
	noLeak := func(what, s string) {
		t.Helper()
		for _, tok := range issued() {
			if strings.Contains(s, tok) || strings.Contains(s, "77b0c2") {
				t.Fatalf("%s shows a token: %s", what, s)
			}
		}
	}

	var errb bytes.Buffer
	code, out := run(&errb, "mcp", "list", "--mcp-config", cfgPath)
	if code != 0 || !strings.Contains(out, "not signed in (if the server asks: actoviq mcp login tickets)") || !strings.Contains(out, "local") {
		t.Fatalf("list before login: exit %d\n%s%s", code, out, errb.String())
	}

	// A run cannot sign in: it says what to do.
	errb.Reset()
	code, _ = run(&errb, "run", "--store", "sqlite:"+filepath.Join(dir, "a.db"), "--model", "openai:gpt-test", "--mcp-config", cfgPath, "hello")
	if code != ExitUsage || !strings.Contains(errb.String(), "server tickets needs authorization") ||
		!strings.Contains(errb.String(), "run `actoviq mcp login tickets --mcp-config "+cfgPath+"`") {
		t.Fatalf("run before login: exit %d\n%s", code, errb.String())
	}

	bw := &browserWriter{}
	code, out = run(bw, "mcp", "login", "tickets", "--mcp-config", cfgPath)
	if code != 0 || !strings.Contains(out, "Signed in to tickets") || !strings.Contains(out, tokens) {
		t.Fatalf("login: exit %d\n%s\n%s", code, out, bw.String())
	}
	if err := <-bw.opened; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	if !strings.Contains(bw.String(), "open this URL in a browser") {
		t.Fatalf("login printed %s", bw.String())
	}
	noLeak("login output", out+bw.String())
	fi, err := os.Stat(tokens)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(tokens)
	if len(issued()) != 1 || !strings.Contains(string(b), issued()[0]) {
		t.Fatalf("the token file does not hold the issued token")
	}

	errb.Reset()
	code, out = run(&errb, "mcp", "login", "tickets", "--mcp-config", cfgPath)
	if code != 0 || !strings.Contains(out, "already authorized") {
		t.Fatalf("second login: exit %d\n%s%s", code, out, errb.String())
	}
	code, out = run(&errb, "mcp", "list", "--mcp-config", cfgPath, "--json")
	if code != 0 || !strings.Contains(out, `"signed_in": true`) {
		t.Fatalf("list after login: exit %d\n%s%s", code, out, errb.String())
	}
	noLeak("list", out)

	code, out = run(&errb, "mcp", "logout", "tickets", "--mcp-config", cfgPath)
	if code != 0 || !strings.Contains(out, "Signed out of tickets") {
		t.Fatalf("logout: exit %d\n%s%s", code, out, errb.String())
	}
	b, _ = os.ReadFile(tokens)
	noLeak("token file after logout", string(b))
	code, out = run(&errb, "mcp", "logout", "nope", "--mcp-config", cfgPath)
	if code != ExitUsage {
		t.Fatalf("logout of an unknown server: exit %d\n%s", code, out)
	}
}

func TestElicitPrompt(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","title":"Name"},
		"count":{"type":"integer","default":3},
		"notify":{"type":"boolean","default":true}},"required":["name"]}`)
	req := &mcptool.ElicitRequest{Server: "asker", Message: "Who gets it?", Mode: "form", Schema: schema}
	oldIn, oldTerm := promptIn, promptIsTerminal
	t.Cleanup(func() { promptIn, promptIsTerminal = oldIn, oldTerm })

	// On a terminal: the person answers; an empty line takes the default,
	// a bad value is asked again, a required field cannot be skipped.
	promptIsTerminal = func() bool { return true }
	promptIn = strings.NewReader("y\nx\n\n\nAda\n\n")
	var out bytes.Buffer
	res, err := (&elicitPrompt{out: &out}).answer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Content)
	if res.Action != mcptool.ElicitAccept || string(got) != `{"name":"Ada"}` {
		t.Fatalf("answer %s %s\n%s", res.Action, got, out.String())
	}
	if !strings.Contains(out.String(), "MCP server asker asks: Who gets it?") || !strings.Contains(out.String(), "want a whole number") ||
		!strings.Contains(out.String(), "(required)") || !strings.Contains(out.String(), "[3]") {
		t.Fatalf("prompt:\n%s", out.String())
	}

	promptIn = strings.NewReader("n\n")
	if res, _ := (&elicitPrompt{out: io.Discard}).answer(context.Background(), req); res.Action != mcptool.ElicitDecline {
		t.Fatalf("no: %s", res.Action)
	}

	// Without a terminal it declines, and says so.
	promptIsTerminal = func() bool { return false }
	out.Reset()
	res, err = (&elicitPrompt{out: &out}).answer(context.Background(), req)
	if err != nil || res.Action != mcptool.ElicitDecline || !strings.Contains(out.String(), "no terminal to ask on, so it was declined") {
		t.Fatalf("no terminal: %+v %v\n%s", res, err, out.String())
	}
}
