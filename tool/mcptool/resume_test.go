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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// resumeServer is a streamable-HTTP MCP server (protocol 2025-11-25, with
// an event store, so its streams can be resumed) whose "pay" tool closes
// the call's response stream before it answers, the way a server that
// sheds long-lived connections does (SEP-1699). It records every
// tools/call POST, every resuming GET and every time the tool ran.
type resumeServer struct {
	ts *httptest.Server

	mu         sync.Mutex
	callPOSTs  []string // idempotency keys of tools/call POSTs
	resumeGETs []string // Last-Event-ID of each resuming GET
	ran        []string // idempotency keys of the tool's runs
	refuseGET  bool     // answer resuming GETs with 500
}

func newResumeServer(t *testing.T) *resumeServer {
	t.Helper()
	rs := &resumeServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(annotated("pay", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		key, _ := req.Params.Meta[mcptool.MetaIdempotencyKey].(string)
		rs.mu.Lock()
		rs.ran = append(rs.ran, key)
		rs.mu.Unlock()
		var args struct {
			Close bool `json:"close"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		if args.Close && req.Extra != nil && req.Extra.CloseSSEStream != nil {
			// The answer goes to the event store; the client must
			// come back for it.
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid " + key}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	rs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			if msg.Method == "tools/call" {
				key, _ := msg.Params.Meta[mcptool.MetaIdempotencyKey].(string)
				rs.mu.Lock()
				rs.callPOSTs = append(rs.callPOSTs, key)
				rs.mu.Unlock()
			}
		case http.MethodGet:
			if id := r.Header.Get("Last-Event-ID"); id != "" {
				rs.mu.Lock()
				rs.resumeGETs = append(rs.resumeGETs, id)
				refuse := rs.refuseGET
				rs.mu.Unlock()
				if refuse {
					http.Error(w, "resumption refused", http.StatusInternalServerError)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.ts.Close)
	return rs
}

func (rs *resumeServer) seen() (posts, gets, ran []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.callPOSTs...), append([]string(nil), rs.resumeGETs...), append([]string(nil), rs.ran...)
}

// TestResumedStreamRunsToolOnce: the server closes a side-effect call's
// response stream before answering. The client resumes the stream (GET with
// Last-Event-ID) and reads the answer: the run completes without a
// reconciliation, the tools/call was POSTed once and the tool ran once, on
// one connection.
func TestResumedStreamRunsToolOnce(t *testing.T) {
	t.Parallel()
	rs := newResumeServer(t)
	src := newSource(t, map[string]*mcptool.ServerConfig{"bank": {URL: rs.ts.URL + "/mcp"}}, nil)
	tools, err := src.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tools[0].Spec().Effect != tool.SideEffect {
		t.Fatalf("pay is %s", tools[0].Spec().Effect)
	}
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Tools: tools, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "bank__pay", `{"close":true}`)}},
		scripted.Turn{Text: "done"})}
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("pay")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || len(res.Interruptions) != 0 {
		t.Fatalf("run %+v", res)
	}
	info, err := rt.Get(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if en := info.Ledger[0]; en.State != store.LedgerCommitted || en.Attempt != 1 {
		t.Fatalf("ledger entry %+v", en)
	}
	var got *item.ToolResult
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			got = it.ToolResult
		}
	}
	if got == nil || got.IsError || got.Content != "paid r1:c1" {
		t.Fatalf("tool result %+v", got)
	}
	posts, gets, ran := rs.seen()
	if strings.Join(posts, " ") != "r1:c1" || strings.Join(ran, " ") != "r1:c1" {
		t.Fatalf("tools/call POSTs %q, runs %q: want one each", posts, ran)
	}
	if len(gets) == 0 {
		t.Fatal("the answer arrived without a resuming GET: the stream was not closed early")
	}
	if n := src.Connections("bank"); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestRefusedResumptionIsUnknown: when the stream cannot be resumed (the
// resuming GET fails), the call's outcome is unknown and it is not re-sent,
// although the tool did run; the next call connects again.
func TestRefusedResumptionIsUnknown(t *testing.T) {
	t.Parallel()
	rs := newResumeServer(t)
	rs.refuseGET = true
	src := newSource(t, map[string]*mcptool.ServerConfig{"bank": {URL: rs.ts.URL + "/mcp"}}, nil)
	ts, err := src.ServerTools(context.Background(), "bank")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{"close":true}`))
	if !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("refused resumption: %v, want an unknown outcome", err)
	}
	res, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c2"), json.RawMessage(`{}`))
	if err != nil || res.Content != "paid r1:c2" {
		t.Fatalf("next call: %+v %v", res, err)
	}
	posts, gets, ran := rs.seen()
	if strings.Join(posts, " ") != "r1:c1 r1:c2" {
		t.Fatalf("tools/call POSTs %q: the failed call was re-sent", posts)
	}
	if strings.Join(ran, " ") != "r1:c1 r1:c2" {
		t.Fatalf("runs %q", ran)
	}
	if len(gets) != 1 {
		t.Fatalf("resuming GETs %q, want 1 (a refused resumption is not retried)", gets)
	}
	if n := src.Connections("bank"); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
