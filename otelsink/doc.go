// Package otelsink turns actoviq run events into OpenTelemetry spans.
//
// It is an adapter, not a requirement: the runtime records runs, ledgers
// and events without it, and nothing in the runtime imports OpenTelemetry.
// Register a [Sink] like any other [actoviq.EventSink], on the runtime
// ([actoviq.Config].Sinks) or per run:
//
//	sink := otelsink.New(tracerProvider, nil)
//	res, err := rt.Run(ctx, agent, input, sink)
//
// # Span tree
//
// Each drive of a run is one span, "actoviq.run", opened by run.started or
// run.resumed and ended by run.completed, run.interrupted, run.failed or
// run.cancelled. A failed run's span has status Error with the run's error
// code and message. A resumed run is a new drive and therefore a new run
// span; both carry the same actoviq.run_id.
//
// Under the run span:
//
//   - "actoviq.turn": one model turn, model.request to model.response.
//     Retried attempts (model.attempt) become span events on it; streamed
//     text deltas become span events only when [Config].TextDeltas is set.
//   - "actoviq.tool <name>": one tool call, from tool.prepared (or
//     tool.started, when this drive did not see it prepared) to
//     tool.committed, tool.unknown, tool.settled, tool.skipped or
//     tool.rejected. Intermediate transitions (awaiting approval, approved,
//     probed, re-execute) are span events on it. tool.unknown ends the span
//     with status Error: the side effect's outcome is not known.
//
// A run end closes whatever turn and tool spans of that run are still open;
// an interrupted run's pending calls therefore end with the run and carry
// the state they stopped in. The run span's parent is the span in the
// context passed to Emit, if any; otherwise, for a sub-run whose parent run
// is open in the same Sink, the parent run's span; otherwise it is a root.
//
// Spans take their start and end times from the events, so they follow the
// runtime's clock ([actoviq.Config].Clock).
//
// # Attributes
//
// Only identifiers and counters are copied from event data, never tool
// arguments, results or model text (even though the runtime has already
// redacted secrets): actoviq.run_id, actoviq.parent_run_id,
// actoviq.event_seq, actoviq.agent_id, actoviq.turn, actoviq.call_id,
// actoviq.tool, actoviq.effect, actoviq.idempotency_key, actoviq.state,
// actoviq.attempt, actoviq.status, actoviq.error_code, gen_ai.request.model
// and the token counts gen_ai.usage.input_tokens, gen_ai.usage.output_tokens,
// actoviq.usage.cached_input_tokens and actoviq.usage.reasoning_tokens when
// the data has them. Missing keys are skipped. The model's text appears only
// with [Config].TextDeltas.
//
// # GenAI semantic conventions
//
// With [ConventionsGenAI] (chosen in [Config].Conventions, or by
// OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental when
// Conventions is left at [ConventionsFromEnv]) the same tree carries the
// names the OpenTelemetry GenAI conventions give it: "invoke_agent <agent
// id>" (kind internal: the agent runs in this process) for a drive,
// "chat <model>" (kind client) for a model turn, "execute_tool <tool>"
// (kind internal) for a tool call. They carry gen_ai.operation.name,
// gen_ai.agent.id and gen_ai.agent.name (the agent's id: an agent has no
// other name), gen_ai.conversation.id (the run's session when the
// run.started data names one, otherwise the run id), gen_ai.request.model,
// gen_ai.response.id, gen_ai.response.finish_reasons, the token counts
// (gen_ai.usage.input_tokens, gen_ai.usage.output_tokens,
// gen_ai.usage.cache_read.input_tokens), gen_ai.tool.name,
// gen_ai.tool.call.id, gen_ai.tool.type ("function") and error.type.
// gen_ai.provider.name is not set: events do not name the provider.
// Without the opt-in the spans keep the names above (actoviq.run, ...),
// as the conventions' transition plan asks of instrumentations that
// already emitted spans.
//
// In both, our own attributes say what no convention does: actoviq.effect,
// actoviq.state (the ledger state, "unknown" included),
// actoviq.idempotency_key and its digest actoviq.idempotency_key.digest,
// actoviq.attempt, actoviq.holder and actoviq.epoch (the claim a drive ran
// under), actoviq.approval.decision, actoviq.reconciliation.verdict and
// actoviq.probe.outcome. error.type on a tool span is "unknown_outcome"
// (its status is Error in both conventions), "tool_error" (the tool
// returned an error result) or "not_run" (refused before it started); on a
// failed run's span it is the run error's code.
//
// Tool arguments and results (gen_ai.tool.call.arguments and
// gen_ai.tool.call.result) are recorded only with [Config].RecordContent,
// and only after redaction: the runtime redacts event data before any sink
// sees it, and the sink redacts the content again with its own keys.
//
// # Bounds and limits
//
// A Sink is safe for concurrent use by many runs. It keeps only open spans,
// and drops all of a run's state when that run's span ends, so its memory
// is bounded by the runs in flight. Spans end outside the Sink's lock, but a
// synchronous exporter (a simple span processor) still runs on the run's
// goroutine; use a batching processor in production.
//
// Known limitation: when a drive dies without emitting a run end (the
// process crashes, or the engine returns an error after run.started without
// a final event), the spans of that drive stay open in the Sink and are not
// exported. If the same Sink later sees that run resumed, it ends the stale
// spans first, with status Error ("the drive ended without a final run
// event"), and opens a new run span; otherwise they stay held until the
// process exits, and after a crash they are lost. Events that
// arrive while no run span is open for their run, such as the tool.approved
// or tool.settled events written by [actoviq.Runtime.Decide] on an
// interrupted run, are not exported.
package otelsink
