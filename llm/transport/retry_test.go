package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

func TestStatusRetryTable(t *testing.T) {
	t.Parallel()
	retry := []int{408, 409, 425, 429, 500, 501, 502, 503, 504, 529, 599}
	final := []int{400, 401, 402, 403, 404, 405, 410, 413, 422, 451, 499}
	ok := []int{200, 201, 202, 204}
	for _, status := range slices.Concat(retry, final, ok) {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			b := setup(t, statusThen(status, 99), nil)
			resp, err := b.client.Do(context.Background(), b.req())
			switch {
			case slices.Contains(ok, status):
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != status || b.requests.Load() != 1 {
					t.Fatalf("status %d requests %d", resp.StatusCode, b.requests.Load())
				}
			default:
				var se *transport.StatusError
				if !errors.As(err, &se) || resp != nil {
					t.Fatalf("err = %v, resp = %v", err, resp)
				}
				want := int64(1)
				if slices.Contains(retry, status) {
					want = 3
				}
				if b.requests.Load() != want || se.Attempts != int(want) || se.Status != status {
					t.Fatalf("requests %d attempts %d status %d, want %d", b.requests.Load(), se.Attempts, se.Status, want)
				}
				if se.Retryable != slices.Contains(retry, status) {
					t.Fatalf("Retryable = %v", se.Retryable)
				}
				if !strings.Contains(string(se.Body), "status") {
					t.Fatalf("Body = %q", se.Body)
				}
				if got := len(b.Attempts()); got != int(want) {
					t.Fatalf("%d attempt events", got)
				}
			}
		})
	}
}

func TestShouldRetryHeaderOverrides(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		value  string
		want   int64
	}{
		{400, "true", 3},
		{503, "false", 1},
		{429, "FALSE", 1},
		{404, "maybe", 1}, // unknown value: status rule
		{502, "", 3},
	} {
		t.Run(fmt.Sprint(tc.status, tc.value), func(t *testing.T) {
			t.Parallel()
			b := setup(t, statusThen(tc.status, 99, "X-Should-Retry", tc.value), nil)
			_, err := b.client.Do(context.Background(), b.req())
			var se *transport.StatusError
			if !errors.As(err, &se) {
				t.Fatal(err)
			}
			if b.requests.Load() != tc.want {
				t.Fatalf("requests = %d, want %d", b.requests.Load(), tc.want)
			}
		})
	}
}

func TestRetryAfterForms(t *testing.T) {
	t.Parallel()
	base := newFakeClock().Now().Truncate(time.Second)
	date := func(d time.Duration) string { return base.Add(d).UTC().Format(http.TimeFormat) }
	for _, tc := range []struct {
		name string
		kv   []string
		want time.Duration
	}{
		{"ms", []string{"Retry-After-Ms", "1500"}, 1500 * time.Millisecond},
		{"ms fractional", []string{"Retry-After-Ms", "1200.5"}, 1200*time.Millisecond + 500*time.Microsecond},
		{"ms wins over seconds", []string{"Retry-After-Ms", "700", "Retry-After", "9"}, 700 * time.Millisecond},
		{"ms invalid falls back to seconds", []string{"Retry-After-Ms", "x", "Retry-After", "2"}, 2 * time.Second},
		{"seconds", []string{"Retry-After", "3"}, 3 * time.Second},
		{"fractional seconds", []string{"Retry-After", "2.5"}, 2500 * time.Millisecond},
		{"http date", []string{"Retry-After", date(10 * time.Second)}, 10 * time.Second},
		{"past http date", []string{"Retry-After", date(-time.Hour)}, 250 * time.Millisecond},
		{"invalid", []string{"Retry-After", "soon"}, 250 * time.Millisecond},
		{"negative", []string{"Retry-After", "-5"}, 250 * time.Millisecond},
		{"negative ms", []string{"Retry-After-Ms", "-100"}, 250 * time.Millisecond},
		{"NaN", []string{"Retry-After", "NaN"}, 250 * time.Millisecond},
		{"smaller than backoff", []string{"Retry-After", "0.1"}, 250 * time.Millisecond},
		{"exactly the cap", []string{"Retry-After", "30"}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, statusThen(429, 1, tc.kv...), nil)
			b.clock.now = base
			resp, err := b.client.Do(context.Background(), b.req())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := b.clock.Sleeps(); !slices.Equal(got, []time.Duration{tc.want}) {
				t.Fatalf("sleeps = %v, want [%v]", got, tc.want)
			}
			if b.requests.Load() != 2 {
				t.Fatalf("requests = %d", b.requests.Load())
			}
		})
	}
}

