package wiretest

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

	"github.com/actoviq/actoviq-go/llm"
)

var update = flag.Bool("update", false, "rewrite the golden request files in testdata")

// FakeClock never sleeps: Sleep advances Now and records the wait.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewFakeClock returns a clock at a fixed instant.
func NewFakeClock() *FakeClock { return &FakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the clock by it.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// Sleeps returns the waits slept so far.
func (c *FakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Recorded is one request the fake server received.
type Recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a fake provider on 127.0.0.1 that answers request n with
// handlers[n-1] (the last handler repeats) and records every request.
type Server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Recorded
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.reqs...)
}

// Handler answers one request.
type Handler func(w http.ResponseWriter, r *http.Request)

// NewServer starts a server; it stops at test cleanup.
func NewServer(t testing.TB, handlers ...Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: b})
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

// Fixture reads testdata/name.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SSE answers with a whole SSE fixture; requestIDHeader names the header
// that carries the request id ("X-Request-Id", "Request-Id").
func SSE(t testing.TB, requestIDHeader, name string) Handler {
	b := Fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set(requestIDHeader, "req_stream")
		_, _ = w.Write(b)
	}
}

// JSON answers with status and a JSON fixture.
func JSON(t testing.TB, requestIDHeader string, status int, name string) Handler {
	b := Fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(requestIDHeader, "req_abc123")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

// Cut sends the first n bytes of an SSE fixture, flushes, and breaks the
// connection.
func Cut(t testing.TB, name string, n int) Handler {
	b := Fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write(b[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// CutAfterEvents cuts an SSE fixture after its first k events.
func CutAfterEvents(t testing.TB, name string, k int) Handler {
	b := Fixture(t, name)
	n := 0
	for i := 0; i < k; i++ {
		j := bytes.Index(b[n:], []byte("\n\n"))
		n += j + 2
	}
	return Cut(t, name, n)
}

// Golden compares a request body with testdata/<name>, indented; go test
// -update rewrites the file.
func Golden(t testing.TB, name string, body []byte) {
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

// Collect drains a stream, returning its events and final error.
func Collect(seq func(func(llm.StreamEvent, error) bool)) ([]llm.StreamEvent, error) {
	var evs []llm.StreamEvent
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// CountType counts events of one type.
func CountType(evs []llm.StreamEvent, typ llm.StreamEventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// MustJSON encodes v.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
