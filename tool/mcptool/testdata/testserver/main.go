// Command testserver is a small MCP server over stdio for the fault tests
// of package mcptool. It is built by the tests; it is not part of the
// module's packages (testdata is ignored by ./...).
//
// Every tools/call it receives is recorded as a "request" line in the log
// file before anything else happens, and the write tool records its side
// effect as an "effect" line (synced to disk) before it answers. The
// "mode" argument then decides what happens: "ok" answers, "die" exits the
// process without answering, "hang" blocks until the process is killed.
//
//	testserver -log FILE
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	logPath = flag.String("log", "", "file that records requests and effects")
	logMu   sync.Mutex
)

func record(kind, tool, key, text string) {
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(f, "%s tool=%s key=%s pid=%d text=%s\n", kind, tool, key, os.Getpid(), text)
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	f.Close()
}

type args struct {
	Text string `json:"text"`
	Mode string `json:"mode"`
}

func key(req *mcp.CallToolRequest) string {
	k, _ := req.Params.Meta["io.actoviq/idempotency-key"].(string)
	return k
}

func finish(ctx context.Context, mode string) {
	switch mode {
	case "die":
		os.Exit(3)
	case "hang":
		select {} // until killed
	}
}

func main() {
	flag.Parse()
	if *logPath == "" {
		log.Fatal("testserver: -log is required")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "actoviq-testserver", Version: "1"}, nil)
	// Count every tools/call that arrives, before any handler runs.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ctr, ok := req.(*mcp.CallToolRequest); ok {
				record("request", ctr.Params.Name, key(ctr), "")
			}
			return next(ctx, method, req)
		}
	})
	destructive := true
	s.AddTool(&mcp.Tool{Name: "write", Description: "Appends text to the journal.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"mode":{"type":"string","enum":["ok","die","hang"]}},"required":["text"]}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a args
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			record("effect", "write", key(req), a.Text)
			finish(ctx, a.Mode)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + a.Text}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "read", Description: "Reads the journal.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string","enum":["ok","die","hang"]}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a args
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			finish(ctx, a.Mode)
			b, _ := os.ReadFile(*logPath)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d bytes of journal", len(b))}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("testserver: %v", err)
	}
}
