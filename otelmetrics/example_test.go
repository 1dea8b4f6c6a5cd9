package otelmetrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/otelmetrics"
)

// Counters from events and gauges from a source, read by a scrape.
func Example() {
	prom, err := otelmetrics.NewPrometheus()
	if err != nil {
		panic(err)
	}
	defer prom.Shutdown(context.Background())
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m, err := otelmetrics.New(prom.MeterProvider(), &otelmetrics.Config{
		Clock: func() time.Time { return now },
		Source: func(context.Context) (*otelmetrics.Snapshot, error) {
			return &otelmetrics.Snapshot{Inbox: map[string]otelmetrics.InboxKind{
				"approval": {Items: 3, Oldest: now.Add(-15 * time.Minute)},
			}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.Emit(context.Background(), actoviq.Event{Type: actoviq.EvToolUnknown, RunID: "r1",
		Data: []byte(`{"call_id":"c1","effect":"side-effect","state":"unknown"}`)})

	srv := httptest.NewServer(prom.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "actoviq_inbox") || strings.HasPrefix(line, "actoviq_tool_calls_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// actoviq_inbox_items{kind="approval"} 3
	// actoviq_inbox_oldest_age_seconds{kind="approval"} 900
	// actoviq_tool_calls_total{effect="side-effect",outcome="unknown"} 1
}
