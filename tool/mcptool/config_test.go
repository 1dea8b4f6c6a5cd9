package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

const exampleConfig = `{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/srv/data"],
      "env": {"LOG_LEVEL": "warn"},
      "trustAnnotations": true,
      "tools": {"write_file": {"effect": "side-effect", "requireApproval": true}},
      "allowedTools": ["read_text_file", "write_file"]
    },
    "tickets": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"}
    },
    "old": {"command": "legacy-server", "disabled": true}
  }
}`

func TestParseConfig(t *testing.T) {
	t.Parallel()
	c, err := mcptool.ParseConfig([]byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	fs := c.Servers["fs"]
	if fs.Command != "npx" || len(fs.Args) != 3 || !fs.TrustAnnotations || fs.Tools["write_file"].Effect == nil ||
		*fs.Tools["write_file"].Effect != tool.SideEffect || !fs.Tools["write_file"].RequireApproval || len(fs.AllowedTools) != 2 {
		t.Fatalf("fs: %+v", fs)
	}
	if c.Servers["tickets"].URL == "" || !c.Servers["old"].Disabled {
		t.Fatalf("servers: %+v", c.Servers)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(exampleConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcptool.LoadConfig(path); err != nil {
		t.Fatal(err)
	}
	src, err := mcptool.New(c, &mcptool.Options{LookupEnv: func(string) (string, bool) { return "tok", true }})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got := strings.Join(src.Servers(), ","); got != "fs,tickets" {
		t.Fatalf("enabled servers %s", got)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789abcdef"
	tests := []struct {
		name, doc     string
		server, field string
	}{
		{"not json", `{"mcpServers":`, "", ""},
		{"no servers", `{}`, "", "mcpServers"},
		{"unknown top field", `{"mcpServers":{},"extra":1}`, "", ""},
		{"unknown server field", `{"mcpServers":{"a":{"command":"x","trustAnnotation":true}}}`, "a", ""},
		{"neither", `{"mcpServers":{"a":{"args":["x"]}}}`, "a", "command"},
		{"both", `{"mcpServers":{"a":{"command":"x","url":"http://h/mcp"}}}`, "a", "url"},
		{"bad type", `{"mcpServers":{"a":{"type":"sse","url":"http://h/sse"}}}`, "a", "type"},
		{"type mismatch", `{"mcpServers":{"a":{"type":"stdio","url":"http://h/mcp"}}}`, "a", "command"},
		{"bad url", `{"mcpServers":{"a":{"url":"ftp://h/x"}}}`, "a", "url"},
		{"env on http", `{"mcpServers":{"a":{"url":"http://h/mcp","env":{"K":"v"}}}}`, "a", "env"},
		{"headers on stdio", `{"mcpServers":{"a":{"command":"x","headers":{"K":"v"}}}}`, "a", "headers"},
		{"bad effect", `{"mcpServers":{"a":{"command":"x","tools":{"t":{"effect":"write"}}}}}`, "a", ""},
		{"override outside allow-list", `{"mcpServers":{"a":{"command":"x","allowedTools":["t"],"tools":{"u":{"requireApproval":true}}}}}`, "a", "tools.u"},
		{"duplicate allowed", `{"mcpServers":{"a":{"command":"x","allowedTools":["t","t"]}}}`, "a", "allowedTools[1]"},
		{"server name with __", `{"mcpServers":{"a__b":{"command":"x"}}}`, "a__b", ""},
		{"server name ends with _", `{"mcpServers":{"a_":{"command":"x"}}}`, "a_", ""},
		{"idempotency header", `{"mcpServers":{"a":{"url":"http://h/mcp","headers":{"Idempotency-Key":"` + secret + `"}}}}`, "a", "headers.Idempotency-Key"},
		{"bad env name", `{"mcpServers":{"a":{"command":"x","env":{"1X":"` + secret + `"}}}}`, "a", "env"},
		{"bad reference", `{"mcpServers":{"a":{"command":"x","env":{"K":"${` + secret + `"}}}}`, "a", "env.K"},
		{"wrong value type", `{"mcpServers":{"a":{"command":"x","env":{"K":1}}}}`, "a", ""},
		{"oauth on stdio", `{"mcpServers":{"a":{"command":"x","oauth":{"clientId":"c"}}}}`, "a", "oauth"},
		{"oauth bad grant", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"grant":"password"}}}}`, "a", "oauth.grant"},
		{"oauth secret without id", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"clientSecret":"` + secret + `"}}}}`, "a", "oauth.clientSecret"},
		{"oauth client credentials without secret", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"grant":"client_credentials","clientId":"c"}}}}`, "a", "oauth.grant"},
		{"oauth and an Authorization header", `{"mcpServers":{"a":{"url":"http://h/mcp","headers":{"Authorization":"` + secret + `"},"oauth":{}}}}`, "a", "oauth"},
		{"oauth metadata url not https", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"clientMetadataUrl":"http://c.example/md.json"}}}}`, "a", "oauth.clientMetadataUrl"},
		{"oauth bad port", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"callbackPort":70000}}}}`, "a", "oauth.callbackPort"},
		{"oauth private key without client credentials", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"clientId":"c","privateKey":"${K}"}}}}`, "a", "oauth.privateKey"},
		{"oauth secret and private key", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"grant":"client_credentials","clientId":"c","clientSecret":"s","privateKey":"${K}"}}}}`, "a", "oauth.grant"},
		{"oauth bad signing algorithm", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"grant":"client_credentials","clientId":"c","privateKey":"${K}","signingAlgorithm":"HS256"}}}}`, "a", "oauth.signingAlgorithm"},
		{"oauth unknown field", `{"mcpServers":{"a":{"url":"http://h/mcp","oauth":{"client_id":"c"}}}}`, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcptool.ParseConfig([]byte(tt.doc))
			var ce *mcptool.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if ce.Server != tt.server || (tt.field != "" && ce.Field != tt.field) {
				t.Fatalf("server %q field %q, want %q %q: %v", ce.Server, ce.Field, tt.server, tt.field, err)
			}
			if tt.server != "" && !strings.Contains(err.Error(), `"`+tt.server+`"`) {
				t.Fatalf("error does not name the server: %v", err)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "0123456789") {
				t.Fatalf("error leaks a value: %v", err)
			}
		})
	}
	// A reference to a variable that is not set names the variable, in New.
	c, err := mcptool.ParseConfig([]byte(`{"mcpServers":{"a":{"url":"http://h/mcp","headers":{"Authorization":"Bearer ${NOPE}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcptool.New(c, &mcptool.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	var ce *mcptool.ConfigError
	if !errors.As(err, &ce) || ce.Server != "a" || ce.Field != "headers.Authorization" || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("missing variable: %v", err)
	}
}

// TestSecretsNeverLeak: env and header values (also from ${NAME}), and URL
// secrets, never reach an error text, a result or a Spec.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	const (
		envSecret    = "env-secret-7f3a9c21"
		headerToken  = "hdr-token-5b8e2d44"
		querySecret  = "qry-secret-91c0ffee"
		nameOfSecret = "API_TOKEN"
	)
	lookup := func(n string) (string, bool) {
		if n == "HDR" {
			return headerToken, true
		}
		return "", false
	}
	leaks := func(t *testing.T, what, s string) {
		t.Helper()
		for _, v := range []string{envSecret, headerToken, querySecret} {
			if strings.Contains(s, v) {
				t.Fatalf("%s leaks a secret: %s", what, s)
			}
		}
	}

	// stdio: a command that cannot start.
	src := newSource(t, map[string]*mcptool.ServerConfig{
		"gone": {Command: filepath.Join(t.TempDir(), "no-such-server-"+envSecret), Env: map[string]string{nameOfSecret: envSecret}},
		// HTTP: nothing listens on port 1.
		"http": {URL: "http://127.0.0.1:1/mcp?key=" + querySecret, Headers: map[string]string{"Authorization": "Bearer ${HDR}"}},
		// OAuth with a client secret (from ${HDR}): nothing listens either.
		"oauth": {URL: "http://127.0.0.1:1/mcp", OAuth: &mcptool.OAuthConfig{ClientID: "c", ClientSecret: "${HDR}"}},
	}, &mcptool.Options{LookupEnv: lookup})
	for _, name := range []string{"gone", "http", "oauth"} {
		_, err := src.ServerTools(context.Background(), name)
		if err == nil {
			t.Fatalf("%s: connected to nothing", name)
		}
		leaks(t, name+" error", err.Error())
		if !strings.Contains(err.Error(), "server "+name) {
			t.Fatalf("error does not name the server: %v", err)
		}
	}

	// A server that echoes the secret in descriptions, results and errors.
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "env", Description: "prints " + envSecret, InputSchema: json.RawMessage(`{"type":"object","description":"` + envSecret + `"}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: nameOfSecret + "=" + envSecret}},
				StructuredContent: map[string]string{nameOfSecret: envSecret, envSecret: "as a key"}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(anyObject)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad token " + envSecret}
		})
	sc, _ := inMemory(srv)
	sc.Env = map[string]string{nameOfSecret: envSecret}
	src2 := newSource(t, map[string]*mcptool.ServerConfig{"echo": sc}, nil)
	ts, err := src2.ServerTools(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	m := byName(t, ts)
	spec := m["echo__env"].Spec()
	leaks(t, "description", spec.Description)
	leaks(t, "schema", string(spec.InputSchema))
	res, err := m["echo__env"].Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	leaks(t, "content", res.Content)
	leaks(t, "data", string(res.Data))
	if !json.Valid(res.Data) || !strings.Contains(res.Content, "[REDACTED]") {
		t.Fatalf("result %+v", res)
	}
	_, err = m["echo__fail"].Call(context.Background(), nil)
	if err == nil {
		t.Fatal("no error")
	}
	leaks(t, "error", err.Error())
	b, _ := json.Marshal(&tool.Error{Kind: tool.KindExecution, Err: err})
	leaks(t, "persisted error", string(b))
}
