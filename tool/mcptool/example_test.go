package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"

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
