package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// --no-stream asks a Chat Completions server for whole responses, and
// resume remembers it; without the flag the request streams.
func TestNoStreamFlag(t *testing.T) {
	var mu sync.Mutex
	var streamed []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		streamed = append(streamed, req.Stream)
		mu.Unlock()
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()

	h := newHarness(t)
	h.want(0, "run", "--store", h.store, "--model", "openai:local", "--base-url", srv.URL+"/v1", "--run-id", "ns", "--no-stream", "hello")
	if !strings.Contains(h.stdout.String(), "hi\n") {
		t.Fatalf("the whole (unstreamed) answer is not printed:\n%s", h.stdout)
	}
	h.want(0, "run", "--store", h.store, "--model", "openai:local", "--base-url", srv.URL+"/v1", "--run-id", "st", "hello")
	mu.Lock()
	defer mu.Unlock()
	if len(streamed) != 2 || streamed[0] || !streamed[1] {
		t.Fatalf("stream flags the server saw: %v, want [false true]", streamed)
	}
	if !strings.Contains(h.stdout.String(), "hi") {
		t.Fatalf("the streamed answer is not printed:\n%s", h.stdout)
	}
}
