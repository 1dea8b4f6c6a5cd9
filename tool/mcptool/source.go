package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/tool"
)

// Defaults of [Options].
const (
	DefaultTerminateWait  = 500 * time.Millisecond
	DefaultConnectTimeout = 30 * time.Second
	DefaultResumeRetries  = 2
	DefaultTaskPoll       = 250 * time.Millisecond
	DefaultTaskPollMax    = 5 * time.Second
)

// protocol20260728 is the first protocol version without sessions and
// stream resumption.
const protocol20260728 = "2026-07-28"

// errNoResumption is what resuming a response stream under protocol
// 2026-07-28 fails with.
var errNoResumption = errors.New("mcptool: protocol 2026-07-28 has no stream resumption: the broken response stream was a cancellation on the server's side, and the call is not re-sent")

// ErrClosed is returned by a [Source] (and its tools) after Close.
var ErrClosed = errors.New("mcptool: source closed")

// Options configures a [Source]. A nil *Options means all defaults.
type Options struct {
	// ClientName and ClientVersion identify this client in the MCP
	// handshake. Defaults "actoviq" and "0".
	ClientName, ClientVersion string
	// TerminateWait is how long closing a stdio server waits for it to
	// exit after its stdin is closed, before SIGTERM (and again before
	// SIGKILL). Zero means [DefaultTerminateWait]. The npm reference
	// servers ignore stdin closing, so this is what each close of one
	// costs.
	TerminateWait time.Duration
	// ConnectTimeout bounds starting a server and the MCP handshake, within
	// the caller's context. Zero means [DefaultConnectTimeout]. When a
	// person may sign in ([OAuthOptions.OpenURL] is set), the handshake may
	// also take [OAuthOptions.LoginTimeout].
	ConnectTimeout time.Duration
	// Stderr receives the stdio servers' standard error. Nil discards it.
	// What a server prints there is the server's business: this package
	// cannot scrub it. Either way, the last lines a server wrote before
	// it failed to connect are added, scrubbed, to the connect error.
	Stderr io.Writer
	// LookupEnv resolves "${NAME}" in env and header values. Nil means
	// [os.LookupEnv].
	LookupEnv func(name string) (string, bool)
	// HTTPClient is the client for streamable-HTTP servers; configured
	// headers are added by a wrapping transport. Nil means a client over a
	// clone of [http.DefaultTransport] that Close releases. It must not
	// retry requests on its own: a POSTed tools/call must never be sent
	// twice.
	HTTPClient *http.Client
	// ResumeRetries bounds how often a broken response stream of a
	// streamable-HTTP server is resumed (a GET with Last-Event-ID, after the
	// server's retry delay) without the stream making progress. Resuming
	// re-reads the same response; it never re-sends the request. Zero means
	// [DefaultResumeRetries]; negative turns resumption off, so a broken
	// stream fails its call with an unknown outcome. Each attempt waits the
	// server's retry delay, or the SDK's backoff (1 s, then ×1.5, with
	// jitter), so a server that is gone for good fails its calls after
	// about 2-5 s with the default.
	ResumeRetries int
	// ProtocolVersion pins the MCP protocol version this client asks for.
	// Empty means the newest the SDK speaks (2026-07-28: server/discover,
	// then initialize with 2025-11-25 for a server that does not know it;
	// the server may settle on an older version still). Set an older
	// version ("2025-11-25", "2025-06-18", ...) to skip 2026-07-28.
	ProtocolVersion string
	// NoTasks stops this client from declaring the Tasks extension
	// ([TasksExtension]) to servers, so that they answer every call
	// directly. A task handle a server returns anyway is still followed.
	NoTasks bool
	// TaskPoll is the first wait between two tasks/get of a task the
	// client follows; it grows by half at each poll up to TaskPollMax. A
	// server's pollIntervalMs, when longer, wins. Zero means
	// [DefaultTaskPoll]; TaskPollMax zero means [DefaultTaskPollMax].
	TaskPoll, TaskPollMax time.Duration
	// OAuth configures MCP authorization of streamable-HTTP servers: where
	// tokens are kept and how a person signs in. Nil: tokens in memory,
	// and a server that needs a sign-in fails with an [*AuthError].
	OAuth *OAuthOptions
	// Elicit answers a server's request for input from a person, made
	// while one of its tools runs. Nil: this client does not declare the
	// elicitation capability, so servers do not ask (one that asks anyway
	// gets an error, which declines).
	Elicit ElicitHandler
}

