package otelmetrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Prometheus is an OpenTelemetry MeterProvider whose metrics are read by
// a Prometheus scrape of [Prometheus.Handler]. It uses a registry of its
// own (not Prometheus's global one), so two of them in one process do not
// collide.
type Prometheus struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// NewPrometheus creates the provider and its handler.
func NewPrometheus() (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	return &Prometheus{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
	}, nil
}

// MeterProvider is the provider to pass to [New].
func (p *Prometheus) MeterProvider() metric.MeterProvider { return p.provider }

// Handler serves the metrics in the Prometheus text format (GET /metrics).
func (p *Prometheus) Handler() http.Handler { return p.handler }

// Shutdown stops the provider.
func (p *Prometheus) Shutdown(ctx context.Context) error { return p.provider.Shutdown(ctx) }

// Serve answers GET /metrics (and nothing else) on ln until ctx ends, then
// shuts the server down, waiting up to 5 s for scrapes in flight.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
