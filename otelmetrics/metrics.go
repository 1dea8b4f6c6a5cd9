package otelmetrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	actoviq "github.com/actoviq/actoviq-go"
)

// DefaultMeterName is the instrumentation scope used when
// [Config].MeterName is empty.
const DefaultMeterName = "github.com/actoviq/actoviq-go"

// Instrument names, as OpenTelemetry names them. The Prometheus endpoint
// ([Prometheus]) spells them with underscores, a unit suffix (_seconds)
// and _total on counters: actoviq.claims is actoviq_claims_total.
const (
	// Gauges, read from the store through [Config].Source.
	NameRuns        = "actoviq.runs"             // {run}, by status (live statuses only)
	NameInboxItems  = "actoviq.inbox.items"      // {item}, by kind
	NameInboxOldest = "actoviq.inbox.oldest_age" // s, by kind
	NameSourceError = "actoviq.gauges.errors"    // {error}: store reads behind the gauges that failed

	// Counters and histograms, from events.
	NameClaims          = "actoviq.claims"                 // {claim}, by takeover
	NameClaimDuration   = "actoviq.claim.duration"         // s
	NameLeaseTakeovers  = "actoviq.lease.takeovers"        // {run}
	NameLeaseLost       = "actoviq.lease.lost"             // {run}
	NameProviderStops   = "actoviq.provider.interruptions" // {run}
	NameToolCalls       = "actoviq.tool.calls"             // {call}, by effect and outcome
	NameApprovals       = "actoviq.approvals"              // {decision}, by decision
	NameDrivesEnded     = "actoviq.drives.ended"           // {drive}, by status
	NameRetentionPruned = "actoviq.retention.removed"      // {run}
	NameNotifications   = "actoviq.notifications"          // {item}, by outcome
)

// Attribute keys.
const (
	AttrStatus   = attribute.Key("status")
	AttrKind     = attribute.Key("kind")
	AttrTakeover = attribute.Key("takeover")
	AttrEffect   = attribute.Key("effect")
	AttrOutcome  = attribute.Key("outcome")
	AttrDecision = attribute.Key("decision")
)

// Tool call outcomes (AttrOutcome on actoviq.tool.calls).
const (
	OutcomeCommitted         = "committed"            // the tool ran and its result was committed
	OutcomeUnknown           = "unknown"              // the outcome is not known: reconciliation
	OutcomeReconciledByProbe = "reconciled_by_probe"  // the tool's probe found it committed
	OutcomeReconciledByHuman = "reconciled_by_person" // a person recorded committed or failed
	OutcomeNotRun            = "not_run"              // refused before it started (validation, policy, ...)
	OutcomeRejected          = "rejected"             // a person rejected it at approval
)

// Snapshot is what the gauges show: counts over the store at one moment.
type Snapshot struct {
	// Runs counts runs by status. Only statuses that are not history
	// belong here (queued, running, stalled, interrupted): counting
	// finished runs would cost a scan of history (see actoviq.drives.ended
	// for those).
	Runs map[string]int64
	// Inbox holds, by kind (approval, reconciliation, recovery, provider,
	// stalled, ...), how many items wait and since when the oldest does.
	Inbox map[string]InboxKind
}

// InboxKind is one kind of the inbox in a [Snapshot].
type InboxKind struct {
	// Items is how many wait.
	Items int64
	// Oldest is when the one that waits longest began waiting; zero when
	// none does.
	Oldest time.Time
}

// Source reads a [Snapshot]. It is called at most once per
// [Config].SourceEvery, from a scrape; it must be cheap (a bounded query:
// counts served by an index, the oldest item by an ordered index lookup).
type Source func(ctx context.Context) (*Snapshot, error)

// Config configures [New]. A nil *Config means defaults.
type Config struct {
	// MeterName is the instrumentation scope. Empty means
	// [DefaultMeterName].
	MeterName string
	// Source feeds the gauges; nil means no gauges (counters only).
	Source Source
	// SourceEvery is the shortest time between two Source reads: scrapes
	// in between show the last snapshot. Zero means 15 s.
	SourceEvery time.Duration
	// Clock gives the time inbox ages are measured at; nil means time.Now.
	Clock func() time.Time
}

// Metrics records actoviq's signals through the OpenTelemetry metric API.
// It is an [actoviq.EventSink]: register it on the runtime
// ([actoviq.Config].Sinks) or a worker ([actoviq.WorkOptions].Sinks) and it
// counts what the events say. Its methods are safe for concurrent use.
type Metrics struct {
	cfg Config
	reg metric.Registration

	claims, takeovers, lost, provider, tools, approvals, drives, pruned, notes, srcErrs metric.Int64Counter
	claimDur                                                                            metric.Float64Histogram

	mu       sync.Mutex
	last     *Snapshot
	lastRead time.Time
}