// Source connects to the configured MCP servers and offers their tools as
// [tool.Tool]s. It is safe for concurrent use and meant to live as long as
// the process: one connection per server is made lazily, on the first
// discovery or call, and reused across calls and runs. A connection whose
// call failed in flight (transport failure, server exit, timeout) is closed
// and dropped, and the call is never re-sent; the next call on that server
// connects again.
//
// Close it at shutdown, after [actoviq.Runtime.Close] has returned (with
// defers: create the Source first and the Runtime second), so that no run
// is using a server when it goes away. A call that is in flight when Close
// runs loses its connection, and its outcome is unknown.
type Source struct {
	opts    Options
	servers map[string]*server
	names   []string // enabled servers, sorted

	ownTransport *http.Transport // nil when Options.HTTPClient was given

	mu     sync.Mutex
	closed bool
	bg     sync.WaitGroup // background closes and session watchers
}

// New returns a source over cfg's enabled servers. It validates cfg,
// resolves "${NAME}" references and connects to nothing yet.
func New(cfg *Config, opts *Options) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ClientName == "" {
		o.ClientName = "actoviq"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "0"
	}
	if o.TerminateWait <= 0 {
		o.TerminateWait = DefaultTerminateWait
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.ResumeRetries == 0 {
		o.ResumeRetries = DefaultResumeRetries
	}
	if o.TaskPoll <= 0 {
		o.TaskPoll = DefaultTaskPoll
	}
	if o.TaskPollMax <= 0 {
		o.TaskPollMax = DefaultTaskPollMax
	}
	if o.TaskPollMax < o.TaskPoll {
		o.TaskPollMax = o.TaskPoll
	}
	s := &Source{opts: o, servers: map[string]*server{}}
	if s.opts.HTTPClient == nil {
		// Our own transport, so Close can release its idle connections.
		s.ownTransport = http.DefaultTransport.(*http.Transport).Clone()
		s.opts.HTTPClient = &http.Client{Transport: s.ownTransport}
	}
	for name, sc := range cfg.Servers {
		if sc.Disabled {
			continue
		}
		sv, err := newServer(s, name, sc)
		if err != nil {
			return nil, err
		}
		s.servers[name] = sv
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	return s, nil
}

// Servers returns the names of the enabled servers, sorted.
func (s *Source) Servers() []string { return slices.Clone(s.names) }

// Tools discovers the tools of every enabled server (connecting to each)
// and returns them sorted by name. A server that cannot be reached is an
// error naming it.
func (s *Source) Tools(ctx context.Context) ([]tool.Tool, error) {
	var all []tool.Tool
	for _, n := range s.names {
		ts, err := s.ServerTools(ctx, n)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b tool.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	return all, nil
}

// ServerTools discovers one server's tools, sorted by name.
func (s *Source) ServerTools(ctx context.Context, name string) ([]*Tool, error) {
	sv, ok := s.servers[name]
	if !ok {
		return nil, fmt.Errorf("mcptool: no enabled server %q", name)
	}
	return sv.discover(ctx)
}

// Close closes every connection and waits for the servers to go (a stdio
// server gets [Options.TerminateWait] to exit before it is signalled). It
// is idempotent. Tools of a closed source fail with [ErrClosed], and
// nothing was sent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.bg.Wait()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range s.names {
		sv := s.servers[n]
		sv.mu.Lock()
		sess := sv.cur
		sv.cur = nil
		sv.mu.Unlock()
		if sess != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = sess.cs.Close()
			}()
		}
	}
	wg.Wait()
	s.bg.Wait()
	if s.ownTransport != nil {
		s.ownTransport.CloseIdleConnections()
	}
	return nil
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// goBackground runs fn on a goroutine that Close waits for; after Close it
// runs fn before returning.
func (s *Source) goBackground(fn func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		fn()
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		fn()
	}()
}

