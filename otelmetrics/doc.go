// Package otelmetrics records actoviq's operational signals through the
// OpenTelemetry metric API, and serves them to Prometheus.
//
// Like otelsink for traces, it is an adapter: the runtime does not import
// OpenTelemetry. A [Metrics] is an [actoviq.EventSink] that counts what
// the events say, plus optional gauges read from the store through a
// [Source]:
//
//	prom, _ := otelmetrics.NewPrometheus()
//	m, _ := otelmetrics.New(prom.MeterProvider(), &otelmetrics.Config{Source: src})
//	rt, _ := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{m}})
//	go otelmetrics.Serve(ctx, ln, prom.Handler()) // GET /metrics
//
// The command line does this for `actoviq worker --metrics-listen ADDR` and
// `actoviq console --metrics-listen ADDR`.
//
// # Instruments
//
// With their Prometheus names (OpenTelemetry's dots become underscores, a
// unit adds _seconds, a counter _total):
//
//   - actoviq_runs{status}: runs that are not finished, by status (queued,
//     running, stalled, interrupted). Gauge, from the Source.
//   - actoviq_inbox_items{kind} and actoviq_inbox_oldest_age_seconds{kind}:
//     what waits for a person, by kind (approval, reconciliation,
//     recovery, provider, stalled, ...), and how long the oldest has
//     waited (0 when none does). Gauges, from the Source.
//   - actoviq_gauges_errors_total: Source reads that failed; the gauges are
//     then absent from the scrape, never stale values that look fresh.
//   - actoviq_claims_total{takeover} and actoviq_claim_duration_seconds (a
//     histogram): runs claimed by this process's workers and how long the
//     store took; takeover="true" when the run was running under a holder
//     that was gone.
//   - actoviq_lease_takeovers_total: the same takeovers, counted by the
//     taker.
//   - actoviq_lease_lost_total: drives of this process whose heartbeat
//     found their claim taken by another process. A worker whose count
//     keeps rising is too slow to renew (an overloaded machine, a store
//     too far away, a LeaseTTL too short).
//   - actoviq_provider_interruptions_total: drives stopped by a provider
//     outage.
//   - actoviq_tool_calls_total{effect,outcome}: calls settled, with
//     outcome committed, unknown, reconciled_by_probe,
//     reconciled_by_person, not_run or rejected.
//   - actoviq_approvals_total{decision}: approved, rejected, signed (one
//     approver of several), expired and escalated (from the approvals
//     policy's tool.approval_* events).
//   - actoviq_drives_ended_total{status}: drives that ended, by the run's
//     status after them (finished runs are counted here, not by a gauge:
//     counting them in the store would scan history).
//   - actoviq_retention_removed_total: finished runs removed by retention
//     ([Metrics.RecordRetention], or an event whose type ends in ".pruned"
//     naming the runs it removed, dry runs not counted).
//   - actoviq_notifications_total{outcome}: webhook notifications
//     ([Metrics.RecordNotification]).
//
// Counters count what this process saw: sum them over the processes in
// PromQL. Gauges describe the store: every process that has a Source
// reports the same values, so aggregate them with max, not sum.
//
// # Cost
//
// Emit only adds to in-memory instruments. The Source is read from a
// scrape, at most once per [Config].SourceEvery (15 s by default), and must
// be a bounded query: counts of live runs served by an index and the oldest
// waiting item by an ordered index lookup, never a scan of finished runs.
package otelmetrics
