// Package actoviq runs LLM agents whose tool calls have real consequences.
//
// Every tool call goes through a durable pending-tool ledger that is written
// before the tool runs. A call of a side-effect tool whose outcome is unknown
// (the process died while it ran, its transport failed) is never run again on
// the runtime's own initiative: the run stops with a reconciliation
// interruption until a person, or a probe written by the tool's owner,
// records what happened. There is no shared transaction between the
// runtime's checkpoint and the systems tools touch, so nothing here is
// "exactly once": only where a target dedupes on the key the runtime hands
// it is a call effectively once.
//
// # Tools and effects
//
// A tool ([tool.Tool], or [tool.Func] for typed Go functions) declares its
// effect: read, idempotent-write or side-effect; the zero value is
// side-effect. Every call gets an idempotency key ([tool.IdempotencyKey]):
// "<runID>:<callID>" in the tenant "default" and "<tenant>/<runID>:<callID>"
// in any other, so two logical calls never share one, across runs and
// tenants. Run ids containing ':' or '/' are refused ([ErrInvalidID]); a
// provider's call id containing one is replaced by a ledger-assigned id. The
// key is persisted with the call's ledger entry before it starts and is the
// same on every attempt of that call (a re-run or re-execute bumps only the
// attempt), also after an upgrade that would format a new call's key
// differently. Hand it to the system you call. A tool that cannot tell whether its effect
// happened returns an error wrapping [tool.ErrOutcomeUnknown]. A tool may
// implement [tool.Reconciler], a read-back probe asked after a crash.
//
// # A run
//
// [Runtime.Run] drives a run: each model response is committed together
// with a "prepared" ledger entry per tool call before anything runs; a call
// is recorded "started" (and that write has returned) before the tool is
// invoked, and "committed" with its result after. The calls of one
// response run in the model's order: a call waits while any call before
// it is unsettled (awaiting approval, interrupted), and only a run of
// consecutive reads runs in parallel, so a read never overtakes an
// earlier write. A tool result larger than [Limits].MaxToolOutput (1 MiB)
// is truncated with a note the model sees. A tool call whose arguments
// are not a JSON object, or hold bytes that are not UTF-8, is recorded,
// never run, and answered with an error result ([Limits].MaxMalformedCalls
// bounds them); such bytes in a raw item or structured output are
// recorded as U+FFFD ([ModelResponseData].NotUTF8); any other invalid
// response ends the run failed with code model_behavior
// ([ErrModelBehavior]). A run ends completed, failed or cancelled, or stops
// "interrupted" with [Interruption]s that carry their evidence:
//
//   - approval: the [ApprovalPolicy] asks a person before the call starts;
//   - reconciliation: a side effect may or may not have happened;
//   - recovery: a read or idempotent write was started when the run stopped
//     and the [RecoveryPolicy] does not allow re-running it;
//   - provider: a model call failed after the transport's bounded retries
//     with a transient error (5xx, 408/409/425/429, a transport error, a
//     broken stream, a Retry-After above the cap). Nothing is lost and
//     nothing needs deciding: Resume makes one new model call from the
//     committed checkpoint ([ProviderFailure] is the evidence). The runtime
//     never does that on its own; [Limits].MaxProviderInterruptions bounds
//     them in a row. A final error (400, 401, 403, 404, context length, a
//     policy refusal) ends the run failed, its [RunError].Hint saying what
//     to do.
//
// [Runtime.Decide] records a [Decision] (approve, reject, committed with a
// result, failed with a message for the model, or re-execute with the same
// key), with who, when and why; [Runtime.Resume] applies decisions and the
// recovery rules and goes on. A new version of the agent may take a
// waiting run over: Resume refuses only a change to what an unsettled call
// depends on (its tool's name, effect, input schema, approval need, or the
// policy version its approval is bound to), with an [*AgentChangeError]
// listing each change; [ResumeOptions].AcceptAgentChange takes it over,
// recorded, voiding the affected approvals (see Example_agentUpgrade).
// Resume refuses a run another live process holds ([*RunHeldError] names
// it), and ends a run past its deadline as cancelled with its ledger
// untouched. [Runtime.Get] and [Runtime.List] derive liveness from the
// claim: [StatusStalled] is a run stored running that no live process
// drives. The decisions of one call are one
// atomic write; on a finished run Resume refuses them ([RunFinishedError]),
// and Decide takes only what records the truth about a started call
// (committed or failed), for the audit trail.
//
// # Arguments that hold secrets
//
// Secret-looking values are redacted before a call's arguments are
// persisted, but the call must still run with the real ones, under its key,
// also on a re-run or re-execute. The runtime that received them keeps them
// in memory until the call's turn is recorded; a [Codec] ([Config].Codec,
// [NewSealCodec]) seals them in the run for other processes. A process
// that cannot open them (no codec, the wrong key) neither runs nor drops
// such a call: one that never started waits for approval with an
// interruption whose reason says why (approve it where the arguments are,
// or reject it), and a re-run or re-execute stops with a recovery or
// reconciliation interruption.
//
// # Stopping
//
// [Runtime.Cancel] is the caller's decision: the run ends cancelled for
// good, also when a side effect was in flight (that call stays reconcilable
// for the record). [Runtime.Close] is a process shutting down: its runs are
// not ended, their claims are released, and another process continues them
// with Resume (into a reconciliation if a side effect was in flight). A
// panic in a tool, policy, probe or sink is recovered and recorded; a
// panicking side effect is outcome-unknown, as after a crash.
//
// # Child runs and workers
//
// [AgentTool] offers an agent to another agent as a tool: each call runs a
// child run of its own (id "<parent>.<call>", [ChildRunID]) with its own
// ledger and keys, inheriting the parent's deadline, cancellation, tenant
// and policies and a tree-wide [Budget]; its [ChildFailure] policy says
// what a failure does to the parent. A child that stops for a decision
// stops its parent with the child's interruptions ([Interruption].RunID);
// resuming the parent resumes the child first. [Runtime.Spawn] queues a
// background child; [Runtime.Wait] waits for any run.
//
// [Runtime.Work] is a worker: it claims queued runs (and runs whose holder
// died) of the agents given to [Runtime.Register], drives them with a
// concurrency limit until its context ends, and drains. Several workers in
// several processes share a store; [Runtime.Enqueue] queues a run,
// [Runtime.Requeue] hands a decided run back to the queue.
//
// # Sessions
//
// [Input.SessionID] continues a conversation: the session's history is
// prepended, and the run's items are appended to it (CAS) when it
// completes, each stamped with the run id and turn. The run holds the
// history by reference: it records the session revision it started from
// and stores only its own items, and reads the history back as of that
// revision when the model or [Runtime.Get] needs it.
//
// A run's cost is bounded by default: it takes the session's last
// [DefaultSessionWindow] (1,000) items, from a user message among them
// when the session is longer, and that is all the store reads, so a run
// continuing a session of any length costs about what one continuing a
// short session does. [AgentSpec.SessionWindow] sets another window for an
// agent, [Config.SessionWindow] another default for a runtime, and
// [WholeSession] asks for every item (a cost that grows with the
// session). A window never hides silently: [RunInfo.SessionOmitted] (and
// `actoviq runs show`, the console's run page) says how many earlier items
// a run left out. A window over a compacted session (a snapshot, stored
// with [store.Store.SessionSnapshotPut]) is the last items of what a whole
// read shows. A run killed between
// that append and its completion write completes, on resume, with what it
// appended, without a model call. A run overtaken by another run of its
// session ends failed with code session_conflict ([ErrSessionConflict]).
//
// # Stores
//
// The runtime persists through [store.Store]: storemem (memory),
// storesqlite (the embedded default) or storepg (PostgreSQL). Every write is
// a revision compare-and-swap, fenced by the run's claim (a lease with an
// epoch), so a worker that lost its lease cannot commit anything.
//
// # Events
//
// Every transition is an [Event] in a stable envelope (schema, id, per-run
// sequence, run and parent ids, trace and span ids, type, time, data),
// stored with the transition and handed to [EventSink]s. Redaction runs
// before anything is stored or emitted, on every field that can carry a
// secret: arguments, result data, error results and persisted errors,
// interruption reasons, probe answers, recorded decisions, run error
// messages and a refused response kept as evidence. otelsink turns events
// into OpenTelemetry spans.
//
// # How a call is written
//
// The runtime sees interfaces only ([llm.Provider], [tool.Tool],
// [store.Store]); the caller wires concrete providers and stores in. Each
// model response is committed to the checkpoint, together with a
// "prepared" ledger entry for each tool call it asks for, before anything
// runs. Each call is then recorded "started" (a write that has returned
// before the tool is invoked) and "committed" (the result; the transcript
// is the checkpoint plus the committed results of the pending turn, so
// this record is also the transcript append). Where nothing can come
// between them, records travel together in one atomic, fenced write: the
// response with its first call's start, a call's committed record with
// the next call's start, so a turn of n calls costs n+1 writes. On resume the recovery rules
// are applied to whatever the ledger holds before any new work. Every
// write is a revision compare-and-swap fenced by the run's claim, so a
// worker that lost its lease cannot commit anything.
package actoviq