// server is one configured server and its current connection.
type server struct {
	src     *Source
	name    string
	cfg     ServerConfig
	env     []string    // resolved stdio environment
	headers http.Header // resolved HTTP headers
	scrub   *scrubber

	client     *mcp.Client   // one per server, so that requests from it name it
	auth       *oauthHandler // nil: no MCP authorization
	connecting chan struct{} // a one-slot lock that a waiting caller can give up on

	captures captures // raw answers of tools/calls in flight, by key (wire.go)

	mu   sync.Mutex
	cur  *session
	gen  int         // connections made, for diagnostics and tests
	tail *stderrTail // the last stdio process's stderr (stderr.go)
}

// session is one live connection.
type session struct {
	cs   *mcp.ClientSession
	done chan struct{} // closed when the connection has ended
	gen  int
	tap  *tapConn // nil on streamable HTTP (wire.go)

	mu       sync.Mutex
	inflight map[context.Context]int // contexts of the calls in flight
}

// version returns the protocol version the connection negotiated.
func (c *session) version() string {
	if r := c.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

func (c *session) ended() bool {
	select {
	case <-c.done:
		return true
	default:
	}
	// A call whose context ended while in flight is about to fail with
	// an unknown outcome and drop the connection. Its caller (the tool
	// runner, on the same deadline) may return first; the connection is
	// as good as dropped already, so that the next call never rides on
	// it.
	c.mu.Lock()
	defer c.mu.Unlock()
	for ctx := range c.inflight {
		if ctx.Err() != nil {
			return true
		}
	}
	return false
}

// track registers an in-flight call; the returned func deregisters it.
func (c *session) track(ctx context.Context) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == nil {
		c.inflight = map[context.Context]int{}
	}
	c.inflight[ctx]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.inflight[ctx]--; c.inflight[ctx] <= 0 {
			delete(c.inflight, ctx)
		}
	}
}

// defaultEnv is what a stdio child inherits from this process.
var defaultEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "LANG", "LC_ALL"}

var windowsEnv = []string{"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMFILES"}