var _ actoviq.EventSink = (*Metrics)(nil)

// New creates the instruments with a meter from mp (nil means the global
// provider at the time of the call).
func New(mp metric.MeterProvider, cfg *Config) (*Metrics, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.MeterName == "" {
		c.MeterName = DefaultMeterName
	}
	if c.SourceEvery < 0 {
		return nil, errors.New("otelmetrics: Config.SourceEvery is negative")
	}
	if c.SourceEvery == 0 {
		c.SourceEvery = 15 * time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(c.MeterName)
	m := &Metrics{cfg: c}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		ctr, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return ctr
	}
	m.claims = counter(NameClaims, "{claim}", "Runs claimed by workers (takeover=true: a running run whose holder was gone).")
	m.takeovers = counter(NameLeaseTakeovers, "{run}", "Runs a worker took over after their previous holder's lease expired or its process died.")
	m.lost = counter(NameLeaseLost, "{run}", "Drives of this process that lost their run's claim (their lease expired or another worker took it).")
	m.provider = counter(NameProviderStops, "{run}", "Drives stopped by a provider outage (interruption kind provider).")
	m.tools = counter(NameToolCalls, "{call}", "Tool calls settled, by effect and outcome.")
	m.approvals = counter(NameApprovals, "{decision}", "Approval decisions, by decision.")
	m.drives = counter(NameDrivesEnded, "{drive}", "Drives of runs that ended, by the run's status after the drive.")
	m.pruned = counter(NameRetentionPruned, "{run}", "Finished runs removed by retention.")
	m.notes = counter(NameNotifications, "{item}", "Webhook notifications, by outcome (delivered, failed, dropped).")
	m.srcErrs = counter(NameSourceError, "{error}", "Store reads behind the gauges that failed (the gauges then show nothing).")
	// Counters without attributes start at 0, so that a rule over them
	// (increase(actoviq_lease_lost_total[15m])) finds the series before
	// the first event.
	for _, c := range []metric.Int64Counter{m.takeovers, m.lost, m.provider, m.pruned, m.srcErrs} {
		if c != nil {
			c.Add(context.Background(), 0)
		}
	}
	var err error
	m.claimDur, err = meter.Float64Histogram(NameClaimDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a worker's claim of the next run took in the store."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	errs = append(errs, err)
	if c.Source != nil {
		runs, err1 := meter.Int64ObservableGauge(NameRuns, metric.WithUnit("{run}"),
			metric.WithDescription("Runs that are not finished, by status (queued, running, stalled, interrupted)."))
		items, err2 := meter.Int64ObservableGauge(NameInboxItems, metric.WithUnit("{item}"),
			metric.WithDescription("Items waiting for a person, by kind."))
		oldest, err3 := meter.Float64ObservableGauge(NameInboxOldest, metric.WithUnit("s"),
			metric.WithDescription("How long the oldest item of each kind has waited for a person."))
		errs = append(errs, err1, err2, err3)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		m.reg, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
			s := m.snapshot(ctx)
			if s == nil {
				return nil
			}
			for status, n := range s.Runs {
				o.ObserveInt64(runs, n, metric.WithAttributes(AttrStatus.String(status)))
			}
			now := m.cfg.Clock()
			for kind, k := range s.Inbox {
				attrs := metric.WithAttributes(AttrKind.String(kind))
				o.ObserveInt64(items, k.Items, attrs)
				age := 0.0
				if k.Items > 0 && !k.Oldest.IsZero() {
					age = max(now.Sub(k.Oldest).Seconds(), 0)
				}
				o.ObserveFloat64(oldest, age, attrs)
			}
			return nil
		}, runs, items, oldest)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Close unregisters the gauges' callback. Counters stay usable.
func (m *Metrics) Close() error {
	if m.reg != nil {
		return m.reg.Unregister()
	}
	return nil
}

// snapshot returns the source's snapshot, read at most once per
// SourceEvery; on an error it counts it and returns nil (no gauge is
// better than a stale one that looks fresh).
func (m *Metrics) snapshot(ctx context.Context) *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock()
	if m.last != nil && now.Sub(m.lastRead) < m.cfg.SourceEvery {
		return m.last
	}
	s, err := m.cfg.Source(ctx)
	if err != nil || s == nil {
		m.srcErrs.Add(ctx, 1)
		m.last = nil
		return nil
	}
	m.last, m.lastRead = s, now
	return s
}

