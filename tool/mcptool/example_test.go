package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

func Example() {
	ctx := context.Background()

	// An MCP server in this process. Real configurations start a command
	// or reach a URL; see the package documentation for the file format.
	server := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type in struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "Adds two numbers.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			key := req.Params.Meta[mcptool.MetaIdempotencyKey]
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: fmt.Sprintf("%d (key %v)", in.A+in.B, key)}}}, nil, nil
		})

	// A configuration file would be read with LoadConfig; Connect is the
	// programmatic way to reach a server (here, in memory).
	cfg := &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
		"calc": {TrustAnnotations: true, Connect: func(ctx context.Context) (mcp.Transport, error) {
			client, srv := mcp.NewInMemoryTransports()
			if _, err := server.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
				return nil, err
			}
			return client, nil
		}},
	}}
	src, err := mcptool.New(cfg, nil)
	if err != nil {
		panic(err)
	}
	defer src.Close() // after the actoviq.Runtime's Close, in a program

	tools, err := src.Tools(ctx)
	if err != nil {
		panic(err)
	}
	for _, t := range tools {
		fmt.Println(t.Spec().Name, t.Spec().Effect)
	}
	runner, err := tool.NewRunner(tools, nil)
	if err != nil {
		panic(err)
	}
	res, err := runner.Run(ctx, &tool.Call{Name: "calc__add", Args: json.RawMessage(`{"a":2,"b":3}`), Key: "run1:call1"})
	fmt.Println(res.Content, err)
	// Output:
	// calc__add read
	// 5 (key run1:call1) <nil>
}

// A server behind MCP authorization, configured with an "oauth" block. The
// tokens of `actoviq mcp login` are in a FileTokenStore; a process that
// cannot ask a person (no OpenURL) uses and refreshes them, and a server
// that needs a new sign-in fails with an *AuthError saying how.
func ExampleOAuthOptions() {
	cfg, err := mcptool.ParseConfig([]byte(`{"mcpServers": {"tickets": {
		"url": "https://mcp.example.com/mcp",
		"oauth": {"clientId": "actoviq", "clientSecret": "${TICKETS_SECRET}", "scopes": "tickets:write"}}}}`))
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "example-tokens")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src, err := mcptool.New(cfg, &mcptool.Options{
		LookupEnv: func(string) (string, bool) { return "the-client-secret", true },
		OAuth: &mcptool.OAuthOptions{
			Tokens:    mcptool.NewFileTokenStore(filepath.Join(dir, "mcp-tokens.json")),
			LoginHint: func(server string) string { return "run `actoviq mcp login " + server + "`" },
		},
	})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	st, err := src.AuthStatus(context.Background(), "tickets") // reads the store, connects to nothing
	fmt.Println(st.Kind, st.SignedIn, err)
	// Output:
	// oauth false <nil>
}

// A server asks a person for input while its tool runs. The handler gets
// the question and the schema; fields the answer leaves out take the
// schema's defaults.
func ExampleElicitHandler() {
	server := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Which queue?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"queue":{"type":"string","default":"ops"},"urgent":{"type":"boolean"}}}`)})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(res.Action, " ", res.Content)}}}, nil
		})
	cfg := &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"asker": {Connect: func(ctx context.Context) (mcp.Transport, error) {
		client, srv := mcp.NewInMemoryTransports()
		if _, err := server.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
			return nil, err
		}
		return client, nil
	}}}}
	src, err := mcptool.New(cfg, &mcptool.Options{
		Elicit: func(ctx context.Context, req *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
			fmt.Println(req.Server, "asks:", req.Message)
			return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"urgent": true}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	tools, err := src.Tools(context.Background())
	if err != nil {
		panic(err)
	}
	res, err := tools[0].Call(tool.WithIdempotencyKey(context.Background(), "run1:call1"), nil)
	fmt.Println(res.Content, err)
	// Output:
	// asker asks: Which queue?
	// accept map[queue:ops urgent:true] <nil>
}