func newServer(src *Source, name string, sc *ServerConfig) (*server, error) {
	sv := &server{src: src, name: name, cfg: *sc, connecting: make(chan struct{}, 1)}
	var secrets []string
	lookup := src.opts.LookupEnv
	if sc.Command != "" {
		inherit := defaultEnv
		if runtime.GOOS == "windows" {
			inherit = append(slices.Clone(defaultEnv), windowsEnv...)
		}
		for _, k := range inherit {
			if _, set := sc.Env[k]; set {
				continue
			}
			if v, ok := os.LookupEnv(k); ok {
				sv.env = append(sv.env, k+"="+v)
			}
		}
	}
	// Env and header values are secrets whatever the transport (a Connect
	// function may use them too).
	for _, k := range sortedKeys(sc.Env) {
		raw := sc.Env[k]
		v, err := expand(raw, lookup)
		if err != nil {
			return nil, &ConfigError{Server: name, Field: "env." + k, Reason: err.Error()}
		}
		secrets = append(secrets, redact.KeyValues(k, raw, v)...)
		sv.env = append(sv.env, k+"="+v)
	}
	sv.headers = http.Header{}
	for _, k := range sortedKeys(sc.Headers) {
		raw := sc.Headers[k]
		v, err := expand(raw, lookup)
		if err != nil {
			return nil, &ConfigError{Server: name, Field: "headers." + k, Reason: err.Error()}
		}
		secrets = append(secrets, redact.KeyValues(k, raw, v)...)
		sv.headers.Set(k, v)
	}
	secrets = append(secrets, redact.URLValues(sc.URL)...)
	if sc.URL != "" && sv.headers.Get("Authorization") == "" && (sc.OAuth == nil || !sc.OAuth.Disabled) {
		var oc OAuthConfig
		if sc.OAuth != nil {
			oc = *sc.OAuth
		}
		if oc.ClientSecret != "" {
			v, err := expand(oc.ClientSecret, lookup)
			if err != nil {
				return nil, &ConfigError{Server: name, Field: "oauth.clientSecret", Reason: err.Error()}
			}
			secrets = append(secrets, oc.ClientSecret, v)
			oc.ClientSecret = v
		}
		sv.auth = newOAuthHandler(sv, oc, src.opts.OAuth)
		if oc.PrivateKey != "" {
			pk, err := expand(oc.PrivateKey, lookup)
			if err != nil {
				return nil, &ConfigError{Server: name, Field: "oauth.privateKey", Reason: err.Error()}
			}
			secrets = append(secrets, pk)
			if sv.auth.key, sv.auth.keyAlg, err = parsePrivateKey(pk, oc.SigningAlgorithm); err != nil {
				return nil, &ConfigError{Server: name, Field: "oauth.privateKey", Reason: err.Error()}
			}
		}
	}
	caps := &mcp.ClientCapabilities{}
	if !src.opts.NoTasks {
		// The Tasks extension: a server may answer a long call with a
		// task handle, which is recorded and followed (task.go).
		caps.AddExtension(TasksExtension, map[string]any{})
	}
	sv.client = mcp.NewClient(&mcp.Implementation{Name: src.opts.ClientName, Version: src.opts.ClientVersion}, &mcp.ClientOptions{
		// Declare no roots: our servers get their scope from their
		// configuration, and server-filesystem would otherwise ask.
		// Elicitation is declared when Options.Elicit is set.
		Capabilities:       caps,
		ElicitationHandler: sv.elicitationHandler(),
		// The multi-round-trip middleware re-sends tools/call with the
		// answers to a server's input requests: a tools/call is sent
		// once, so it stays off.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	// A "${NAME}" reference is not itself secret; keep it readable.
	secrets = slices.DeleteFunc(secrets, func(v string) bool { return varRef.MatchString(v) && varRef.ReplaceAllString(v, "") == "" })
	sv.scrub = redact.NewSecrets(secrets...)
	return sv, nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// errorf builds an error that names the server and is scrubbed of its
// secrets.
func (sv *server) errorf(format string, args ...any) error {
	return scrubError(sv.scrub, fmt.Errorf("mcptool: server %s: "+format, append([]any{sv.name}, args...)...))
}

// get returns the live connection, connecting when there is none or the
// last one has ended. A connection that ended between calls (the server
// exited while idle) is replaced here, before anything is sent on it.
func (sv *server) get(ctx context.Context) (*session, error) {
	select {
	case sv.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-sv.connecting }()
	if sv.src.isClosed() {
		return nil, ErrClosed
	}
	sv.mu.Lock()
	cur := sv.cur
	sv.mu.Unlock()
	if cur != nil && !cur.ended() {
		return cur, nil
	}
	if cur != nil {
		sv.drop(cur)
	}
	sess, err := sv.connect(ctx)
	if err != nil {
		return nil, err
	}
	// Publish the connection and start its watcher, unless Close came
	// first.
	src := sv.src
	src.mu.Lock()
	if src.closed {
		src.mu.Unlock()
		_ = sess.cs.Close()
		return nil, ErrClosed
	}
	src.bg.Add(1)
	sv.mu.Lock()
	sv.cur = sess
	sv.mu.Unlock()
	src.mu.Unlock()
	go func() {
		defer src.bg.Done()
		_ = sess.cs.Wait()
		close(sess.done)
	}()
	return sess, nil
}

func (sv *server) connect(ctx context.Context) (*session, error) {
	t, err := sv.transport(ctx)
	if err != nil {
		return nil, err
	}
	timeout := sv.src.opts.ConnectTimeout
	if sv.auth != nil && sv.auth.opts.OpenURL != nil {
		// The handshake may wait for a person to sign in.
		timeout += sv.auth.opts.LoginTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var copts *mcp.ClientSessionOptions
	if v := sv.src.opts.ProtocolVersion; v != "" {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	cs, err := sv.client.Connect(cctx, t, copts)
	if err != nil {
		return nil, sv.withStderr(err)
	}
	sv.mu.Lock()
	sv.gen++
	sess := &session{cs: cs, done: make(chan struct{}), gen: sv.gen}
	if tt, ok := t.(*tapTransport); ok {
		sess.tap = tt.conn
	}
	sv.mu.Unlock()
	return sess, nil
}

func (sv *server) transport(ctx context.Context) (mcp.Transport, error) {
	switch {
	case sv.cfg.Connect != nil:
		t, err := sv.cfg.Connect(ctx)
		if err != nil {
			return nil, err
		}
		if _, http := t.(*mcp.StreamableClientTransport); http {
			// Its connection cannot be wrapped without losing its
			// session updates; tasks need the configured URL.
			return t, nil
		}
		return &tapTransport{inner: t, sv: sv}, nil
	case sv.cfg.Command != "":
		cmd := exec.Command(sv.cfg.Command, sv.cfg.Args...)
		cmd.Env = slices.Clone(sv.env)
		cmd.Dir = sv.cfg.Cwd
		cmd.Stderr = sv.stderrSink()
		dieWithParent(cmd)
		return &tapTransport{inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: sv.src.opts.TerminateWait}, sv: sv}, nil
	default:
		base := sv.src.opts.HTTPClient
		hc := *base
		rt := base.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc.Transport = &headerTransport{base: rt, headers: sv.headers, sv: sv}
		ct := &mcp.StreamableClientTransport{
			Endpoint:   sv.cfg.URL,
			HTTPClient: &hc,
			// Resuming a broken response stream (GET with Last-Event-ID)
			// re-reads the same answer and never re-sends the request,
			// so it is on. A stream that cannot be resumed fails the
			// call, and we treat its outcome as unknown.
			MaxRetries: sv.src.opts.ResumeRetries,
		}
		if sv.auth != nil {
			// The SDK re-POSTs a request once after a 401 or 403 answer
			// that the handler resolved: that answer refused the
			// request, so nothing ran.
			ct.OAuthHandler = sv.auth
		}
		return ct, nil
	}
}

// drop forgets sess and closes it in the background (closing a stdio
// server can take TerminateWait). It never re-sends anything.
func (sv *server) drop(sess *session) {
	sv.mu.Lock()
	if sv.cur == sess {
		sv.cur = nil
	}
	sv.mu.Unlock()
	sv.src.goBackground(func() { _ = sess.cs.Close() })
}

// Connections reports how many connections have been made to the server;
// for tests and diagnostics.
func (sv *server) connections() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.gen
}

// Connections reports how many connections the source has made to the
// named server since it was created: 1 after a first call, 2 after a
// reconnect.
func (s *Source) Connections(name string) int {
	sv, ok := s.servers[name]
	if !ok {
		return 0
	}
	return sv.connections()
}

// headerTransport adds the configured headers to every request. It never
// retries.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	sv      *server // nil for this package's own requests
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" && req.Header.Get("Mcp-Protocol-Version") >= protocol20260728 {
		// Protocol 2026-07-28 has no stream resumption: a closed response
		// stream cancelled the request on the server's side. Resuming it
		// is refused here, whatever the server sent, so the call fails
		// with its outcome unknown and is never re-sent.
		return nil, errNoResumption
	}
	r := req
	if len(h.headers) > 0 {
		r = req.Clone(req.Context())
		for k, vs := range h.headers {
			r.Header[k] = slices.Clone(vs)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if h.sv != nil && err == nil && req.Method == http.MethodPost {
		h.sv.captureHTTP(req, resp)
	}
	if obs, ok := req.Context().Value(callObserverKey{}).(*callObserver); ok && req.Method == http.MethodPost {
		obs.record(resp, err)
	}
	return resp, err
}

// callObserver sees the HTTP answers to the POSTs of one tools/call (the
// SDK sends them with the call's context).
type callObserver struct {
	mu       sync.Mutex
	posts    int
	refusals int // 401 and 403 answers
	status   int // of the last answer; 0 when it failed
}

type callObserverKey struct{}

func (o *callObserver) record(resp *http.Response, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.posts++
	o.status = 0
	if err == nil {
		o.status = resp.StatusCode
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			o.refusals++
		}
	}
}

// refused reports whether every POST of the call was answered 401 or 403:
// the server refused the request before it could act, and the last
// status.
func (o *callObserver) refused() (bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.posts > 0 && o.refusals == o.posts, o.status
}

// ProtocolVersion returns the MCP protocol version of the named server's
// current connection ("2026-07-28", "2025-11-25", ...), or "" when it has
// none (not connected yet, or dropped).
func (s *Source) ProtocolVersion(name string) string {
	sv, ok := s.servers[name]
	if !ok {
		return ""
	}
	sv.mu.Lock()
	cur := sv.cur
	sv.mu.Unlock()
	if cur == nil {
		return ""
	}
	return cur.version()
}
