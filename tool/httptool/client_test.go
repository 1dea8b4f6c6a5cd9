package httptool_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

// target is an API under test. With dedupe, it keeps the first answer per
// idempotency key and replays it (Idempotent-Replayed: true) without acting
// again; without, every request acts.
type target struct {
	t      *testing.T
	srv    *httptest.Server
	dedupe bool
	// answer decides the answer to the n-th request (from 1) of a key that
	// the target has not answered with a stored 2xx; nil means 200.
	answer func(n int, w http.ResponseWriter) (status int, acted bool)
	// hang, when set, holds every request that acts until it is closed.
	hang chan struct{}

	mu       sync.Mutex
	requests []string       // the idempotency key header of each request, in order
	effects  int            // requests that acted
	stored   map[string]int // key → stored status
	arrived  chan string    // each key as its request arrives
}

func newTarget(t *testing.T, dedupe bool) *target {
	g := &target{t: t, dedupe: dedupe, stored: map[string]int{}, arrived: make(chan string, 64)}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(func() {
		g.mu.Lock()
		if g.hang != nil {
			select {
			case <-g.hang:
			default:
				close(g.hang)
			}
		}
		g.mu.Unlock()
		g.srv.Close()
	})
	return g
}

func (g *target) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	g.mu.Lock()
	g.requests = append(g.requests, key)
	n := 0
	for _, k := range g.requests {
		if k == key {
			n++
		}
	}
	if st, ok := g.stored[key]; ok && g.dedupe {
		g.mu.Unlock()
		g.arrived <- key
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(st)
		io.WriteString(w, `{"id":"pay_1","amount":5}`)
		return
	}
	status, acted := http.StatusOK, true
	if g.answer != nil {
		status, acted = g.answer(n, w)
	}
	if acted {
		// It acted: from now on, the same key gets the stored answer.
		g.effects++
		g.stored[key] = http.StatusOK
	}
	hang := g.hang
	g.mu.Unlock()
	g.arrived <- key
	if hang != nil && acted {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	w.WriteHeader(status)
	if status/100 == 2 {
		io.WriteString(w, `{"id":"pay_1","amount":5}`)
	} else {
		io.WriteString(w, `{"error":"status `+http.StatusText(status)+`"}`)
	}
}

// set changes the target's behaviour while it serves.
func (g *target) set(f func(*target)) {
	g.mu.Lock()
	f(g)
	g.mu.Unlock()
}

// holdRequests makes the target hold every request that acts until the
// returned channel is closed (or the test ends).
func (g *target) holdRequests() chan struct{} {
	ch := make(chan struct{})
	g.set(func(g *target) { g.hang = ch })
	return ch
}

func (g *target) counts() (requests, effects int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests), g.effects
}

func (g *target) keys() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.requests...)
}

