// Package mcptool offers the tools of MCP servers as [tool.Tool]s, over the
// official MCP Go SDK (github.com/modelcontextprotocol/go-sdk). It owns the
// configuration file, the connections (stdio and streamable HTTP), the
// mapping of tool annotations to effects, and the rule that a tools/call is
// sent at most once.
//
// # Configuration file
//
// The file has the "mcpServers" shape other agent tools use, keyed by
// server name, plus three additions: trustAnnotations, tools (per-tool
// overrides) and allowedTools.
//
//	{
//	  "mcpServers": {
//	    "fs": {
//	      "command": "npx",
//	      "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/srv/data"],
//	      "env": {"LOG_LEVEL": "warn"},
//	      "cwd": "/srv",
//	      "trustAnnotations": true,
//	      "tools": {
//	        "write_file": {"effect": "side-effect", "requireApproval": true}
//	      },
//	      "allowedTools": ["read_text_file", "list_directory", "write_file"]
//	    },
//	    "tickets": {
//	      "type": "http",
//	      "url": "https://mcp.example.com/mcp",
//	      "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"}
//	    }
//	  }
//	}
//
// A server has either command (with optional args, env, cwd) for stdio or
// url (with optional headers) for streamable HTTP; "type" is optional
// ("stdio" or "http"). "${NAME}" in env and header values is taken from this
// process's environment, so the file need not hold secrets. "disabled": true
// skips a server. Unknown fields are errors, and every error names the
// server and the field ([ConfigError]) but never a value. Headers that the
// MCP transport sets, and Idempotency-Key (which would let Go's HTTP client
// replay a POST), cannot be configured. A stdio server inherits only PATH,
// HOME, USER, LOGNAME, SHELL, TERM, TMPDIR, LANG and LC_ALL from this
// process, plus its env.
//
// # Tools
//
// [Source.Tools] connects to each server and lists its tools (only those in
// allowedTools, when it is set). Each becomes a [*Tool] named
// "<server>__<tool>" ([QualifiedName]): server names contain no "__" and do
// not end in "_", so names are unique across servers, and they are stable
// across processes (a name outside the tool name pattern is made valid
// deterministically). The input schema, and the output schema when the
// server gives one, are the server's.
//
// The effect comes from the tools override when it names one; else, when
// trustAnnotations is true, from the annotations: readOnlyHint → read;
// idempotentHint with destructiveHint explicitly false → idempotent-write
// (a missing destructiveHint means destructive, as the MCP specification
// says); else side-effect. An untrusted server's tools are all side-effect
// unless overridden. requireApproval makes every call wait for a person.
//
// # One call, sent once
//
// Every tools/call carries the call's idempotency key ([tool.IdempotencyKey],
// "<runID>:<callID>" under the runtime) in its _meta, under
// "io.actoviq/idempotency-key" ([MetaIdempotencyKey]), so a server can dedupe.
// What a call can end in is documented on [Tool.Call]: an isError result is a
// result the model sees; a JSON-RPC invalid-params error is a
// [tool.KindValidation] error (the tool did not run; the model sees it as an
// error result); a transport failure, a server exit, a timeout or
// cancellation while the call is in flight, and any JSON-RPC error that does
// not prove the tool did not run, return an error wrapping
// [tool.ErrOutcomeUnknown]. Then the connection is closed and dropped and the
// call is never re-sent by this package; the runtime records the ledger entry
// as unknown and, for a read, gives the model an error result, for a write,
// stops the run with an interruption. The next call on that server (in the
// same run too) connects again.
//
// What the SDK (v1.8.0) does, read from its source:
//   - The jsonrpc2 layer sends a request once and never retries it.
//   - The streamable-HTTP client POSTs a message once. It re-POSTs it once
//     only after the server answered 401 or 403 and the OAuth handler then
//     authorized: that answer refused the request, so nothing ran. A
//     tools/call whose every POST was answered 401 or 403 fails with its
//     outcome known (the tool did not run). It wraps every error of the POST's http.Client.Do as "rejected" (saying
//     the request did not reach the server), which is not true once the
//     request was written; we do not rely on it and treat every in-flight
//     failure as unknown.
//   - Up to protocol 2025-11-25, when a call's SSE response stream breaks
//     after the server gave it an event id, the client resumes it with GET
//     and Last-Event-ID after the server's retry delay
//     ([Options.ResumeRetries] times without progress at most). That
//     re-reads the same answer, which the server kept; it never re-sends
//     the request, so resumption is on. A stream that breaks before any
//     event id, or whose resumption fails, fails the call with its outcome
//     unknown. Protocol 2026-07-28 has no resumption (see below).
//   - The SDK's multi-round-trip middleware (protocol 2026-07-28) would
//     send tools/call again with the answers, out of the ledger's sight.
//     We turn it off and send the continuation ourselves, after recording
//     the round (see below). We declare no sampling or roots capability;
//     elicitation only when [Options.Elicit] is set.
//   - Go's net/http replays a request on a fresh connection only when nothing
//     was written, or when the request is idempotent: GET/HEAD, or a POST
//     carrying an Idempotency-Key or X-Idempotency-Key header, which is why
//     those headers cannot be configured.
//
// # Authorization (OAuth)
//
// A streamable-HTTP server without an "Authorization" header is authorized
// the way the MCP specification describes, on the SDK's auth package: when
// it answers 401, the client reads its protected-resource metadata (from
// the WWW-Authenticate challenge, then the well-known paths), the
// authorization server's metadata (OAuth, then OpenID, then the 2025-03-26
// fallback endpoints), registers itself (a client ID metadata document
// where supported and configured, else a pre-registered client from the
// "oauth" block, else dynamic registration), and runs the authorization
// code flow with PKCE and the resource parameter, asking for the scopes of
// the challenge or the metadata (or the configured ones). A 403
// insufficient_scope asks again for the union of scopes (step-up); a
// request is re-sent at most once per authorization. A server whose "oauth"
// block says "grant": "client_credentials" gets its token with the client
// credentials grant, asking no one: that is for workers. It authenticates
// with "clientSecret", or with a signed JWT made from "privateKey"
// (private_key_jwt, RFC 7523), which the SDK has no handler for.
//
//	"tickets": {"url": "https://mcp.example.com/mcp",
//	            "oauth": {"clientId": "actoviq", "clientSecret": "${TICKETS_SECRET}",
//	                      "callbackPort": 8765, "scopes": "tickets:write"}}
//
// The sign-in needs a person: [OAuthOptions.OpenURL] shows the URL, and
// this package waits for the browser's redirect on a loopback listener
// (http://127.0.0.1:PORT/callback). Without OpenURL nothing asks anyone:
// the server fails with an [*AuthError] that says how to sign in
// ([Source.Login]; the actoviq command: `actoviq mcp login NAME`). Tokens,
// with their refresh token and client registration, go to
// [OAuthOptions.Tokens] ([FileTokenStore]: a 0600 file under the user's
// config dir; default in memory), never to the run store, and are
// refreshed and stored again when they expire. They are secrets like
// header values: scrubbed from errors and results.
//
// # Elicitation
//
// A server may ask a person for input while one of its tools runs. With
// [Options.Elicit] set, the client declares the capability and the handler
// answers ([ElicitRequest], [ElicitResult]); the SDK checks the schema and
// fills the defaults of fields the answer leaves out. Without it, the
// capability is not declared and a server that asks anyway gets an error:
// a worker declines. [DeclineElicitation] declines explicitly. On protocol
// 2026-07-28 a server asks through a multi-round-trip result instead (next
// section); the same handler answers it.
//
// # Protocol 2026-07-28
//
// The client asks for protocol 2026-07-28 first (server/discover, no
// initialize, no session; version and capabilities in every request's
// _meta) and falls back to initialize with 2025-11-25 when the server does
// not know it; the server may settle on an older version still.
// [Options.ProtocolVersion] pins an older one; [Source.ProtocolVersion]
// says what a connection speaks.
//
// 2026-07-28 has no stream resumption: a response stream that closes before
// the answer is a cancellation on the server's side, and only a new request
// with a new id could ask again. So a broken stream during tools/call is an
// unknown outcome, like any transport failure: never a silent re-send, never
// a new request id on this client's own initiative. A resuming GET
// (Last-Event-ID) under 2026-07-28 is refused before it leaves, even when
// the server sent event ids.
//
// # Multi-round-trip input (SEP-2322)
//
// A 2026-07-28 server may answer a tools/call with resultType
// "input_required": what it needs (inputRequests) and an opaque
// requestState. That is not a result: the client answers and sends the same
// tools/call again with inputResponses and the requestState, the same
// arguments and the same idempotency key in _meta. It is a step the server
// asked for, not a replay, and the ledger tells the two apart: each round
// is recorded on the call's ledger entry ([tool.RecordHandle], kind
// [HandleInput], data [InputHandle]) before anyone is asked (step
// [StepAsked]), and again with the answers before the continuation is sent
// ([StepSending]). After a crash, [Tool.Resume] (the runtime calls it for a
// started call with a handle) sends the continuation of a round at
// [StepAsked], asking again; a round at [StepSending] may have reached the
// server, so its outcome is unknown, as for any send. Elicitations are
// answered by [Options.Elicit]; without a handler the call returns a
// [*tool.InputError] with the question, for a person, whose answer reaches
// Resume through [tool.Answer]. Sampling and roots requests are not offered.
// At most 10 rounds.
//
// # Tasks (SEP-2663)
//
// The client declares the Tasks extension ([TasksExtension]; off with
// [Options.NoTasks]), so a server may answer a long call with a task
// handle (resultType "task", a task id) instead of a result; one it returns
// unasked is followed the same way. The task id is recorded on the call's
// ledger entry (kind [HandleTask], data [TaskHandle]) before anything else
// happens; then the call polls tasks/get, from [Options.TaskPoll] growing by
// half up to [Options.TaskPollMax] (the server's pollIntervalMs wins when
// longer), until the task ends or the call's deadline passes. tasks/get is a
// pure read: a connection that breaks while polling is replaced and polling
// goes on. A completed task's result is the call's result; a failed,
// cancelled or input_required task, a task the server no longer knows
// (expired past its TTL, lost) and a deadline that passes while it works
// are unknown outcomes whose error names the task id, for the probe or a
// person. A call whose context is cancelled (its run was cancelled) sends
// tasks/cancel once and records that on the handle; a call whose drive
// stopped without a decision ([tool.DriveStopped]: the runtime closed, a
// worker released the run) leaves the task running for the run's next
// drive, which polls it. After a crash,
// [Tool.Resume] polls the stored task id and never calls the tool again.
// [Source.TaskStatus] and [Source.CancelTask] (`actoviq mcp task`, `actoviq
// mcp cancel-task`) let an operator look at a task and cancel it.
//
// The SDK (v1.8.0) has no Tasks API: this package reads the raw answer of a
// call (a tap on a stdio connection, a tee of the HTTP response body) and
// sends tasks/get and tasks/cancel itself, each once.
//
// # Connections and Close
//
// A [Source] connects to a server lazily, on the first discovery or call, and
// reuses that connection across calls and runs. A connection that ended
// while idle (the server exited) is replaced before anything is sent on it. A
// stdio server is closed by closing its stdin, then SIGTERM after
// [Options.TerminateWait] (default 500ms; the npm reference servers ignore
// stdin closing), then SIGKILL.
//
// A stdio server runs in a process group of its own and, on Linux, with
// the parent-death signal set (SIGKILL): when the process that started it
// dies, even by SIGKILL, the kernel kills the server, so a killed run leaves
// no orphaned server. The signal reaches the process the configuration
// names; a launcher (npx, sh -c) that starts the real server as its child
// passes it on only if that child exits when its stdin closes. Other
// systems have no parent-death signal: there the server sees its stdin
// close when the runtime's process dies, and one that ignores that outlives
// it.
//
// The Source is the user's to close: create it before the actoviq.Runtime and
// close it after the Runtime's Close has returned (with defers: source first,
// runtime second, so the runtime closes first). Runtime.Close waits for live
// runs, so no call is in flight when the Source closes; a call that is, loses
// its connection and its outcome is unknown.
//
// # Secrets
//
// Env and header values (before and after "${NAME}" expansion), and the URL's
// password and query values, are secrets. They are replaced by "[REDACTED]"
// wherever this package produces text: error messages, tool descriptions and
// schemas, and results (a server may echo its environment). A server's own
// standard error goes to [Options.Stderr] unscrubbed (discarded by default).
package mcptool
