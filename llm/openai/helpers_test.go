package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

var update = flag.Bool("update", false, "rewrite the golden request files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-SECRET-0123456789"

// fakeClock never sleeps: Sleep advances Now and records the wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// recorded is one request the fake server received.
type recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// server is a fake provider on 127.0.0.1 that answers request n with
// handlers[n-1] (the last handler repeats) and records every request.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func (s *server) Requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

type handler func(w http.ResponseWriter, r *http.Request)

func newServer(t testing.TB, handlers ...handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: b})
		n := len(s.reqs)
		s.mu.Unlock()
		if n > len(handlers) {
			n = len(handlers)
		}
		handlers[n-1](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sse answers with a whole SSE fixture.
func sse(t testing.TB, name string) handler {
	b := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req_stream")
		_, _ = w.Write(b)
	}
}

// jsonBody answers with status and a JSON fixture.
func jsonBody(t *testing.T, status int, name string) handler {
	b := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_abc123")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

// cut sends the first n bytes of an SSE fixture, flushes, and breaks the
// connection.
func cut(t *testing.T, name string, n int) handler {
	b := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write(b[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// cutAfterEvents cuts an SSE fixture after its first k events.
func cutAfterEvents(t *testing.T, name string, k int) handler {
	b := fixture(t, name)
	n := 0
	for i := 0; i < k; i++ {
		j := bytes.Index(b[n:], []byte("\n\n"))
		n += j + 2
	}
	return cut(t, name, n)
}

type bundle struct {
	srv      *server
	clock    *fakeClock
	mu       sync.Mutex
	attempts []transport.Attempt
}

func (b *bundle) Attempts() []transport.Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]transport.Attempt(nil), b.attempts...)
}

// config points a Config at the server with a fake clock and no jitter.
func (b *bundle) config() *openai.Config {
	tr := &http.Transport{}
	return &openai.Config{
		APIKey:     testKey,
		BaseURL:    b.srv.URL + "/v1",
		HTTPClient: &http.Client{Transport: tr},
		Clock:      b.clock,
		Jitter:     func(d time.Duration) time.Duration { return d },
		OnAttempt: func(a transport.Attempt) {
			b.mu.Lock()
			b.attempts = append(b.attempts, a)
			b.mu.Unlock()
		},
		Models: map[string]llm.Capabilities{
			"no-tools": {Streaming: true},
		},
	}
}

func setup(t testing.TB, handlers ...handler) *bundle {
	t.Helper()
	return &bundle{srv: newServer(t, handlers...), clock: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
}

func closeIdle(t testing.TB, cfg *openai.Config) {
	t.Cleanup(func() { cfg.HTTPClient.Transport.(*http.Transport).CloseIdleConnections() })
}

// golden compares a request body with testdata/<name>, indented.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("request body differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, buf.Bytes(), want)
	}
}

// collect drains a stream, returning its events and final error.
func collect(seq func(func(llm.StreamEvent, error) bool)) ([]llm.StreamEvent, error) {
	var evs []llm.StreamEvent
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func countType(evs []llm.StreamEvent, typ llm.StreamEventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
