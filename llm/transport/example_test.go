package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

func ExampleDecoder() {
	stream := "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n" +
		": keep-alive comment\r\n" +
		"event: content_block_delta\r\ndata: {\"text\":\"Hel\"}   \r\n\r\n" +
		"data: line one\ndata: line two" // no final blank line
	dec := transport.NewSSEDecoder(strings.NewReader(stream), 0)
	for {
		ev, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q %q\n", ev.Type, ev.Data)
	}
	// Output:
	// "message_start" "{\"type\":\"message_start\"}"
	// "content_block_delta" "{\"text\":\"Hel\"}   "
	// "" "line one\nline two"
}

// instantSleep is an Options.Sleep that returns at once, for examples and
// tests.
func instantSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func ExampleClient_Do() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate limited"}`)
			return
		}
		fmt.Fprintf(w, "ok, idempotency key %s, retry count %s",
			r.Header.Get("Idempotency-Key"), r.Header.Get(transport.HeaderRetryCount))
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	c, err := transport.New(&transport.Config{
		Redact: []string{"sk-secret"},
		Options: transport.Options{HTTPClient: &http.Client{Transport: tr}, Sleep: instantSleep, Jitter: func(d time.Duration) time.Duration { return d }, OnAttempt: func(a llm.Attempt) {
			fmt.Printf("attempt %d: status %d, retry %v after %v\n", a.Number, a.Status, a.Retry, a.Wait)
		}},
	})
	if err != nil {
		panic(err)
	}
	resp, err := c.Do(context.Background(), &transport.Request{
		URL:            srv.URL + "/v1/messages",
		Header:         http.Header{"X-Api-Key": {"sk-secret"}},
		Body:           []byte(`{"model":"m"}`),
		IdempotencyKey: "turn-7",
	})
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output:
	// attempt 1: status 429, retry true after 2s
	// attempt 2: status 200, retry false after 0s
	// ok, idempotency key turn-7, retry count 1
}

func ExampleClient_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"delta\":\"Hi\"}\n\ndata: {\"delta\":\"!\"}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c, _ := transport.New(&transport.Config{Options: transport.Options{HTTPClient: &http.Client{Transport: tr}}})

	// Breaking out of the loop closes the response body.
	for ev, err := range c.Stream(context.Background(), &transport.Request{URL: srv.URL}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if strings.TrimSpace(string(ev.Data)) == "[DONE]" {
			break
		}
		fmt.Println(string(ev.Data))
	}
	// Output:
	// {"delta":"Hi"}
	// {"delta":"!"}
}
