package mcptool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// Every env value used to be scrubbed from tool results as a secret,
// whatever its length, so a server configured with {"DEBUG": "1"} had every
// "1" in its results replaced ("payment pay_[REDACTED]0[REDACTED]"). Now
// short values, numbers and booleans are scrubbed only under a
// secret-looking key.
func TestShortEnvValueDoesNotMangleResults(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	srv.AddTool(annotated("pay", nil), okHandler("payment pay_101: 100 EUR"))
	sc, _ := inMemory(srv)
	sc.Env = map[string]string{"DEBUG": "1", "API_TOKEN": "tok-very-secret-value"}
	src := newSource(t, map[string]*mcptool.ServerConfig{"bank": sc}, nil)
	ts, err := src.ServerTools(context.Background(), "bank")
	if err != nil {
		t.Fatal(err)
	}
	ctx := tool.WithIdempotencyKey(context.Background(), "r1:c1")
	res, err := ts[0].Call(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "payment pay_101: 100 EUR" {
		t.Fatalf("result content = %q, want it unchanged", res.Content)
	}
}
