package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

const elicitSecret = "elicit-secret-6a4f20"

// elicitServer has a tool that asks the person for a name, a count and a
// flag (the last two with defaults), and answers what it got. It speaks
// protocol 2025-11-25, where a server sends elicitation/create while a call
// runs (on 2026-07-28 it would have to answer with a multi-round-trip
// result, which this client does not continue).
func elicitServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(annotated("ask", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "Who gets the ticket? (token " + elicitSecret + ")",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{
				"name":{"type":"string","title":"Name"},
				"count":{"type":"integer","default":3},
				"notify":{"type":"boolean","default":true}},"required":["name"]}`),
		})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no answer: " + err.Error()}}}, nil
		}
		b, _ := json.Marshal(res.Content)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(b)}}}, nil
	})
	return srv
}

func TestElicitation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []*mcptool.ElicitRequest
	accept := func(_ context.Context, req *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}
	tests := []struct {
		name   string
		elicit mcptool.ElicitHandler
		want   string
	}{
		// The schema's defaults fill what the person left out.
		{"accept", accept, `accept {"count":3,"name":"Ada","notify":true}`},
		{"decline", mcptool.DeclineElicitation, `decline null`},
		// No handler: the capability is not declared, and the server's
		// request fails: nothing is answered for the person.
		{"no handler", nil, "no answer: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, _ := inMemory(elicitServer())
			sc.Env = map[string]string{"ASKER_TOKEN": elicitSecret}
			src := newSource(t, map[string]*mcptool.ServerConfig{"asker": sc}, &mcptool.Options{Elicit: tt.elicit})
			ts, err := src.ServerTools(context.Background(), "asker")
			if err != nil {
				t.Fatal(err)
			}
			res, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("result %q, want it to start with %q", res.Content, tt.want)
			}
			if strings.Contains(res.Content, elicitSecret) {
				t.Fatalf("result leaks the secret: %q", res.Content)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	r := asked[0]
	if r.Server != "asker" || r.Mode != "form" || !strings.HasPrefix(r.Message, "Who gets the ticket?") || strings.Contains(r.Message, elicitSecret) {
		t.Fatalf("request %+v", r)
	}
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(r.Schema, &schema); err != nil || fmt.Sprint(schema.Properties["count"].Default) != "3" {
		t.Fatalf("schema %s: %v", r.Schema, err)
	}
}
