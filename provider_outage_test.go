package actoviq_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// noSleep is a transport Sleep whose backoff returns at once.
func noSleep(ctx context.Context, d time.Duration) error {
	return ctx.Err()
}

// flakyModel is an OpenAI Chat Completions server on a fixed loopback
// address that can go down (its listener closed: connection refused) and
// come back on the same address. Turn 1 streams a "pay" call, every later
// request streams text. While "failing" is set it answers with a status
// instead.
type flakyModel struct {
	t       *testing.T
	addr    string
	mu      sync.Mutex
	srv     *http.Server
	served  atomic.Int32 // requests that reached the handler
	failing func(w http.ResponseWriter) bool
}

func newFlakyModel(t *testing.T) *flakyModel {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &flakyModel{t: t, addr: ln.Addr().String()}
	m.serve(ln)
	t.Cleanup(m.down)
	return m
}

func (m *flakyModel) serve(ln net.Listener) {
	turn1, turn2 := e2eFixture(m.t, "llm/openai/testdata/chat_tool.sse"), e2eFixture(m.t, "llm/openai/testdata/chat_text.sse")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := m.served.Add(1)
		m.mu.Lock()
		fail := m.failing
		m.mu.Unlock()
		if fail != nil && fail(w) {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			_, _ = w.Write(turn1)
			return
		}
		_, _ = w.Write(turn2)
	})}
	m.mu.Lock()
	m.srv = srv
	m.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// down closes the listener and every connection: connection refused.
func (m *flakyModel) down() {
	m.mu.Lock()
	srv := m.srv
	m.srv = nil
	m.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// up listens again on the same address.
func (m *flakyModel) up() {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		m.t.Fatalf("listen again on %s: %v", m.addr, err)
	}
	m.serve(ln)
}

func (m *flakyModel) setFailing(f func(w http.ResponseWriter) bool) {
	m.mu.Lock()
	m.failing = f
	m.mu.Unlock()
}

