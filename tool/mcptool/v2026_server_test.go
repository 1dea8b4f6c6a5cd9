package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// v26Server is a streamable-HTTP MCP server on the go-sdk v1.8.0
// (stateless, so it speaks protocol 2026-07-28, and 2025-11-25 and older
// with clients that ask for them), with:
//
//   - "echo": a plain tool;
//   - "pay": a multi-round-trip tool (SEP-2322): its first answer is
//     input_required with one elicitation ("confirm"); the continuation
//     carrying an accepted answer pays (one execution per key);
//   - "slow_task": answered with a task of the Tasks extension (SEP-2663):
//     the front handler creates the task (one execution per key) and
//     serves tasks/get and tasks/cancel, which the go-sdk has no API for;
//     a task completes when the test calls complete;
//   - "drop": runs (one execution per key), then sends a priming SSE event
//     with an id and drops the connection mid-call.
//
// It counts, per idempotency key, the tools/call POSTs that reached it and
// the executions, and counts the GETs (stream resumptions).
type v26Server struct {
	ts  *httptest.Server
	sdk http.Handler

	mu      sync.Mutex
	posts   map[string]int // tools/call POSTs per key
	execs   map[string]int // executions per key
	tasks   map[string]*srvTask
	gets    map[string]int // tasks/get per task
	cancels []string
	getsSSE int // GET requests (stream resumption attempts)
	seq     int
	pays    []string // the "confirm" answers the pay tool got

	// onGet, when set, is called after the n-th tasks/get of a task was
	// counted, before it is answered.
	onGet func(id string, n int)
	// cancelled receives each tasks/cancel's task id.
	cancelled chan string
}

type srvTask struct {
	key    string
	status string
	result json.RawMessage
}

func newV26Server(t *testing.T, stateful bool) *v26Server {
	t.Helper()
	s := &v26Server{posts: map[string]int{}, execs: map[string]int{}, tasks: map[string]*srvTask{}, gets: map[string]int{}, cancelled: make(chan string, 16)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "v26", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.exec(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + string(req.Params.Arguments)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ans, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
						Message:         "Pay 40 EUR to ACME?",
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
					}},
					RequestState: "state-1",
				}, nil
			}
			if req.Params.RequestState != "state-1" {
				return nil, fmt.Errorf("request state %q not echoed", req.Params.RequestState)
			}
			s.mu.Lock()
			s.pays = append(s.pays, fmt.Sprintf("%s %v", ans.Action, ans.Content["ok"]))
			s.mu.Unlock()
			if ans.Action != "accept" || ans.Content["ok"] != true {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not paid"}}}, nil
			}
			s.exec(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	for _, n := range []string{"slow_task", "drop"} {
		srv.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, fmt.Errorf("%s is served by the front handler", n)
			})
	}
	s.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: !stateful})
	s.ts = httptest.NewServer(s)
	t.Cleanup(s.ts.Close)
	return s
}

func (s *v26Server) url() string { return s.ts.URL }

// setOnGet sets the tasks/get hook.
func (s *v26Server) setOnGet(fn func(id string, n int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onGet = fn
}

func metaKey(m map[string]any) string {
	k, _ := m[mcptool.MetaIdempotencyKey].(string)
	return k
}

func (s *v26Server) exec(meta map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs[metaKey(meta)]++
}

func (s *v26Server) counts(key string) (posts, execs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[key], s.execs[key]
}

func (s *v26Server) taskGets(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[id]
}

// complete ends every working task of key with a result.
func (s *v26Server) complete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tk := range s.tasks {
		if tk.key == key && tk.status == "working" {
			tk.status = "completed"
			tk.result = json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"report for %s"}],"isError":false}`, key))
		}
	}
}

// forget makes the server lose every task (as after its TTL).
func (s *v26Server) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = map[string]*srvTask{}
}

func (s *v26Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.mu.Lock()
		s.getsSSE++
		s.mu.Unlock()
	}
	if r.Method != http.MethodPost {
		s.sdk.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta   map[string]any `json:"_meta"`
			Name   string         `json:"name"`
			TaskID string         `json:"taskId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	answer := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}
	fail := func(code int, text string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": code, "message": text}})
	}
	now := time.Now().UTC().Format(time.RFC3339)
	switch msg.Method {
	case "tools/call":
		key := metaKey(msg.Params.Meta)
		s.mu.Lock()
		s.posts[key]++
		s.mu.Unlock()
		switch msg.Params.Name {
		case "slow_task":
			s.mu.Lock()
			s.seq++
			id := fmt.Sprintf("task-%d", s.seq)
			s.tasks[id] = &srvTask{key: key, status: "working"}
			s.execs[key]++
			s.mu.Unlock()
			answer(map[string]any{"resultType": "task", "taskId": id, "status": "working", "createdAt": now, "lastUpdatedAt": now, "ttlMs": 60000, "pollIntervalMs": 10})
			return
		case "drop":
			s.exec(msg.Params.Meta)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "id: e1\nretry: 10\ndata: \n\n")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	case "tasks/get":
		s.mu.Lock()
		s.gets[msg.Params.TaskID]++
		n, hook := s.gets[msg.Params.TaskID], s.onGet
		s.mu.Unlock()
		if hook != nil {
			hook(msg.Params.TaskID, n)
		}
		s.mu.Lock()
		tk, ok := s.tasks[msg.Params.TaskID]
		var res map[string]any
		if ok {
			res = map[string]any{"resultType": "complete", "taskId": msg.Params.TaskID, "status": tk.status, "createdAt": now, "lastUpdatedAt": now, "ttlMs": 60000, "pollIntervalMs": 10}
			if tk.result != nil {
				res["result"] = tk.result
			}
		}
		s.mu.Unlock()
		if !ok {
			fail(-32602, "unknown task "+msg.Params.TaskID)
			return
		}
		answer(res)
		return
	case "tasks/cancel":
		s.mu.Lock()
		tk, ok := s.tasks[msg.Params.TaskID]
		if ok && tk.status == "working" {
			tk.status = "cancelled"
		}
		s.cancels = append(s.cancels, msg.Params.TaskID)
		s.mu.Unlock()
		s.cancelled <- msg.Params.TaskID
		if !ok {
			fail(-32602, "unknown task "+msg.Params.TaskID)
			return
		}
		answer(map[string]any{"resultType": "complete"})
		return
	}
	s.sdk.ServeHTTP(w, r)
}