func TestRetryAfterAboveCapFailsAtOnce(t *testing.T) {
	t.Parallel()
	for _, kv := range [][]string{
		{"Retry-After", "31"},
		{"Retry-After-Ms", "30000.5"},
		{"Retry-After", "1e300"},
	} {
		t.Run(kv[1], func(t *testing.T) {
			t.Parallel()
			b := setup(t, statusThen(503, 99, kv...), nil)
			_, err := b.client.Do(context.Background(), b.req())
			var se *transport.StatusError
			if !errors.As(err, &se) || !errors.Is(err, transport.ErrRetryWaitTooLong) {
				t.Fatalf("err = %v", err)
			}
			if se.Status != 503 || se.Attempts != 1 || se.Wait <= 30*time.Second || !strings.Contains(string(se.Body), "error") {
				t.Fatalf("%+v", se)
			}
			if b.requests.Load() != 1 || len(b.clock.Sleeps()) != 0 {
				t.Fatalf("requests %d sleeps %v", b.requests.Load(), b.clock.Sleeps())
			}
			if !strings.Contains(err.Error(), "wait") {
				t.Fatalf("message lacks the wait: %v", err)
			}
		})
	}
}

func TestWaitPastDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, statusThen(429, 99, "Retry-After", "10"), nil)
	ctx, cancel := context.WithDeadline(context.Background(), b.clock.Now().Add(5*time.Second))
	defer cancel()
	_, err := b.client.Do(ctx, b.req())
	var se *transport.StatusError
	if !errors.As(err, &se) || !errors.Is(err, transport.ErrRetryPastDeadline) {
		t.Fatalf("err = %v", err)
	}
	if se.Wait != 10*time.Second || se.Status != 429 || b.requests.Load() != 1 || len(b.clock.Sleeps()) != 0 {
		t.Fatalf("%+v requests %d", se, b.requests.Load())
	}
}

func TestBackoffSequence(t *testing.T) {
	t.Parallel()
	b := setup(t, statusThen(500, 99), func(c *transport.Config) { c.MaxRetries = transport.Retries(9) })
	_, err := b.client.Do(context.Background(), b.req())
	if err == nil {
		t.Fatal("want error")
	}
	want := []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second,
	}
	if got := b.clock.Sleeps(); !slices.Equal(got, want) {
		t.Fatalf("sleeps = %v, want %v", got, want)
	}
	var waits []time.Duration
	for i, a := range b.Attempts() {
		if a.Number != i+1 || a.Status != 500 || a.Err == "" {
			t.Fatalf("attempt %+v", a)
		}
		waits = append(waits, a.Wait)
	}
	if !slices.Equal(waits, append(want, 0)) {
		t.Fatalf("attempt waits = %v", waits)
	}
	if b.requests.Load() != 10 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}

func TestJitterApplied(t *testing.T) {
	t.Parallel()
	b := setup(t, statusThen(500, 2), func(c *transport.Config) {
		c.Jitter = func(d time.Duration) time.Duration { return d * 3 / 4 }
	})
	resp, err := b.client.Do(context.Background(), b.req())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []time.Duration{187500 * time.Microsecond, 375 * time.Millisecond}
	if got := b.clock.Sleeps(); !slices.Equal(got, want) {
		t.Fatalf("sleeps = %v, want %v", got, want)
	}
}

func TestMaxRetriesZero(t *testing.T) {
	t.Parallel()
	b := setup(t, statusThen(503, 99), func(c *transport.Config) { c.MaxRetries = transport.Retries(0) })
	_, err := b.client.Do(context.Background(), b.req())
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Attempts != 1 || b.requests.Load() != 1 {
		t.Fatalf("err = %v requests = %d", err, b.requests.Load())
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := setup(t, statusThen(200, 0), nil)
	_, err = b.client.Do(context.Background(), &transport.Request{URL: "http://" + addr + "/v1"})
	var te *transport.TransportError
	if !errors.As(err, &te) || te.Attempts != 3 || !te.Retryable {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("not ECONNREFUSED: %v", err)
	}
	as := b.Attempts()
	if len(as) != 3 || as[0].Status != 0 || as[0].Err == "" || !as[0].Retry || as[2].Retry {
		t.Fatalf("attempts %+v", as)
	}
}

func TestConnectionResetAfterBody(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the body was fully sent …
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // … then a reset, before any header
		}
		conn.Close()
	}, nil)
	_, err := b.client.Do(context.Background(), b.req())
	var te *transport.TransportError
	if !errors.As(err, &te) || te.Attempts != 3 {
		t.Fatalf("err = %v", err)
	}
	if b.requests.Load() != 3 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, nil)
	t.Cleanup(func() { close(release) }) // runs before the server closes
	tr := &http.Transport{ResponseHeaderTimeout: 20 * time.Millisecond}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := transport.New(&transport.Config{Options: transport.Options{HTTPClient: &http.Client{Transport: tr}, Clock: b.clock.Now, Sleep: b.clock.Sleep, Jitter: noJitter}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), b.req())
	var te *transport.TransportError
	var ne net.Error
	if !errors.As(err, &te) || te.Attempts != 3 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v", err)
	}
	if b.requests.Load() != 3 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{})
	b := setup(t, statusThen(503, 99), func(c *transport.Config) {
		c.OnAttempt = func(a llm.Attempt) {
			if a.Retry {
				close(waiting)
			}
		}
	})
	b.clock.block = true // the clock never fires
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := b.client.Do(ctx, b.req())
		done <- err
	}()
	<-waiting
	cancel()
	err := <-done
	var se *transport.StatusError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || se.Status != 503 {
		t.Fatalf("err = %v", err)
	}
	if b.requests.Load() != 1 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}

func TestCancelDuringRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		cancel()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, nil)
	t.Cleanup(func() { close(release) })
	_, err := b.client.Do(ctx, b.req())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if b.requests.Load() != 1 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}

func TestIdempotencyKeyAndRetryCount(t *testing.T) {
	t.Parallel()
	var keys, counts, bodies []string
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		counts = append(counts, r.Header.Get(transport.HeaderRetryCount))
		body, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(body))
		statusThen(503, 2)(n, w, r)
	}, nil)
	req := b.req()
	req.IdempotencyKey = "idem-42"
	resp, err := b.client.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !slices.Equal(keys, []string{"idem-42", "idem-42", "idem-42"}) ||
		!slices.Equal(counts, []string{"0", "1", "2"}) ||
		!slices.Equal(bodies, []string{`{"q":1}`, `{"q":1}`, `{"q":1}`}) {
		t.Fatalf("keys %q counts %q bodies %q", keys, counts, bodies)
	}
}

func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	const cfgSecret, bearer, apiKey = "sk-config-0123456789", "sk-bearer-abcdef", "xk-header-987"
	echo := func(n int, w http.ResponseWriter, r *http.Request) {
		status := 503
		if n == 3 {
			status = 401
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "bad key %s / %s / %s", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), cfgSecret)
	}
	b := setup(t, echo, func(c *transport.Config) { c.Redact = []string{cfgSecret} })
	hdr := http.Header{"Authorization": {"Bearer " + bearer}, "X-Api-Key": {apiKey}}
	check := func(what, s string) {
		t.Helper()
		for _, sec := range []string{cfgSecret, bearer, apiKey} {
			if strings.Contains(s, sec) {
				t.Errorf("%s leaks %q: %s", what, sec, s)
			}
		}
	}
	// Status errors, with the key also in the URL.
	_, err := b.client.Do(context.Background(), &transport.Request{
		URL: b.srv.URL + "/v1?key=" + cfgSecret, Header: hdr, Body: []byte("{}"),
	})
	var se *transport.StatusError
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	check("status error", err.Error())
	check("status body", string(se.Body))
	if !strings.Contains(string(se.Body), "[REDACTED]") {
		t.Fatalf("body not scrubbed visibly: %s", se.Body)
	}
	// Transport errors.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err = b.client.Do(context.Background(), &transport.Request{
		URL: "http://user:" + cfgSecret + "@" + addr + "/v1?key=" + cfgSecret, Header: hdr,
	})
	if err == nil {
		t.Fatal("want error")
	}
	check("transport error", err.Error())
	// Stream error event.
	b2 := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "event: error\ndata: {\"message\":\"key %s\"}\n\n", bearer)
	}, func(c *transport.Config) { c.OnAttempt = b.attemptsSink() })
	for _, err := range b2.client.Stream(context.Background(), &transport.Request{
		URL: b2.srv.URL, Header: hdr, ErrorEvent: func(e transport.SSEEvent) (int, bool) { return 400, e.Type == "error" },
	}) {
		if err == nil {
			t.Fatal("want error")
		}
		check("stream error", err.Error())
		errors.As(err, &se)
		check("stream error body", string(se.Body)+string(se.Event.Data))
	}
	as := b.Attempts()
	if len(as) < 5 {
		t.Fatalf("only %d attempts", len(as))
	}
	for _, a := range as {
		check("attempt", fmt.Sprintf("%+v", a))
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := transport.New(nil); err != nil {
		t.Fatal(err)
	}
	for field, cfg := range map[string]*transport.Config{
		"MaxRetries":     {Options: transport.Options{MaxRetries: transport.Retries(-1)}},
		"InitialBackoff": {Options: transport.Options{InitialBackoff: -1}},
		"MaxBackoff":     {Options: transport.Options{InitialBackoff: time.Minute}},
		"MaxEventSize":   {MaxEventSize: -1},
		"MaxErrorBody":   {MaxErrorBody: -1},
	} {
		if _, err := transport.New(cfg); err == nil || !strings.Contains(err.Error(), "Config."+field) {
			t.Errorf("%s: err = %v", field, err)
		}
	}
	// New copies the Config.
	n := 5
	cfg := &transport.Config{Options: transport.Options{MaxRetries: &n}}
	b := setup(t, statusThen(503, 99), func(c *transport.Config) { c.MaxRetries = cfg.MaxRetries })
	n = 0
	_, _ = b.client.Do(context.Background(), b.req())
	if b.requests.Load() != 6 {
		t.Fatalf("requests = %d", b.requests.Load())
	}
}
