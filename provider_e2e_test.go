package actoviq_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// TestProvidersEndToEnd drives a run through the engine with each real
// adapter against a fake server: turn 1 streams a tool call, turn 2 text.
// The side-effect tool must run once, under the key <runID>:<callID>, and
// the second request must carry its result in the provider's shape.
func TestProvidersEndToEnd(t *testing.T) {
	type e2eCase struct {
		name     string
		turn1    string // SSE fixture with one "pay" call
		turn2    string // SSE fixture with text
		callID   string
		provider func(baseURL string, hc *http.Client) (llm.Provider, error)
		// check inspects the second request body.
		check func(t *testing.T, body map[string]any)
	}
	cases := []e2eCase{
		{
			name: "openai chat", turn1: "llm/openai/testdata/chat_tool.sse", turn2: "llm/openai/testdata/chat_text.sse", callID: "call_pay1",
			provider: func(u string, hc *http.Client) (llm.Provider, error) {
				return openai.NewChat(&openai.Config{APIKey: "sk-e2e-000000", BaseURL: u + "/v1", Options: transport.Options{HTTPClient: hc}})
			},
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				asst := msgs[len(msgs)-2].(map[string]any)
				last := msgs[len(msgs)-1].(map[string]any)
				calls := asst["tool_calls"].([]any)
				if asst["role"] != "assistant" || len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_pay1" {
					t.Errorf("assistant message = %v", asst)
				}
				if last["role"] != "tool" || last["tool_call_id"] != "call_pay1" || last["content"] != "paid 42" {
					t.Errorf("tool message = %v", last)
				}
			},
		},
		{
			name: "openai responses", turn1: "llm/openai/testdata/resp_tool.sse", turn2: "llm/openai/testdata/resp_text.sse", callID: "call_pay1",
			provider: func(u string, hc *http.Client) (llm.Provider, error) {
				return openai.NewResponses(&openai.Config{APIKey: "sk-e2e-000000", BaseURL: u + "/v1", Options: transport.Options{HTTPClient: hc}})
			},
			check: func(t *testing.T, body map[string]any) {
				in := body["input"].([]any)
				fc := in[len(in)-2].(map[string]any)
				out := in[len(in)-1].(map[string]any)
				if fc["type"] != "function_call" || fc["call_id"] != "call_pay1" || fc["id"] != "fc_1" {
					t.Errorf("function_call = %v", fc)
				}
				if out["type"] != "function_call_output" || out["call_id"] != "call_pay1" || out["output"] != "paid 42" {
					t.Errorf("function_call_output = %v", out)
				}
				if rs := in[len(in)-3].(map[string]any); rs["type"] != "reasoning" || rs["encrypted_content"] != "gAAAAB-opaque-state==" {
					t.Errorf("reasoning item not sent back: %v", rs)
				}
			},
		},
		{
			name: "anthropic", turn1: "llm/anthropic/testdata/tool.sse", turn2: "llm/anthropic/testdata/text.sse", callID: "toolu_pay1",
			provider: func(u string, hc *http.Client) (llm.Provider, error) {
				return anthropic.New(&anthropic.Config{APIKey: "sk-ant-e2e-000000", BaseURL: u, Options: transport.Options{HTTPClient: hc}})
			},
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				last := msgs[len(msgs)-1].(map[string]any)
				blocks := last["content"].([]any)
				res := blocks[0].(map[string]any)
				if last["role"] != "user" || res["type"] != "tool_result" || res["tool_use_id"] != "toolu_pay1" ||
					res["content"] != "paid 42" || res["is_error"] != false {
					t.Errorf("tool_result message = %v", last)
				}
				asst := msgs[len(msgs)-2].(map[string]any)
				if asst["role"] != "assistant" || len(asst["content"].([]any)) != 2 {
					t.Errorf("assistant message = %v", asst)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			turns := [][]byte{e2eFixture(t, tc.turn1), e2eFixture(t, tc.turn2)}
			var mu sync.Mutex
			var bodies [][]byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, b)
				n := len(bodies)
				mu.Unlock()
				if n > len(turns) {
					http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, 400)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(turns[n-1])
			}))
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			p, err := tc.provider(srv.URL, &http.Client{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}

			type payIn struct {
				Amount int `json:"amount"`
			}
			var keys []string
			pay := tool.Func(tool.Spec{Name: "pay", Description: "Pays an amount.", Effect: tool.SideEffect},
				func(ctx context.Context, in payIn) (string, error) {
					mu.Lock()
					keys = append(keys, tool.IdempotencyKey(ctx))
					mu.Unlock()
					return "paid 42", nil
				})

			rt, err := actoviq.New(storemem.New(nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Run(context.Background(), &actoviq.AgentSpec{ID: "payer", Instructions: "Pay.", Provider: p,
				Model: "test-model", Tools: []tool.Tool{pay}}, &actoviq.Input{Items: []item.Item{item.UserText("Pay 42")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted {
				t.Fatalf("status = %s, error = %v", res.Status, res.Error)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != 1 || keys[0] != res.RunID+":"+tc.callID {
				t.Fatalf("tool keys = %v, want one run %s:%s", keys, res.RunID, tc.callID)
			}
			if len(bodies) != 2 {
				t.Fatalf("requests = %d, want 2", len(bodies))
			}
			var body map[string]any
			if err := json.Unmarshal(bodies[1], &body); err != nil {
				t.Fatal(err)
			}
			tc.check(t, body)
			last := res.Output[len(res.Output)-1]
			if last.Type != item.TypeText || last.Text != "Hello, world." {
				t.Errorf("output = %+v", res.Output)
			}
		})
	}
}

func e2eFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