func client(t *testing.T, cfg *httptool.Config) *httptool.Client {
	t.Helper()
	c, err := httptool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func post(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/payments?api_key=sk-secret", strings.NewReader(`{"to":"ada","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestSendsTheCallsKey(t *testing.T) {
	t.Parallel()
	g := newTarget(t, false)
	ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
	for _, tc := range []struct {
		cfg  *httptool.Config
		want string
	}{
		{nil, `"run-1:call_1"`},
		{&httptool.Config{Key: httptool.BareKey}, `run-1:call_1`},
	} {
		res, err := client(t, tc.cfg).Do(post(t, ctx, g.srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if got := g.keys(); got[len(got)-1] != tc.want || res.Key != tc.want {
			t.Errorf("sent %q (Response.Key %q), want %q", got[len(got)-1], res.Key, tc.want)
		}
	}
	u1, _ := httptool.UUIDKey("run-1:call_1")
	u2, _ := httptool.UUIDKey("run-1:call_1")
	u3, _ := httptool.UUIDKey("run-1:call_2")
	if u1 != u2 || u1 == u3 || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(u1) {
		t.Errorf("UUIDKey: %s %s %s", u1, u2, u3)
	}
	if v, err := httptool.SFString(`a"b\c`); err != nil || v != `"a\"b\\c"` {
		t.Errorf("SFString: %q %v", v, err)
	}
	if _, err := httptool.SFString("tenant-é/run:call"); err == nil {
		t.Error("SFString took a non-ASCII key")
	}
}

// TestNeverAKeyTheModelWrote: without the call's key in the context, or
// with a different key already on the request (say, copied from the
// model's arguments), nothing is sent.
func TestNeverAKeyTheModelWrote(t *testing.T) {
	t.Parallel()
	g := newTarget(t, true)
	c := client(t, nil)
	_, err := c.Do(post(t, context.Background(), g.srv.URL))
	var ns *httptool.NotSentError
	if !errors.As(err, &ns) || !errors.Is(err, httptool.ErrNoKey) || errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Errorf("no key: %v", err)
	}
	req := post(t, tool.WithIdempotencyKey(context.Background(), "run-1:call_1"), g.srv.URL)
	req.Header.Set("Idempotency-Key", "model-made-this-up")
	if _, err := c.Do(req); !errors.Is(err, httptool.ErrKeyPreset) || !strings.Contains(err.Error(), "model-made-this-up") {
		t.Errorf("preset key: %v", err)
	}
	if n, _ := g.counts(); n != 0 {
		t.Errorf("the target got %d requests, want 0", n)
	}
}

// TestAnswers maps each kind of answer to the ledger's words.
func TestAnswers(t *testing.T) {
	t.Parallel()
	type want struct {
		err     any // nil, or a pointer to the error type
		unknown bool
		text    string
	}
	cases := []struct {
		status int
		header map[string]string
		want   want
	}{
		{200, nil, want{}},
		{201, nil, want{}},
		{409, map[string]string{"Retry-After": "7"}, want{&httptool.InProgressError{}, true, "ask again after 7s"}},
		{409, nil, want{&httptool.InProgressError{}, true, "ask again after 2s"}},
		{422, nil, want{&httptool.KeyReusedError{}, true, "different request"}},
		{400, nil, want{&httptool.RejectedError{}, false, "rejected with 400"}},
		{404, nil, want{&httptool.RejectedError{}, false, "rejected with 404"}},
		{429, map[string]string{"Retry-After": "30"}, want{&httptool.RejectedError{}, false, "wait 30s"}},
		{500, nil, want{&httptool.UnknownOutcomeError{}, true, "answered 500"}},
		{503, nil, want{&httptool.UnknownOutcomeError{}, true, "answered 503"}},
		{303, map[string]string{"Location": "/v1/payments/pay_1"}, want{&httptool.UnknownOutcomeError{}, true, "answered 303"}},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(tc.status)
			io.WriteString(w, `{"status":"`+http.StatusText(tc.status)+`"}`)
		}))
		ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
		res, err := client(t, nil).Do(post(t, ctx, srv.URL))
		srv.Close()
		if tc.want.err == nil {
			if err != nil || res.Status != tc.status || res.Replayed {
				t.Errorf("%d: %v %+v", tc.status, err, res)
			}
			continue
		}
		if err == nil {
			t.Errorf("%d: no error", tc.status)
			continue
		}
		if got, want := typeName(err), typeName(tc.want.err); got != want {
			t.Errorf("%d: %s (%v), want %s", tc.status, got, err, want)
		}
		if errors.Is(err, tool.ErrOutcomeUnknown) != tc.want.unknown {
			t.Errorf("%d: errors.Is(ErrOutcomeUnknown) = %v, want %v", tc.status, !tc.want.unknown, tc.want.unknown)
		}
		if !strings.Contains(err.Error(), tc.want.text) || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("%d: message %q: want %q in it and no query string", tc.status, err, tc.want.text)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *httptool.InProgressError:
		return "InProgressError"
	case *httptool.KeyReusedError:
		return "KeyReusedError"
	case *httptool.RejectedError:
		return "RejectedError"
	case *httptool.UnknownOutcomeError:
		return "UnknownOutcomeError"
	case *httptool.NotSentError:
		return "NotSentError"
	}
	return "other"
}

func TestReplayedAnswer(t *testing.T) {
	t.Parallel()
	g := newTarget(t, true)
	c := client(t, &httptool.Config{Dedupes: true})
	ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
	first, err := c.Do(post(t, ctx, g.srv.URL))
	if err != nil || first.Replayed {
		t.Fatalf("first: %v %+v", err, first)
	}
	second, err := c.Do(post(t, ctx, g.srv.URL))
	if err != nil || !second.Replayed {
		t.Fatalf("second: %v %+v", err, second)
	}
	if n, e := g.counts(); n != 2 || e != 1 {
		t.Errorf("requests %d, effects %d; want 2 and 1", n, e)
	}
}

// TestNotSent: a refused connection is known not to have reached the
// target: not an unknown outcome.
func TestNotSent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
	_, err := client(t, nil).Do(post(t, ctx, url))
	var ns *httptool.NotSentError
	if !errors.As(err, &ns) || errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Errorf("refused connection: %T %v", err, err)
	}
}

