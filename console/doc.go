// Package console is the operator console: a web page, and the JSON API it
// uses, where the people on call find every run that waits for them, see
// the evidence, decide, and see the run continue.
//
// A [Console] is an [net/http.Handler] over one [actoviq.Runtime], and so
// over that runtime's tenant: a run of another tenant is not found (404,
// in the same words as a run that does not exist). It uses only the root
// package's public API. The command `actoviq console` serves it; a program
// can mount it on its own server:
//
//	con, err := console.New(rt, &console.Config{
//		Tokens: []console.Token{{Secret: os.Getenv("ACTOVIQ_CONSOLE_TOKEN")}},
//		Resume: func(ctx context.Context, runID string) (*actoviq.RunResult, error) {
//			return rt.Resume(ctx, agent, runID)
//		},
//	})
//	defer con.Close()
//	http.ListenAndServeTLS(addr, cert, key, con)
//
// # Pages
//
//   - / (Inbox): everything that waits for a person, oldest first: calls
//     awaiting approval, reconciliations (side effects of unknown outcome),
//     recoveries, provider interruptions, runs whose questions are all
//     answered and that wait to be resumed, and stalled runs (stored as
//     running, but the worker that held them is gone). Each shows its age, tool, effect, a one-line
//     reason and, for a call, a one-line summary of its (redacted)
//     arguments; an approval shows its approvers so far and whether its
//     wait was escalated; it filters by kind, agent and tool and updates itself over
//     server-sent events.
//   - /runs/{id}: the run page: open interruptions with their evidence and
//     the decision forms, the ledger (state, effect, idempotency key,
//     attempt, started and committed times, worker and epoch, probe
//     answer), the worker that drives it (or drove it last), every real
//     attempt of each call (who started it, under which epoch, how it ended
//     or why it was interrupted: [actoviq.CallAttempt]), the transcript, the audit trail of decisions and of agent versions that
//     took the run over, child runs as a tree and the event timeline, one
//     line per event. A finished run's unsettled calls (started when it was
//     cancelled) can still be settled for the record. Secrets appear
//     redacted, exactly as stored.
//   - /runs: all runs, with a status filter and a search by run id or agent.
//   - /login: signs in with a token and the operator's name.
//
// # Authentication
//
// Every request but the login page and the static files needs a token from
// [Config.Tokens]. The JSON API takes it as "Authorization: Bearer TOKEN".
// The page signs in once and then holds a session cookie (Secure, HttpOnly,
// SameSite=Strict; sessions live in memory and end when the process does).
// A state-changing request made with the cookie must carry the session's
// CSRF token in the X-CSRF-Token header (the page does this); one without
// it is refused with 403, and so is any state change or sign-in that the
// browser says comes from another site (Sec-Fetch-Site, or an Origin other
// than the request's host: behind a proxy, forward the Host header).
// Bearer requests carry no ambient credential and need none. Tokens,
// session ids and CSRF tokens are compared in constant time.
//
// What the console guarantees:
//
//   - A valid token is never refused. The token is checked before
//     anything is counted; failed sign-ins and bad bearer tokens are
//     counted per client address, and past [Config.LoginFailures] per
//     [Config.LoginWindow] each further failure is answered 429 with
//     Retry-After instead of 401. Behind a proxy every client shares the
//     proxy's address, so a stranger's failures slow only other failures.
//     The counter reports guessing; what defeats it is the token's length
//     (at least 16 characters; `actoviq console` makes 192-bit ones).
//   - A request for a host the console does not serve is refused with 421
//     before anything else: the Host header must be an IP address,
//     localhost (or a name under .localhost), or one of [Config.Hosts]. A
//     web page whose name an attacker points at the console's address (DNS
//     rebinding) sends its own name, and is refused.
//   - After sign-in the browser goes only to a page the console routes (/,
//     /runs, /runs/{id}, with a query); a "next" with a control character,
//     a space or a backslash anywhere, or naming anything else, goes to /.
//   - Signing in ends the session the browser held before; signing out
//     ends it too. Sessions live in memory and end with the process.
//   - /static/ serves the page's files and lists no directory.
//
// Decisions are recorded under the operator's name: the name bound to the
// token ([Token.Operator]), or else the name given at sign-in, or, for a
// bearer token bound to no name, the decision's "by" field. A request
// without a name is refused; "console" is not accepted as one.
//
// # JSON API
//
// All endpoints are under /api/v1/ and answer JSON. Errors are
//
//	{"code": "decision_conflict", "message": "...", "call_id": "call_1"}
//
// with the codes listed at [Error]. 401 means no valid token or session,
// 403 a missing or wrong CSRF token (or a "by" that is not the signed-in
// operator), or a decision the runtime's approvals policy
// (actoviq.Config.Approvers) refuses (code not_allowed, the message says
// why), 404 an unknown run or call, 409 a decision that no longer
// fits the ledger (someone decided first), a run that already ended, or a
// run another worker drives right now.
//
// A run is sent as its one JSON view, [actoviq.RunInfo]'s encoding (the
// same names and values as `actoviq runs show --json`: snake_case, zero
// values left out, a ledger entry as [store.LedgerEntry]'s, whose
// "holder" and "epoch" name the worker that last moved it), less what the
// console never shows: the run's "meta" (the caller's JSON for its own
// program) and, wherever it appears, "args_digest", the plain SHA-256 of
// a call's unredacted arguments that approvals bind to (beside the
// redacted arguments it would give away a low-entropy secret, such as a
// PIN, to anyone trying the candidates). It is left out of ledger
// entries, open and unsettled interruptions (where it reads ""), decision
// records and their evidence, the audit trail, the events' data and the
// resume answer; a decision binds to what was shown instead
// ("shown_digest"). Secrets appear redacted, as the runtime stored them.
//
// GET /api/v1/runs?status=STATUS&q=TEXT&limit=N lists runs, newest first,
// each as [actoviq.Runtime.List] reads it (no ledger, no transcript; the
// claim only for a run not finished):
//
//	{"runs": [{"id", "status", "stored_status", "agent_id", "agent_digest", "parent_id", "session_id", "holder", "deadline", "created_at", "updated_at", "revision"}], "next", "cut"}
//
// ("next" and "cut": true when the page is cut; "next" is the after= of
// the next page.)
//
// STATUS is queued, running, stalled, interrupted, completed, failed or
// cancelled (running and stalled are derived from the run's claim);
// q matches run ids and agent ids; limit defaults to 100 (0: all).
//
// GET /api/v1/runs/{id} returns the run as the run page shows it: a [Run],
// the RunInfo view with the page's own fields (last_driver, undecided,
// audit, events, tasks, attempts, cancel_task, children, resume) and a
// ledger whose entries add the probe answer of an open interruption.
//
// GET /api/v1/inbox?kind=K&agent=A&tool=T returns the [Inbox] (kind and
// agent page in the store; tool narrows one page, and [Inbox].Narrowed
// says so); GET /api/v1/inbox/stream (same filters) sends it as
// server-sent events named "inbox": once at once, then whenever it
// changes. With a store that stamps what waits (store.WaitingStamper:
// SQLite, PostgreSQL), an idle stream costs one small query per tick
// (Config.PollInterval); the page is recomputed when the stamp moves, and
// every 30 ticks anyway.
//
// POST /api/v1/runs/{id}/decisions records decisions without driving the
// run. The body is one decision ([DecisionRequest]):
//
//	{"call_id": "call_1", "kind": "approve", "note": "invoice 42 checked"}
//	{"call_id": "call_1", "kind": "reject", "reason": "wrong payee"}
//	{"call_id": "call_1", "kind": "committed", "result": "payment p-77 sent"}
//	{"call_id": "call_1", "kind": "failed", "message": "the bank has no such payment"}
//	{"call_id": "call_1", "kind": "reexecute", "note": "bank dedupes on the key"}
//
// or several, {"decisions": [...]}, which are checked together against the
// ledger, under the run's claim, before any is written. A decision may
// say what the operator was shown ("shown_at", and "shown_digest", the
// actoviq.ArgsRenderingDigest of the arguments shown): it is recorded with
// the decision, and one made on other arguments than the call's is
// refused. With an approvals policy that asks for two approvers, the first
// approval leaves the call waiting: the run's interruption then says who
// approved and who is still needed (Interruption.Approval). A committed
// result is a JSON value: a string is the text the model sees; anything
// else is shown to the model as JSON and kept as structured data. The
// answer is a [DecisionsResponse] naming what happens next.
//
// POST /api/v1/runs/{id}/resume does what the run's [ResumeInfo] offers
// (only what works for that run): "here", through [Config.Resume] (the
// decisions recorded, then the recovery rules): 200 with a
// [ResumeResponse] when the drive stopped within [Config.ResumeWait], 202
// while it goes on; "queue", when this console cannot drive the run but a
// worker serving its agent runs: the run is handed to the queue, 200 with
// status queued. Otherwise, or when Resume returns [ErrCannotResume], it
// answers 501 with code resume_elsewhere and the command that resumes the
// run, or the sentence that its own program does.
//
// The console also runs the runtime's approvals escalation every
// [Config.EscalateEvery], so a call that waits too long for approval is
// escalated (and shown so in the inbox) even when no worker runs.
package console
