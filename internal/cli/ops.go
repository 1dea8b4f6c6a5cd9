package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/notify"
	"github.com/actoviq/actoviq-go/otelmetrics"
	"github.com/actoviq/actoviq-go/store"
)

// opsFlags are the day-two signals of the long-running commands (worker,
// console): a Prometheus endpoint and a webhook notifier.
type opsFlags struct {
	metricsListen string
	notifyURL     string
	notifySecret  string // file
	consoleURL    string
	stalledEvery  time.Duration
}

func (o *opsFlags) register(cmd *cobra.Command, watchStalled bool) {
	fl := cmd.Flags()
	fl.StringVar(&o.metricsListen, "metrics-listen", "", "serve Prometheus metrics on HOST:PORT/metrics (runs by status, inbox ages, claims, leases, tool outcomes, approvals)")
	fl.StringVar(&o.notifyURL, "notify-url", "", "POST a signed JSON item to this webhook when something enters the inbox")
	fl.StringVar(&o.notifySecret, "notify-secret-file", "", "file whose first line is the webhook signing secret (default $ACTOVIQ_NOTIFY_SECRET)")
	fl.StringVar(&o.consoleURL, "console-url", "", "the console's public base URL, for the links in notifications")
	if watchStalled {
		fl.DurationVar(&o.stalledEvery, "notify-stalled-every", 30*time.Second, "with --notify-url, how often to look for stalled runs to notify (0: never)")
	}
}

// ops is what opsFlags started. Its sinks go on the runtime; start serves
// the endpoint and the stalled-run watch once the runtime exists.
type ops struct {
	e        *env
	f        *opsFlags
	sinks    []actoviq.EventSink
	prom     *otelmetrics.Prometheus
	metrics  *otelmetrics.Metrics
	notifier *notify.Notifier
	rt       atomic.Pointer[actoviq.Runtime]
	ln       net.Listener
	cancel   context.CancelFunc
	stop     []func()
}

// newOps checks the flags and builds the sinks; nothing listens yet.
func (e *env) newOps(o *opsFlags, log *slog.Logger) (*ops, error) {
	p := &ops{e: e, f: o}
	if o.metricsListen != "" {
		if _, _, err := net.SplitHostPort(o.metricsListen); err != nil {
			return nil, usageErr("--metrics-listen %q: want HOST:PORT (%v)", o.metricsListen, err)
		}
		ln, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			return nil, usageErr("--metrics-listen %s: %v", o.metricsListen, err)
		}
		p.ln = ln
		prom, err := otelmetrics.NewPrometheus()
		if err != nil {
			ln.Close()
			return nil, err
		}
		p.prom = prom
		p.metrics, err = otelmetrics.New(prom.MeterProvider(), &otelmetrics.Config{Source: func(ctx context.Context) (*otelmetrics.Snapshot, error) {
			rt := p.rt.Load()
			if rt == nil {
				return nil, errors.New("not started")
			}
			return otelmetrics.StoreSource(rt.Store(), rt.Tenant(), nil)(ctx)
		}})
		if err != nil {
			p.close()
			return nil, err
		}
		p.sinks = append(p.sinks, p.metrics)
	}
	if o.notifyURL != "" {
		secret, err := e.notifySecret(o)
		if err != nil {
			p.close()
			return nil, err
		}
		cfg := &notify.Config{URL: o.notifyURL, Secret: []byte(secret), ConsoleURL: o.consoleURL, Logger: log}
		if p.metrics != nil {
			m := p.metrics
			cfg.OnDone = func(_ notify.Item, _ int, err error) {
				outcome := "delivered"
				if err != nil {
					outcome = "failed"
				}
				m.RecordNotification(context.Background(), outcome)
			}
		}
		n, err := notify.New(cfg)
		if err != nil {
			p.close()
			return nil, usageErr("--notify-url: %v", err)
		}
		p.notifier = n
		p.sinks = append(p.sinks, n)
	} else if o.notifySecret != "" || o.consoleURL != "" {
		return nil, usageErr("--notify-secret-file and --console-url go with --notify-url")
	}
	return p, nil
}

func (e *env) notifySecret(o *opsFlags) (string, error) {
	if o.notifySecret != "" {
		b, err := os.ReadFile(o.notifySecret)
		if err != nil {
			return "", usageErr("--notify-secret-file: %v", err)
		}
		s, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(s), nil
	}
	s := strings.TrimSpace(e.getenv("ACTOVIQ_NOTIFY_SECRET"))
	if s == "" {
		return "", usageErr("--notify-url needs a signing secret: set ACTOVIQ_NOTIFY_SECRET or give --notify-secret-file")
	}
	return s, nil
}

// start serves the metrics and watches for stalled runs, until ctx ends
// or close.
func (p *ops) start(ctx context.Context, rt *actoviq.Runtime) {
	p.rt.Store(rt)
	ctx, p.cancel = context.WithCancel(ctx)
	if p.ln != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := otelmetrics.Serve(ctx, p.ln, p.prom.Handler()); err != nil {
				fmt.Fprintf(p.e.stderr, "actoviq: metrics endpoint: %v\n", err)
			}
		}()
		p.stop = append(p.stop, func() { <-done })
		fmt.Fprintf(p.e.stdout, "metrics on http://%s/metrics\n", p.ln.Addr())
	}
	if p.notifier != nil && p.f.stalledEvery > 0 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.notifier.Watch(ctx, p.f.stalledEvery, func(ctx context.Context) ([]notify.Item, error) {
				return stalledItems(ctx, rt)
			})
		}()
		p.stop = append(p.stop, func() { <-done })
	}
}

// stalledItems lists up to 1000 stalled runs, oldest first, as
// notification items keyed by their stale claim's epoch.
func stalledItems(ctx context.Context, rt *actoviq.Runtime) ([]notify.Item, error) {
	runs, err := rt.Store().RunList(ctx, &store.RunListParams{Tenant: rt.Tenant(), Status: store.RunRunning,
		Claim: store.ClaimFilter{State: store.ClaimIdle}, Order: store.RunsWaitingLongest, Summary: true, Limit: 1000})
	if err != nil {
		return nil, err
	}
	items := make([]notify.Item, 0, len(runs))
	for _, r := range runs {
		it := notify.Item{Kind: notify.KindStalled, RunID: r.ID, At: r.UpdatedAt,
			Reason: "its worker stopped (the claim expired or its process died); resume it to apply the recovery rules"}
		if info, err := rt.Get(ctx, r.ID); err == nil && info.Holder != nil {
			it.Epoch = info.Holder.Epoch
		}
		items = append(items, it)
	}
	return items, nil
}

// close stops what start started and the notifier.
func (p *ops) close() {
	if p == nil {
		return
	}
	if p.cancel != nil {
		p.cancel()
	}
	for _, wait := range p.stop {
		wait()
	}
	p.stop = nil
	if p.notifier != nil {
		_ = p.notifier.Close()
	}
	if p.metrics != nil {
		_ = p.metrics.Close()
	}
	if p.prom != nil {
		_ = p.prom.Shutdown(context.Background())
	}
	if p.ln != nil {
		_ = p.ln.Close()
	}
}
