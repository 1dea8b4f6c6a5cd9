package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// bogusTaskServer answers tools/call of "job" with task t-1 and every
// tasks/get with the given result object, whatever task it asked for.
func bogusTaskServer(t *testing.T, getResult string) (url string, calls *int, mu *sync.Mutex) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bogus", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("served by the front handler")
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	mu = &sync.Mutex{}
	calls = new(int)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			sdk.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		var result string
		switch {
		case msg.Method == "tools/call" && msg.Params.Name == "job":
			mu.Lock()
			*calls++
			mu.Unlock()
			result = `{"resultType":"task","taskId":"t-1","status":"working","ttlMs":60000,"pollIntervalMs":5}`
		case msg.Method == "tasks/get":
			result = getResult
		default:
			sdk.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, calls, mu
}

// A server's tasks/get answer is the call's outcome only when it is about
// the call's task and holds a final tool result: the completed result of
// another task, or a "result" that is itself a task handle or an
// input_required round, leaves the call's outcome unknown with the task id,
// never a committed result.
func TestReviewBogusTaskAnswersAreUnknown(t *testing.T) {
	for name, get := range map[string]string{
		"other task":     `{"taskId":"t-OTHER","status":"completed","result":{"content":[{"type":"text","text":"another call's report"}]}}`,
		"nested task":    `{"taskId":"t-1","status":"completed","result":{"resultType":"task","taskId":"t-2","status":"working"}}`,
		"nested input":   `{"taskId":"t-1","status":"completed","result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object"}}}}}}`,
		"missing result": `{"taskId":"t-1","status":"completed"}`,
	} {
		t.Run(name, func(t *testing.T) {
			url, calls, mu := bogusTaskServer(t, get)
			src := newSource(t, map[string]*mcptool.ServerConfig{"g": {URL: url}}, &mcptool.Options{TaskPoll: 5e6})
			ts, err := src.ServerTools(context.Background(), "g")
			if err != nil {
				t.Fatal(err)
			}
			job := byName(t, ts)["g__job"]
			rec := &handles{}
			res, err := job.Call(callCtx("run-b:c1", rec), nil)
			if !errors.Is(err, tool.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "t-1") {
				t.Fatalf("call: %+v, %v; want an unknown outcome naming task t-1", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if *calls != 1 || len(rec.list()) != 1 {
				t.Fatalf("tools/call %d, handles %d; want 1, 1", *calls, len(rec.list()))
			}
		})
	}
}