// TestHangsPastTheDeadline: the request left and no answer came before
// the deadline: outcome unknown, one request.
func TestHangsPastTheDeadline(t *testing.T) {
	t.Parallel()
	g := newTarget(t, false)
	g.holdRequests()
	ctx, cancel := context.WithTimeout(tool.WithIdempotencyKey(context.Background(), "run-1:call_1"), 300*time.Millisecond)
	defer cancel()
	_, err := client(t, nil).Do(post(t, ctx, g.srv.URL))
	var uo *httptool.UnknownOutcomeError
	if !errors.As(err, &uo) || !errors.Is(err, tool.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang: %T %v", err, err)
	}
	if n, e := g.counts(); n != 1 || e != 1 {
		t.Errorf("requests %d, effects %d; want 1 and 1", n, e)
	}
}

// TestTransportReplayOnlyWhenTheTargetDedupes: Go's transport re-sends a
// request with an Idempotency-Key header when a reused keep-alive
// connection closes after the request was written. A raw HTTP/1.1 server
// answers the first request of each connection and closes the connection
// after reading the second. With Dedupes the transport's re-send is
// allowed (the second key arrives twice); without, the request is sent
// once and its outcome is unknown.
func TestTransportReplayOnlyWhenTheTargetDedupes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dedupes, body bool }{{false, true}, {false, false}, {true, true}} {
		dedupes := tc.dedupes
		srv := newDropSecondServer(t)
		// One connection per host: the second request waits for the
		// first one's connection to go back to the pool instead of
		// racing it onto a fresh connection (a fresh connection is
		// never re-sent on, and the server answers its first request).
		tr := &http.Transport{MaxConnsPerHost: 1}
		c := client(t, &httptool.Config{Dedupes: dedupes, Key: httptool.BareKey, HTTPClient: &http.Client{Transport: tr}})
		url := srv.url()
		if _, err := c.Do(post(t, tool.WithIdempotencyKey(context.Background(), "k1"), url)); err != nil {
			t.Fatal(err)
		}
		second := post(t, tool.WithIdempotencyKey(context.Background(), "k2"), url)
		if !tc.body {
			second, _ = http.NewRequestWithContext(second.Context(), "POST", url+"/v1/payments/pay_1/capture", nil)
		}
		_, err2 := c.Do(second)
		got := srv.stop(tr)
		if dedupes {
			if got != "k1,k2,k2" || err2 != nil {
				t.Errorf("Dedupes: keys %s, err %v; want k1,k2,k2 (the transport re-sent) and an answer", got, err2)
			}
		} else {
			if got != "k1,k2" || !errors.Is(err2, tool.ErrOutcomeUnknown) {
				t.Errorf("no Dedupes (body %v): keys %s, err %v; want k1,k2 (sent once, not chunked) and an unknown outcome", tc.body, got, err2)
			}
		}
	}
}

// dropSecondServer is a raw HTTP/1.1 server that answers the first request
// of each connection and closes the connection after reading the second,
// without an answer: a reused keep-alive connection that breaks after the
// request was written, on which Go's transport may re-send. It records the
// Idempotency-Key of every request it reads ("(chunked)" added for a
// chunked body).
type dropSecondServer struct {
	ln   net.Listener
	mu   sync.Mutex
	keys []string
	wg   sync.WaitGroup
}

func newDropSecondServer(t *testing.T) *dropSecondServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dropSecondServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go s.serve(conn)
		}
	}()
	return s
}

func (s *dropSecondServer) serve(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		k := req.Header.Get("Idempotency-Key")
		if len(req.TransferEncoding) > 0 {
			k += "(chunked)"
		}
		s.mu.Lock()
		s.keys = append(s.keys, k)
		s.mu.Unlock()
		if i == 1 {
			return // read, then close without an answer
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
	}
}

func (s *dropSecondServer) url() string { return "http://" + s.ln.Addr().String() }

// stop closes the listener and tr's idle connections (the server's readers
// end with them), waits for the readers, and returns the keys read, in
// order, joined with commas.
func (s *dropSecondServer) stop(tr *http.Transport) string {
	s.ln.Close()
	tr.CloseIdleConnections()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.keys, ",")
}

func TestConfigRefused(t *testing.T) {
	t.Parallel()
	for _, cfg := range []*httptool.Config{{KeyHeader: "Bad Header"}, {MaxBody: -1}, {InProgressWait: -time.Second}, {ReplayedHeader: "a:b"}} {
		if _, err := httptool.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
