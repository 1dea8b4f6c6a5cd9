package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// twoRoundServer is a go-sdk v1.8.0 streamable-HTTP server (stateless:
// protocol 2026-07-28) with one multi-round-trip tool, "transfer", that
// asks two different questions in two rounds before it acts: round 1
// "small" (send 10 EUR?), round 2 "big" (also send 10000 EUR?). It counts
// the tools/call requests and the executions per idempotency key, and
// keeps the answers it got.
type twoRoundServer struct {
	mu      sync.Mutex
	calls   map[string]int
	execs   map[string]int
	answers []string
}

func newTwoRoundServer(t *testing.T) (*twoRoundServer, string) {
	t.Helper()
	s := &twoRoundServer{calls: map[string]int{}, execs: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "two", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	srv.AddTool(&mcp.Tool{Name: "transfer", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key := metaKey(req.Params.Meta)
			s.mu.Lock()
			s.calls[key]++
			for id, r := range req.Params.InputResponses {
				if er, ok := r.(*mcp.ElicitResult); ok {
					b, _ := json.Marshal(er.Content)
					s.answers = append(s.answers, id+"="+er.Action+string(b))
				}
			}
			s.mu.Unlock()
			accepted := func(id string) bool {
				er, ok := req.Params.InputResponses[id].(*mcp.ElicitResult)
				return ok && er.Action == "accept" && er.Content["ok"] == true
			}
			switch req.Params.RequestState {
			case "":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"small": &mcp.ElicitParams{
					Message: "Send 10 EUR to ACME?", RequestedSchema: schema}}, RequestState: "s1"}, nil
			case "s1":
				if !accepted("small") {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing sent"}}}, nil
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"big": &mcp.ElicitParams{
					Message: "Also send 10000 EUR to ACME?", RequestedSchema: schema}}, RequestState: "s2"}, nil
			case "s2":
				if !accepted("big") {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing sent"}}}, nil
				}
				s.mu.Lock()
				s.execs[key]++
				s.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent 10010 EUR"}}}, nil
			}
			return nil, errors.New("bad request state")
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func (s *twoRoundServer) counts(key string) (calls, execs int, answers []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key], s.execs[key], append([]string(nil), s.answers...)
}

func twoRoundTool(t *testing.T, url string) *mcptool.Tool {
	t.Helper()
	src := newSource(t, map[string]*mcptool.ServerConfig{"b": {URL: url}}, nil)
	ts, err := src.ServerTools(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	tl := byName(t, ts)["b__transfer"]
	if tl == nil {
		t.Fatal("no tool b__transfer")
	}
	return tl
}

// A person's answer belongs to the question it answered. When the
// continuation it was sent with is answered by a second, different
// question, that question goes to a person again: the first answer is
// never sent as the answer to a question nobody saw.
func TestReviewPersonAnswerIsNotReusedForTheNextRound(t *testing.T) {
	s, url := newTwoRoundServer(t)
	tr := twoRoundTool(t, url)
	rec := &handles{}
	const key = "run-r:c1"
	_, err := tr.Call(callCtx(key, rec), nil)
	var ie *tool.InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Prompt, "Send 10 EUR") {
		t.Fatalf("call: %v, want the first question", err)
	}
	ctx := tool.WithAnswer(callCtx(key, rec), json.RawMessage(`{"ok":true}`))
	res, err := tr.Resume(ctx, key, nil, rec.list()[0])
	calls, execs, answers := s.counts(key)
	if execs != 0 {
		t.Fatalf("the server acted (%d executions, result %+v) on an answer nobody gave to its second question; answers it got: %v", execs, res, answers)
	}
	if !errors.As(err, &ie) || !strings.Contains(ie.Prompt, "10000 EUR") {
		t.Fatalf("resume: %+v, %v; want the second question for a person", res, err)
	}
	if calls != 2 || len(answers) != 1 || !strings.HasPrefix(answers[0], "small=accept") {
		t.Fatalf("calls %d, answers %v; want the first call and one continuation with the answer to 'small'", calls, answers)
	}
	got := rec.list()
	var ih mcptool.InputHandle
	if err := json.Unmarshal(got[len(got)-1].Data, &ih); err != nil || ih.Round != 2 || ih.Step != mcptool.StepAsked {
		t.Fatalf("last handle %+v (%v), want round 2 asked", ih, err)
	}
	// The person answers the second question: one more continuation, one
	// execution.
	ctx = tool.WithAnswer(callCtx(key, rec), json.RawMessage(`{"ok":true}`))
	res, err = tr.Resume(ctx, key, nil, got[len(got)-1])
	if err != nil || res.Content != "sent 10010 EUR" {
		t.Fatalf("second resume: %+v, %v", res, err)
	}
	if calls, execs, _ := s.counts(key); calls != 3 || execs != 1 {
		t.Fatalf("calls %d, executions %d; want 3, 1", calls, execs)
	}
}

// A person's answer the tool cannot use (an unknown action, a missing
// answer to one of several questions) is not the end of the call: the
// question is asked again, saying what was wrong, and nothing is sent or
// recorded as sent.
func TestReviewUnusableAnswerAsksAgain(t *testing.T) {
	for _, bad := range []string{`{"action":"maybe"}`, `{"action":"accept","content":"yes"}`} {
		t.Run(bad, func(t *testing.T) {
			s, url := newTwoRoundServer(t)
			tr := twoRoundTool(t, url)
			rec := &handles{}
			const key = "run-u:c1"
			if _, err := tr.Call(callCtx(key, rec), nil); err == nil {
				t.Fatal("no question")
			}
			ctx := tool.WithAnswer(callCtx(key, rec), json.RawMessage(bad))
			_, err := tr.Resume(ctx, key, nil, rec.list()[0])
			var ie *tool.InputError
			if !errors.As(err, &ie) || !strings.Contains(ie.Prompt, "Send 10 EUR") || !strings.Contains(ie.Prompt, "answer") {
				t.Fatalf("resume with %s: %v; want the question again, saying the answer was not usable", bad, err)
			}
			if calls, _, _ := s.counts(key); calls != 1 {
				t.Fatalf("%d tools/call requests, want 1 (no continuation)", calls)
			}
			if n := len(rec.list()); n != 1 {
				t.Fatalf("%d handles recorded, want only the round", n)
			}
		})
	}
}
