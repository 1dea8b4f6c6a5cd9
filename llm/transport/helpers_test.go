package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock never really sleeps. In the default mode Sleep records d,
// advances Now and returns at once; with block set, Sleep waits for the
// context only (the clock never fires).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	block  bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	block := c.block
	if !block {
		c.now = c.now.Add(d)
	}
	c.mu.Unlock()
	if block {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func noJitter(d time.Duration) time.Duration { return d }

// bundle is what setup returns.
type bundle struct {
	srv      *httptest.Server
	client   *transport.Client
	clock    *fakeClock
	hc       *http.Client
	requests *atomic.Int64
	mu       sync.Mutex
	attempts []llm.Attempt
}

func (b *bundle) Attempts() []llm.Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]llm.Attempt(nil), b.attempts...)
}

func (b *bundle) req() *transport.Request {
	return &transport.Request{URL: b.srv.URL + "/v1/x", Body: []byte(`{"q":1}`)}
}

// setup starts a server running h (which receives the 1-based request
// number) and a Client with a fake clock and no jitter. mod may adjust the
// Config before New.
func setup(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request), mod func(*transport.Config)) *bundle {
	t.Helper()
	b := &bundle{clock: newFakeClock(), requests: new(atomic.Int64)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(b.requests.Add(1))
		h(n, w, r)
	}))
	t.Cleanup(b.srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b.hc = &http.Client{Transport: tr}
	cfg := &transport.Config{
		Options: transport.Options{HTTPClient: b.hc, Clock: b.clock.Now, Sleep: b.clock.Sleep, Jitter: noJitter, OnAttempt: func(a llm.Attempt) {
			b.mu.Lock()
			b.attempts = append(b.attempts, a)
			b.mu.Unlock()
		}},
	}
	if mod != nil {
		mod(cfg)
	}
	c, err := transport.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.client = c
	return b
}

// statusThen answers with status (and header kv pairs) for the first
// `fails` requests, then 200 "ok".
func statusThen(status, fails int, kv ...string) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= fails {
			for i := 0; i+1 < len(kv); i += 2 {
				w.Header().Set(kv[i], kv[i+1])
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"status ` + http.StatusText(status) + `"}`))
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}

func (b *bundle) attemptsSink() func(llm.Attempt) {
	return func(a llm.Attempt) {
		b.mu.Lock()
		b.attempts = append(b.attempts, a)
		b.mu.Unlock()
	}
}
