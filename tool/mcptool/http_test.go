package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// TestHTTPCallNeverRePOSTed: over streamable HTTP, a tools/call whose
// connection breaks after the server read it is POSTed exactly one time
// (neither the SDK nor net/http replays it), its outcome is unknown, and
// the next call reconnects. The configured headers reach the server.
func TestHTTPCallNeverRePOSTed(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "http", Version: "1"}, nil)
	srv.AddTool(annotated("send", nil), okHandler("sent"))
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)

	var mu sync.Mutex
	var posts []string // idempotency keys of tools/call POSTs, as received
	var auth []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Meta      map[string]any  `json:"_meta"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			mu.Lock()
			auth = append(auth, r.Header.Get("Authorization"))
			if msg.Method == "tools/call" {
				key, _ := msg.Params.Meta[mcptool.MetaIdempotencyKey].(string)
				posts = append(posts, key)
			}
			mu.Unlock()
			if msg.Method == "tools/call" && strings.Contains(string(msg.Params.Arguments), "break") {
				// The server got the call and the connection breaks
				// before any answer.
				panic(http.ErrAbortHandler)
			}
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	// Registered before the source's cleanup, so it runs after it: Close
	// of an httptest server waits for the SSE streams the source holds.
	t.Cleanup(ts.Close)

	src := newSource(t, map[string]*mcptool.ServerConfig{
		"web": {URL: ts.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer ${WEB_TOKEN}"}},
	}, &mcptool.Options{LookupEnv: func(string) (string, bool) { return "tok-2f9b7c", true }})
	list, err := src.ServerTools(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	send := list[0]
	if send.Spec().Effect != tool.SideEffect {
		t.Fatalf("untrusted tool is %s", send.Spec().Effect)
	}
	_, err = send.Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{"how":"break"}`))
	if !errors.Is(err, tool.ErrOutcomeUnknown) || strings.Contains(err.Error(), "tok-2f9b7c") {
		t.Fatalf("broken POST: %v", err)
	}
	res, err := send.Call(tool.WithIdempotencyKey(context.Background(), "r1:c2"), json.RawMessage(`{"how":"fine"}`))
	if err != nil || res.Content != "sent" {
		t.Fatalf("next call: %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(posts, " "); got != "r1:c1 r1:c2" {
		t.Fatalf("tools/call POSTs as received: %q", got)
	}
	for _, a := range auth {
		if a != "Bearer tok-2f9b7c" {
			t.Fatalf("Authorization header %q", a)
		}
	}
	if n := src.Connections("web"); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
