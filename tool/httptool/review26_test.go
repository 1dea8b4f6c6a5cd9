package httptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

// TestReview26NoMethodIsResentWithoutDedupes: Go's transport re-sends a
// GET, HEAD, OPTIONS or TRACE whatever its headers when a reused keep-alive
// connection breaks after the request was written. A side effect behind a
// GET (a legacy SMS or webhook API) must be sent once too when the target
// does not dedupe. The raw server is dropSecondServer, as in
// TestTransportReplayOnlyWhenTheTargetDedupes.
func TestReview26NoMethodIsResentWithoutDedupes(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"GET", "OPTIONS", "DELETE", "PUT"} {
		srv := newDropSecondServer(t)
		tr := &http.Transport{MaxConnsPerHost: 1}
		c := client(t, &httptool.Config{Key: httptool.BareKey, HTTPClient: &http.Client{Transport: tr}})
		url := srv.url() + "/send?to=1"
		send := func(key string) error {
			req, err := http.NewRequestWithContext(tool.WithIdempotencyKey(context.Background(), key), method, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Do(req)
			return err
		}
		if err := send("k1"); err != nil {
			t.Fatalf("%s: first: %v", method, err)
		}
		err2 := send("k2")
		got := srv.stop(tr)
		if got != "k1,k2" || !errors.Is(err2, tool.ErrOutcomeUnknown) {
			t.Errorf("%s without Dedupes: keys %s, err %v; want k1,k2 (sent once, not chunked) and an unknown outcome", method, got, err2)
		}
	}
}

// TestReview26ProbeRejectedForItsOwnReasons: a probe's re-send that the
// target refuses for reasons of the probe itself (rate limited, its
// credentials expired since, a timeout on the server's side) says nothing
// of whether the first request acted: the call stays unknown, it is not
// committed as "rejected, nothing done".
func TestReview26ProbeRejectedForItsOwnReasons(t *testing.T) {
	t.Parallel()
	for _, status := range []int{401, 403, 408, 429} {
		var mu sync.Mutex
		acted := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if acted == 0 {
				acted++ // the first request acts; its answer is lost below
				w.WriteHeader(200)
				return
			}
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(status)
		}))
		c := client(t, &httptool.Config{Dedupes: true})
		pay, err := httptool.NewTool(tool.Spec{Name: "pay", Description: "pay", Effect: tool.SideEffect}, c,
			func(ctx context.Context, in struct{ N int }) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("{}"))
			}, func(*httptool.Response) (string, error) { return "ok", nil })
		if err != nil {
			t.Fatal(err)
		}
		ctx := tool.WithCallStarted(tool.WithIdempotencyKey(context.Background(), "k1"), time.Now())
		// The first request acts (its answer, for this test, is dropped:
		// as if the process died before recording it).
		if _, err := pay.Call(ctx, json.RawMessage(`{"N":1}`)); err != nil {
			t.Fatal(err)
		}
		p, err := pay.(tool.Reconciler).Reconcile(ctx, "k1", json.RawMessage(`{"N":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if p.Outcome != tool.ProbeUnknown {
			t.Errorf("probe answered %d: outcome %v, result %+v; want unknown (the first request acted)", status, p.Outcome, p.Result)
		}
		srv.Close()
	}
}

// TestReview26RejectionWhoseBodyWasCut: a 4xx whose body breaks off
// cannot be told apart from "key reused" by a predicate that reads the
// body (Stripe's 400 idempotency_error): it is not reported as a plain
// rejection the model retries with a new key.
func TestReview26RejectionWhoseBodyWasCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "400")
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"type":`)
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	c := client(t, &httptool.Config{KeyReused: func(status int, _ http.Header, body []byte) bool {
		return status == 422 || status == 400 && strings.Contains(string(body), "idempotency_error")
	}})
	req, _ := http.NewRequestWithContext(tool.WithIdempotencyKey(context.Background(), "k1"), "POST", srv.URL, strings.NewReader("{}"))
	_, err := c.Do(req)
	if !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("a 400 whose body was cut: %T %v; want an unknown outcome", err, err)
	}
}

// TestReview26PresetKeyUnderAnotherCase: a key header set straight into
// the header map under a non-canonical name (as a tool copying headers
// from the model's arguments does) is a preset key too: it is never sent
// beside the call's own.
func TestReview26PresetKeyUnderAnotherCase(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, strings.Join(r.Header.Values("Idempotency-Key"), "|"))
	}))
	defer srv.Close()
	c := client(t, &httptool.Config{Key: httptool.BareKey})
	req, _ := http.NewRequestWithContext(tool.WithIdempotencyKey(context.Background(), "k1"), "POST", srv.URL, strings.NewReader("{}"))
	req.Header["idempotency-key"] = []string{"model-key"}
	_, err := c.Do(req)
	if !errors.Is(err, httptool.ErrKeyPreset) || len(got) != 0 {
		t.Fatalf("a lowercase preset key: err %v, the target saw %q", err, got)
	}
}

// lostTrace is a RoundTripper that is not net/http's (an HTTP/3 client, a
// test double, a retrying middleware): it sends the request without
// reporting the connection through httptrace, then fails.
type lostTrace struct{}

func (lostTrace) RoundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(context.Background())
	if res, err := http.DefaultTransport.RoundTrip(out); err == nil {
		res.Body.Close()
	}
	return nil, errors.New("stream reset by peer")
}

// TestReview26UnknownTransportIsNotNotSent: "nothing left this machine"
// is known only from net/http's own transport (its trace says a connection
// was obtained). Through another RoundTripper an error may come after the
// request acted: outcome unknown, not an error the model retries.
func TestReview26UnknownTransportIsNotNotSent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	acted := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		acted++
		mu.Unlock()
	}))
	defer srv.Close()
	c := client(t, &httptool.Config{HTTPClient: &http.Client{Transport: lostTrace{}}})
	req, _ := http.NewRequestWithContext(tool.WithIdempotencyKey(context.Background(), "k1"), "POST", srv.URL, strings.NewReader("{}"))
	_, err := c.Do(req)
	mu.Lock()
	defer mu.Unlock()
	if acted != 1 || !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("the target acted %d times; err %T %v; want an unknown outcome", acted, err, err)
	}
}
