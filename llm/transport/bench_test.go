package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/actoviq/actoviq-go/llm/transport"
)

func benchServer(b *testing.B, h http.HandlerFunc) (*httptest.Server, *http.Client) {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: tr}
}

// BenchmarkTransportOverhead compares one successful call through the
// Client with the same call through net/http directly.
func BenchmarkTransportOverhead(b *testing.B) {
	srv, hc := benchServer(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	hdr := http.Header{"Authorization": {"Bearer sk-bench"}, "Content-Type": {"application/json"}}
	b.Run("net/http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, bytes.NewReader(body))
			req.Header = hdr.Clone()
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("transport", func(b *testing.B) {
		c, err := transport.New(&transport.Config{Options: transport.Options{HTTPClient: hc}})
		if err != nil {
			b.Fatal(err)
		}
		req := &transport.Request{URL: srv.URL, Header: hdr, Body: body, IdempotencyKey: "k"}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Do(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkStream1MDeltas streams one million small delta events per
// iteration. peak-heap-MiB (sampled every 100k events) shows that memory
// stays bounded however long the stream is.
func BenchmarkStream1MDeltas(b *testing.B) {
	const n = 1_000_000
	line := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n")
	srv, hc := benchServer(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriterSize(w, 64<<10)
		for range n {
			_, _ = bw.Write(line)
		}
		_ = bw.Flush()
	})
	c, err := transport.New(&transport.Config{Options: transport.Options{HTTPClient: hc}})
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	var ms runtime.MemStats
	b.SetBytes(int64(n * len(line)))
	b.ReportAllocs()
	for b.Loop() {
		count := 0
		for _, err := range c.Stream(context.Background(), &transport.Request{URL: srv.URL}) {
			if err != nil {
				b.Fatal(err)
			}
			count++
			if count%100_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
		if count != n {
			b.Fatalf("%d events", count)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
