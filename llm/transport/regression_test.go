package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/actoviq/actoviq-go/llm/transport"
)

// With MaxRetries 0, a call must make exactly one request. The transport
// sets Idempotency-Key on the POST, which makes net/http's own Transport
// consider it replayable: when a reused keep-alive connection is closed by
// the server after it read the request (no response byte), net/http
// used to re-send the POST on a new connection by itself: a retry the
// transport neither allowed nor counted.
func TestMaxRetriesZeroNoHiddenReplayOnReusedConn(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n.Add(1) == 1 {
			w.Write([]byte(`{"ok":true}`))
			return
		}
		// The server read the request, then dies without answering.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	fc := newFakeClock()
	c, err := transport.New(&transport.Config{Options: transport.Options{HTTPClient: hc, MaxRetries: transport.Retries(0), Clock: fc.Now, Sleep: fc.Sleep}})
	if err != nil {
		t.Fatal(err)
	}
	req := &transport.Request{URL: srv.URL, Body: []byte(`{}`), IdempotencyKey: "run1:turn-1"}
	resp, err := c.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // the connection goes back to the pool

	before := n.Load()
	_, err = c.Do(context.Background(), req)
	if err == nil {
		t.Fatal("want an error")
	}
	if got := n.Load() - before; got != 1 {
		t.Fatalf("MaxRetries 0: the server received %d requests for one call, want 1 (err: %v)", got, err)
	}
}