// RecordRetention counts runs removed by retention. The runs.pruned
// events of [actoviq.Runtime.Prune] and of a worker's sweeper (their
// "run_ids", unless "dry_run") are counted by Emit; call this where a prune
// reports its count otherwise.
func (m *Metrics) RecordRetention(ctx context.Context, removed int64) {
	if removed > 0 {
		m.pruned.Add(ctx, removed)
	}
}

// RecordNotification counts one webhook notification by outcome
// ("delivered", "failed", "dropped"): wire it to the notifier's OnDone.
func (m *Metrics) RecordNotification(ctx context.Context, outcome string) {
	m.notes.Add(ctx, 1, metric.WithAttributes(AttrOutcome.String(outcome)))
}

// evData is the part of event payloads the counters read.
type evData struct {
	Effect     string `json:"effect"`
	Resolution string `json:"resolution"`
	Decision   string `json:"decision"`
	Status     string `json:"status"`
	// run.claimed
	Takeover   bool          `json:"takeover"`
	Took       time.Duration `json:"took"`
	Interrupts []struct {
		Kind string `json:"kind"`
	} `json:"interruptions"`
	// runs.pruned: the runs one batch removed
	RunIDs []string `json:"run_ids"`
	DryRun bool     `json:"dry_run"`
}

// Emit implements [actoviq.EventSink]. It never blocks on I/O: it adds to
// in-memory instruments.
func (m *Metrics) Emit(ctx context.Context, ev actoviq.Event) {
	var d evData
	if len(ev.Data) > 0 {
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		_ = dec.Decode(&d) // lenient: a field of the wrong type leaves the rest
	}
	ctx = context.WithoutCancel(ctx)
	switch ev.Type {
	case actoviq.EvRunClaimed:
		m.claims.Add(ctx, 1, metric.WithAttributes(AttrTakeover.Bool(d.Takeover)))
		m.claimDur.Record(ctx, d.Took.Seconds())
		if d.Takeover {
			m.takeovers.Add(ctx, 1)
		}
	case actoviq.EvRunLeaseLost:
		m.lost.Add(ctx, 1)
	case actoviq.EvRunCompleted, actoviq.EvRunFailed, actoviq.EvRunCancelled, actoviq.EvRunInterrupted:
		status := d.Status
		if status == "" {
			status = strings.TrimPrefix(ev.Type, "run.")
		}
		m.drives.Add(ctx, 1, metric.WithAttributes(AttrStatus.String(status)))
		for _, in := range d.Interrupts {
			if in.Kind == string(actoviq.InterruptProvider) {
				m.provider.Add(ctx, 1)
				break
			}
		}
	case actoviq.EvToolCommitted:
		m.tool(ctx, d.Effect, OutcomeCommitted)
	case actoviq.EvToolUnknown:
		m.tool(ctx, d.Effect, OutcomeUnknown)
	case actoviq.EvToolSkipped:
		m.tool(ctx, d.Effect, OutcomeNotRun)
	case actoviq.EvToolSettled:
		switch d.Resolution {
		case "probe":
			m.tool(ctx, d.Effect, OutcomeReconciledByProbe)
		case "not-run":
			m.tool(ctx, d.Effect, OutcomeNotRun)
		default:
			m.tool(ctx, d.Effect, OutcomeReconciledByHuman)
		}
	case actoviq.EvToolApproved:
		m.approval(ctx, d.Decision, "approved")
	case actoviq.EvToolRejected:
		m.tool(ctx, d.Effect, OutcomeRejected)
		m.approval(ctx, d.Decision, "rejected")
	default:
		switch {
		case strings.HasSuffix(ev.Type, "expired"):
			m.approval(ctx, d.Decision, "expired")
		case strings.HasSuffix(ev.Type, "escalated"):
			m.approval(ctx, d.Decision, "escalated")
		case strings.HasSuffix(ev.Type, "signed"):
			m.approval(ctx, d.Decision, "signed")
		case strings.HasSuffix(ev.Type, ".pruned"):
			if !d.DryRun {
				m.RecordRetention(ctx, int64(len(d.RunIDs)))
			}
		}
	}
}

func (m *Metrics) tool(ctx context.Context, effect, outcome string) {
	if effect == "" {
		effect = "side-effect" // the default effect of a tool that declares none
	}
	m.tools.Add(ctx, 1, metric.WithAttributes(AttrEffect.String(effect), AttrOutcome.String(outcome)))
}

func (m *Metrics) approval(ctx context.Context, decision, byType string) {
	if decision == "" {
		decision = byType
	}
	m.approvals.Add(ctx, 1, metric.WithAttributes(AttrDecision.String(decision)))
}