// TestProviderOutageInterruptsAndResumes: the model server goes down right
// after the first tool call. The run stops interrupted (kind provider) with
// the transport's evidence; the tool's side effect stays committed; once
// the server is back, Resume makes one new model call and the run
// completes. The tool ran once and the model was asked three times.
func TestProviderOutageInterruptsAndResumes(t *testing.T) {
	cases := []struct {
		name string
		// outage makes the server fail; it is called from the tool, so the
		// next model call is the first to see it.
		outage func(m *flakyModel)
		check  func(t *testing.T, pf *actoviq.ProviderFailure, m *flakyModel)
	}{
		{
			name:   "connection refused",
			outage: func(m *flakyModel) { m.down() },
			check: func(t *testing.T, pf *actoviq.ProviderFailure, m *flakyModel) {
				if pf.Attempts != 3 || pf.Status != 0 || pf.Code != "transport" {
					t.Errorf("evidence = %+v, want 3 attempts, no status, code transport", pf)
				}
				if !strings.Contains(pf.Error, "refused") {
					t.Errorf("error text %q does not say the connection was refused", pf.Error)
				}
			},
		},
		{
			name: "503 with a request id",
			outage: func(m *flakyModel) {
				m.setFailing(func(w http.ResponseWriter) bool {
					w.Header().Set("X-Request-Id", "req_outage_7")
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(503)
					_, _ = w.Write([]byte(`{"error":{"message":"The server is overloaded (key sk-live-abcdef123456)","type":"server_error","code":"server_is_overloaded"}}`))
					return true
				})
			},
			check: func(t *testing.T, pf *actoviq.ProviderFailure, m *flakyModel) {
				if pf.Attempts != 3 || pf.Status != 503 || pf.RequestID != "req_outage_7" || pf.Code != "server_is_overloaded" {
					t.Errorf("evidence = %+v, want 3 attempts, status 503, request id, code", pf)
				}
				if strings.Contains(pf.Error, "sk-live-abcdef123456") || !strings.Contains(pf.Error, "overloaded") {
					t.Errorf("error text not scrubbed or empty: %q", pf.Error)
				}
			},
		},
		{
			name: "429 asking a wait past the cap",
			outage: func(m *flakyModel) {
				m.setFailing(func(w http.ResponseWriter) bool {
					w.Header().Set("Retry-After", "120")
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(429)
					_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
					return true
				})
			},
			check: func(t *testing.T, pf *actoviq.ProviderFailure, m *flakyModel) {
				// The wait is above the transport's 30 s cap: not slept, one attempt.
				if pf.Attempts != 1 || pf.Status != 429 || pf.RetryAfter != 120*time.Second {
					t.Errorf("evidence = %+v, want 1 attempt, status 429, retry after 2m", pf)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newFlakyModel(t)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			p, err := openai.NewChat(&openai.Config{
				APIKey:  "sk-test-000000",
				BaseURL: "http://" + m.addr + "/v1",
				Options: transport.Options{HTTPClient: &http.Client{Transport: tr}, Sleep: noSleep},
			})
			if err != nil {
				t.Fatal(err)
			}
			type payIn struct {
				Amount int `json:"amount"`
			}
			var paid atomic.Int32
			pay := tool.Func(tool.Spec{Name: "pay", Description: "Pays an amount.", Effect: tool.SideEffect},
				func(ctx context.Context, in payIn) (string, error) {
					paid.Add(1)
					if paid.Load() == 1 {
						tc.outage(m)
					}
					return "paid 42", nil
				})
			st, err := storesqlite.Open(t.TempDir()+"/runs.db", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rt, err := actoviq.New(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var asked atomic.Int32
			count := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
				if ev.Type == actoviq.EvModelRequest {
					asked.Add(1)
				}
			})
			agent := &actoviq.AgentSpec{ID: "payer", Instructions: "Pay.", Provider: p, Model: "gpt-test", Tools: []tool.Tool{pay}}
			ctx := context.Background()
			res, err := rt.Run(ctx, agent, &actoviq.Input{Items: []item.Item{item.UserText("Pay 42")}}, count)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptProvider {
				t.Fatalf("after the outage: status %s, interruptions %+v, error %v; want interrupted (provider)", res.Status, res.Interruptions, res.Error)
			}
			pf := res.Interruptions[0].Provider
			if pf == nil || pf.Provider != "openai.chat" || pf.Model != "gpt-test" || pf.Turn != 2 || pf.Consecutive != 1 {
				t.Fatalf("evidence = %+v", pf)
			}
			tc.check(t, pf, m)

			// What an operator sees: the open interruption with its evidence,
			// the committed call in the ledger.
			info, err := rt.Get(ctx, res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if info.Status != actoviq.StatusInterrupted || len(info.Interruptions) != 1 || info.Interruptions[0].Provider == nil {
				t.Fatalf("Get: status %s, interruptions %+v", info.Status, info.Interruptions)
			}
			if len(info.Ledger) != 1 || info.Ledger[0].State != "committed" {
				t.Fatalf("ledger = %+v, want the pay call committed", info.Ledger)
			}

			// The server comes back.
			if tc.name == "connection refused" {
				m.up()
			} else {
				m.setFailing(nil)
			}
			res, err = rt.Resume(ctx, agent, res.RunID, &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{count}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted {
				t.Fatalf("after resume: status %s, error %v", res.Status, res.Error)
			}
			if n := paid.Load(); n != 1 {
				t.Errorf("the tool ran %d times, want 1", n)
			}
			if n := asked.Load(); n != 3 {
				t.Errorf("the model was asked %d times, want 3", n)
			}
			if out := res.Output[len(res.Output)-1]; out.Text != "Hello, world." {
				t.Errorf("output = %+v", res.Output)
			}
		})
	}
}

// TestProviderFinalErrors: errors that no retry cures end the run failed,
// with what to do next; nothing is retried by the runtime.
func TestProviderFinalErrors(t *testing.T) {
	cases := []struct {
		status           int
		body, code, hint string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-live-abcdef123456","type":"invalid_request_error","code":"invalid_api_key"}}`, "auth", "check OPENAI_API_KEY"},
		{403, `{"error":{"message":"not allowed","type":"permission_error"}}`, "permission", "OPENAI_API_KEY"},
		{404, `{"error":{"message":"The model gpt-test does not exist","type":"invalid_request_error","code":"model_not_found"}}`, "model_not_found", "check the model name and the base URL"},
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`, "context_length", "context window"},
		{400, `{"error":{"message":"Your request was rejected as a result of our safety system","type":"invalid_request_error","code":"content_policy_violation"}}`, "policy_refusal", "content policy"},
		{400, `{"error":{"message":"Unrecognized request argument","type":"invalid_request_error"}}`, "bad_request", "supports what the agent uses"},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			var served atomic.Int32
			m := newFlakyModel(t)
			m.setFailing(func(w http.ResponseWriter) bool {
				served.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
				return true
			})
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			p, err := openai.NewChat(&openai.Config{
				APIKey:  "sk-test-000000",
				BaseURL: "http://" + m.addr + "/v1",
				Options: transport.Options{HTTPClient: &http.Client{Transport: tr}, Sleep: noSleep},
			})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := actoviq.New(storesqliteTemp(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Run(context.Background(), &actoviq.AgentSpec{ID: "a", Provider: p, Model: "gpt-test"},
				&actoviq.Input{Items: []item.Item{item.UserText("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusFailed || res.Error == nil || res.Error.Code != tc.code {
				t.Fatalf("status %s, error %+v; want failed with code %s", res.Status, res.Error, tc.code)
			}
			if !strings.Contains(res.Error.Hint, tc.hint) || !strings.Contains(res.Error.Error(), tc.hint) {
				t.Errorf("hint %q does not say %q", res.Error.Hint, tc.hint)
			}
			if strings.Contains(res.Error.Error(), "sk-live-abcdef123456") {
				t.Errorf("error text carries the key: %s", res.Error.Error())
			}
			if n := served.Load(); n != 1 {
				t.Errorf("%d requests for a final error, want 1", n)
			}
		})
	}
}

// TestProviderInterruptionsBounded: Limits.MaxProviderInterruptions
// consecutive provider interruptions are allowed; the next failure ends
// the run failed.
func TestProviderInterruptionsBounded(t *testing.T) {
	m := newFlakyModel(t)
	m.down()
	p, err := openai.NewChat(&openai.Config{APIKey: "sk-test-000000", BaseURL: "http://" + m.addr + "/v1", Options: transport.Options{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(storesqliteTemp(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "a", Provider: p, Model: "gpt-test", Limits: actoviq.Limits{MaxProviderInterruptions: 2}}
	ctx := context.Background()
	res, err := rt.Run(ctx, agent, &actoviq.Input{Items: []item.Item{item.UserText("hi")}})
	for i := 1; err == nil && res.Status == actoviq.StatusInterrupted; i++ {
		if got := res.Interruptions[0].Provider.Consecutive; got != i {
			t.Fatalf("interruption %d counts %d in a row", i, got)
		}
		res, err = rt.Resume(ctx, agent, res.RunID, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusFailed || res.Error.Code != "provider_unavailable" {
		t.Fatalf("status %s, error %v; want failed provider_unavailable after 2 interruptions", res.Status, res.Error)
	}
	if _, err := rt.Resume(ctx, agent, res.RunID, nil); err != nil && !errors.Is(err, actoviq.ErrRunFinished) {
		t.Fatal(err)
	}
}

func storesqliteTemp(t *testing.T) *storesqlite.Store {
	t.Helper()
	st, err := storesqlite.Open(t.TempDir()+"/runs.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestBrokenStreamResumesAfresh: a stream that breaks after it delivered
// text stops the run interrupted (provider) with the typed stream
// interruption and the partial output as evidence; Resume asks the model
// again and the partial text never enters the transcript.
func TestBrokenStreamResumesAfresh(t *testing.T) {
	full := e2eFixture(t, "llm/openai/testdata/chat_text.sse")
	cut := full[:strings.Index(string(full), `"content":"Hello"`)+200]
	cut = cut[:strings.LastIndex(string(cut), "\n\n")+2] // whole events only
	m := newFlakyModel(t)
	m.setFailing(func(w http.ResponseWriter) bool {
		if m.served.Load() > 1 {
			return false // the second request gets the whole stream
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(cut)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks mid-stream
	})
	p, err := openai.NewChat(&openai.Config{APIKey: "sk-test-000000", BaseURL: "http://" + m.addr + "/v1", Options: transport.Options{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(storesqliteTemp(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "a", Provider: p, Model: "gpt-test"}
	ctx := context.Background()
	res, err := rt.Run(ctx, agent, &actoviq.Input{Items: []item.Item{item.UserText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptProvider {
		t.Fatalf("status %s, %+v, error %v", res.Status, res.Interruptions, res.Error)
	}
	pf := res.Interruptions[0].Provider
	if pf.Code != "stream_interrupted" || len(pf.Partial) != 1 || pf.Partial[0].Text != "Hello" {
		t.Fatalf("evidence = %+v, want stream_interrupted with the partial \"Hello\"", pf)
	}
	res, err = rt.Resume(ctx, agent, res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted {
		t.Fatalf("after resume: %s %v", res.Status, res.Error)
	}
	info, err := rt.Get(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range info.Transcript {
		if it.Type == item.TypeText {
			texts = append(texts, it.Text)
		}
	}
	if len(texts) != 2 || texts[0] != "hi" || texts[1] != "Hello, world." {
		t.Fatalf("transcript texts = %q, want the input and one fresh answer", texts)
	}
	if n := m.served.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (a broken stream is never replayed by the transport)", n)
	}
}

// TestProviderTransientClasses: a 429 the transport treats as final (no
// quota left) and a model call that hits Limits.ModelTimeout interrupt the
// run too: an operator can fix either and resume.
func TestProviderTransientClasses(t *testing.T) {
	cases := []struct {
		name   string
		limits actoviq.Limits
		fail   func(w http.ResponseWriter, r *http.Request, release <-chan struct{})
		code   string
		status int
	}{
		{name: "429 insufficient_quota", code: "insufficient_quota", status: 429, fail: func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			_, _ = w.Write([]byte(`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`))
		}},
		{name: "model timeout", code: "timeout", limits: actoviq.Limits{ModelTimeout: 50 * time.Millisecond},
			fail: func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.fail(w, r, release) }))
			defer srv.Close()
			defer close(release)
			p, err := openai.NewChat(&openai.Config{APIKey: "sk-test-000000", BaseURL: srv.URL + "/v1",
				Options: transport.Options{Sleep: noSleep, MaxRetries: transport.Retries(0)}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := actoviq.New(storesqliteTemp(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Run(context.Background(), &actoviq.AgentSpec{ID: "a", Provider: p, Model: "gpt-test", Limits: tc.limits},
				&actoviq.Input{Items: []item.Item{item.UserText("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptProvider {
				t.Fatalf("status %s, error %v, interruptions %+v; want interrupted (provider)", res.Status, res.Error, res.Interruptions)
			}
			if pf := res.Interruptions[0].Provider; pf.Code != tc.code || pf.Status != tc.status {
				t.Fatalf("evidence %+v, want code %s status %d", pf, tc.code, tc.status)
			}
		})
	}
}
