package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// anthropicErr classifies Anthropic-style error events.
func anthropicErr(e transport.SSEEvent) (int, bool) {
	if e.Type != "error" {
		return 0, false
	}
	if bytes.Contains(e.Data, []byte("overloaded_error")) {
		return 529, true
	}
	return 400, true
}

const overloaded = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"

func sse(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprint(w, s)
	http.NewResponseController(w).Flush()
}

func collect(b *bundle, req *transport.Request) (data []string, err error) {
	req.ErrorEvent = anthropicErr
	for ev, e := range b.client.Stream(context.Background(), req) {
		if e != nil {
			return data, e
		}
		data = append(data, string(ev.Data))
	}
	return data, nil
}

func TestStreamCutBeforeFirstEventRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			sse(w, ": just a comment\n")
			panic(http.ErrAbortHandler) // cut the connection
		}
		sse(w, "data: a\n\ndata: b\n\n")
	}, nil)
	got, err := collect(b, b.req())
	if err != nil || fmt.Sprint(got) != "[a b]" || b.requests.Load() != 2 {
		t.Fatalf("got %q err %v requests %d", got, err, b.requests.Load())
	}
	if as := b.Attempts(); len(as) != 2 || as[0].Status != 0 || !as[0].Retry || as[1].Status != 200 {
		t.Fatalf("attempts %+v", as)
	}
}

func TestStreamEmptyRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) { sse(w, "") }, nil)
	_, err := collect(b, b.req())
	var te *transport.TransportError
	if !errors.As(err, &te) || !errors.Is(err, transport.ErrEmptyStream) || b.requests.Load() != 3 {
		t.Fatalf("err %v requests %d", err, b.requests.Load())
	}
}

func TestStreamCutAfterFirstEventNotReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		sse(w, "id: e1\ndata: a\n\ndata: b\n\n")
		panic(http.ErrAbortHandler)
	}, nil)
	got, err := collect(b, b.req())
	var si *llm.StreamInterruptedError
	if !errors.As(err, &si) || !errors.Is(err, llm.ErrStreamInterrupted) {
		t.Fatalf("err = %v", err)
	}
	if fmt.Sprint(got) != "[a b]" || si.Delivered != 2 || si.LastEventID != "e1" || b.requests.Load() != 1 {
		t.Fatalf("got %q %+v requests %d", got, si, b.requests.Load())
	}
}

func TestStreamErrorEventBeforeFirstRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			sse(w, overloaded)
			return
		}
		sse(w, "event: message_start\ndata: {}\n\n")
	}, nil)
	got, err := collect(b, b.req())
	if err != nil || len(got) != 1 || b.requests.Load() != 2 {
		t.Fatalf("got %q err %v requests %d", got, err, b.requests.Load())
	}
	if as := b.Attempts(); as[0].Status != 529 || !as[0].Retry {
		t.Fatalf("attempts %+v", as)
	}
}

func TestStreamErrorEventBeforeFirstFinal(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		sse(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\"}}\n\n")
	}, nil)
	_, err := collect(b, b.req())
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != 400 || se.Event == nil || se.Retryable || b.requests.Load() != 1 {
		t.Fatalf("err %v requests %d", err, b.requests.Load())
	}
}

func TestStreamErrorEventAfterFirstNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		sse(w, "event: message_start\ndata: {}\n\n"+overloaded)
	}, nil)
	got, err := collect(b, b.req())
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != 529 || se.Event == nil || se.Event.Type != "error" {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 1 || b.requests.Load() != 1 || se.Attempts != 1 {
		t.Fatalf("got %q requests %d attempts %d", got, b.requests.Load(), se.Attempts)
	}
}

func TestStreamStatusErrorRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.WriteHeader(503)
			return
		}
		sse(w, "data: a\n\n")
	}, nil)
	got, err := collect(b, b.req())
	if err != nil || len(got) != 1 || b.requests.Load() != 2 {
		t.Fatalf("got %q err %v", got, err)
	}
}

func TestStreamBreakClosesBody(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{})
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		sse(w, "data: a\n\n")
		<-r.Context().Done() // the client went away
		close(closed)
	}, nil)
	for range b.client.Stream(context.Background(), b.req()) {
		break
	}
	<-closed
}

func TestStreamCancelAfterFirstEvent(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setup(t, func(n int, w http.ResponseWriter, r *http.Request) {
		sse(w, "data: a\n\n")
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, nil)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for _, err := range b.client.Stream(ctx, b.req()) {
		if err == nil {
			cancel()
		}
		last = err
	}
	if !errors.Is(last, llm.ErrStreamInterrupted) || !errors.Is(last, context.Canceled) || b.requests.Load() != 1 {
		t.Fatalf("err = %v", last)
	}
}
