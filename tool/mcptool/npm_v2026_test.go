package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// The npm reference servers are built on the TypeScript SDK 1.32.2, whose
// newest protocol is 2025-11-25: the client asks for 2026-07-28 and falls
// back, over stdio and over streamable HTTP, and its calls work as before.
func TestEverythingFallsBackFrom2026(t *testing.T) {
	entry := npmServer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	httpEverything(t, entry, port)
	src := newSource(t, map[string]*mcptool.ServerConfig{
		"stdio": {Command: "node", Args: []string{entry, "stdio"}},
		"web":   {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
	}, fastClose)
	for _, name := range []string{"stdio", "web"} {
		ts := discover(t, src, name)
		if v := src.ProtocolVersion(name); v != "2025-11-25" {
			t.Fatalf("%s: protocol %q, want 2025-11-25", name, v)
		}
		rec := &handles{}
		ctx := tool.WithHandleRecorder(tool.WithIdempotencyKey(context.Background(), "run1:"+name), rec)
		res, err := ts[name+"__get-sum"].Call(ctx, json.RawMessage(`{"a":2,"b":3}`))
		if err != nil || !strings.Contains(res.Content, "5") {
			t.Fatalf("%s: get-sum: %+v, %v", name, res, err)
		}
		if h := rec.list(); len(h) != 0 {
			t.Fatalf("%s: a plain call recorded handles: %+v", name, h)
		}
	}
}
