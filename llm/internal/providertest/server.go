package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// requestID is what the fake server reports as its request id.
const requestID = "req_conformance_1"

// handler answers one request.
type handler func(w http.ResponseWriter, r *http.Request)

// server is a fake provider that answers request n with handlers[n-1] (the
// last one repeats) and counts requests.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	n       int
	headers []http.Header
	bodies  [][]byte
}

func newServer(t *testing.T, requestIDHeader string, handlers ...handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice a client that
		// goes away (see hold).
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.n++
		s.headers = append(s.headers, r.Header.Clone())
		s.bodies = append(s.bodies, body)
		n := s.n
		s.mu.Unlock()
		if n > len(handlers) {
			n = len(handlers)
		}
		w.Header().Set(requestIDHeader, requestID)
		handlers[n-1](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests is how many requests arrived.
func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// body is the body of request n (from 1).
func (s *server) body(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.bodies) {
		return nil
	}
	return s.bodies[n-1]
}

// sawHeaderValue reports whether some request carried a header whose value
// contains v.
func (s *server) sawHeaderValue(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.headers {
		for _, vs := range h {
			for _, x := range vs {
				if bytes.Contains([]byte(x), []byte(v)) {
					return true
				}
			}
		}
	}
	return false
}

func sse(b []byte) handler {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}
}

func status(code int, contentType string, b []byte) handler {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
}

func jsonBody(code int, b []byte) handler { return status(code, "application/json", b) }

// cut sends the first n bytes of a stream, flushes, and breaks the
// connection.
func cut(b []byte, n int) handler {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// hold sends b, flushes, and keeps the stream open until the client goes
// away, which it reports by closing released.
func hold(b []byte, released chan<- struct{}) handler {
	var once sync.Once
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		once.Do(func() { close(released) })
	}
}

// sseBlocks splits a stream into its events, each with its blank line.
// Comment-only blocks (keep-alives) are not events and stay attached to
// the event before them.
func sseBlocks(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		var blk []byte
		if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
			blk, b = b[:i+2], b[i+2:]
		} else {
			blk, b = b, nil
		}
		if isComment(blk) && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], blk...)
			continue
		}
		out = append(out, append([]byte(nil), blk...))
	}
	return out
}

func isComment(blk []byte) bool {
	for _, line := range bytes.Split(bytes.TrimSpace(blk), []byte("\n")) {
		if len(line) > 0 && line[0] != ':' {
			return false
		}
	}
	return true
}

// prefixLen is the length of the first k events of a stream.
func prefixLen(b []byte, k int) int {
	n := 0
	for _, blk := range sseBlocks(b)[:k] {
		n += len(blk)
	}
	return n
}
