package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
)

//go:embed assets
var assets embed.FS

// Token is a credential that may sign in to the console and call its JSON
// API.
type Token struct {
	// Secret is the token itself; required, at least 16 characters.
	Secret string
	// Operator, when set, is the name every decision made with this token
	// is recorded under; a name typed at login is then not used, and when
	// every token has one the sign-in page asks for no name. Empty
	// means the operator gives a name at login (and, on the JSON API, in
	// the decision's "by" field).
	Operator string
}

// ErrCannotResume is returned by a [Config.Resume] function that cannot
// continue a given run in this process (for example, the provider's API key
// is not in its environment). The console then shows the command that
// resumes the run elsewhere.
var ErrCannotResume = errors.New("console: this console cannot resume the run")

// Config configures a [Console]. A nil *Config is invalid: Tokens is
// required.
type Config struct {
	// Tokens that may sign in; at least one.
	Tokens []Token
	// Resume continues a run after its decisions are recorded and returns
	// what that drive produced. It runs on a context that ends when the
	// console closes, not when the request ends. Nil means the console
	// never resumes runs itself: it shows ResumeCommand instead. A returned
	// error matching [ErrCannotResume] shows ResumeCommand too.
	Resume func(ctx context.Context, runID string) (*actoviq.RunResult, error)
	// CanResume, when set, says whether Resume can drive a given run in
	// this process: an error (say, the run's provider key is not in this
	// environment, or the run was started by a Go program whose agent
	// this console cannot build) means no, with the reason. The page then
	// offers only what works for that run: the workers' queue when a
	// worker serves its agent ([actoviq.Runtime.AgentServed]), otherwise
	// ResumeCommand, otherwise the sentence that its own program resumes
	// it. Nil means Resume can drive every run.
	CanResume func(ctx context.Context, run *actoviq.RunInfo) error
	// EscalateEvery is how often the console runs
	// [actoviq.Runtime.EscalateApprovals] (for a runtime with an
	// approvals policy): calls that waited too long for approval are
	// escalated even when no worker runs. Zero means 30 s; negative means
	// never.
	EscalateEvery time.Duration
	// ResumeDescription is the sentence beside the Resume button saying
	// what resuming does here; empty means it continues the run in this
	// process. A Resume that hands runs to a worker queue says so.
	ResumeDescription string
	// ResumeCommand says how to resume a run outside the console, e.g.
	// "actoviq resume RUN --store URL"; "" for a run no command resumes
	// (its program does). Nil means a sentence naming Runtime.Resume.
	ResumeCommand func(runID string) string
	// CancelTask sends tasks/cancel for an MCP task a call left running
	// (mcptool's Source.CancelTask, with the servers' configuration). Nil
	// means the console offers no "cancel the task": the run page still
	// lists the tasks with the command that cancels them.
	CancelTask func(ctx context.Context, server, taskID string) error
	// ResumeWait is how long a resume request waits for the drive to
	// stop before answering 202 (the drive goes on); zero means 10 s.
	ResumeWait time.Duration
	// SessionTTL is how long a browser session lasts; zero means 12 h.
	SessionTTL time.Duration
	// PollInterval is how often live views (the inbox stream) look at the
	// store; zero means 2 s.
	PollInterval time.Duration
	// Hosts are the host names the console answers to (the Host header
	// of a request, without its port; compared case-insensitively), such
	// as the name a TLS proxy in front of it serves. A request for any
	// other name is refused with 421 before anything else happens: a page
	// on another site whose name an attacker points at this console's
	// address (DNS rebinding) sends its own name. An IP address, localhost
	// and names under .localhost are always answered (a browser never
	// resolves them through DNS). Empty means only those.
	Hosts []string
	// LoginFailures is how many failed logins (or bad bearer tokens) one
	// client address may make per LoginWindow; past it, each further
	// failure is answered 429 with Retry-After instead of 401. A valid
	// token is checked first and is never refused, whatever its address
	// did: behind a proxy every client shares the proxy's address. Zero
	// means 5. LoginWindow zero means one minute.
	LoginFailures int
	LoginWindow   time.Duration
	// Clock gives the time; nil means time.Now.
	Clock func() time.Time
	// Random is the source of session ids and CSRF tokens; nil means
	// crypto/rand.
	Random io.Reader
	// InboxLimit is how many waiting runs one inbox page shows (the rest
	// is on the next pages; the page says so); zero means 100, at most
	// 1000.
	InboxLimit int
}

func (c *Config) validate() error {
	if len(c.Tokens) == 0 {
		return errors.New("console: Config.Tokens is empty: the console needs at least one token")
	}
	for i, t := range c.Tokens {
		if len(t.Secret) < 16 {
			return fmt.Errorf("console: Config.Tokens[%d].Secret is shorter than 16 characters", i)
		}
		if t.Operator != "" {
			if err := checkOperator(t.Operator); err != nil {
				return fmt.Errorf("console: Config.Tokens[%d].Operator: %w", i, err)
			}
		}
	}
	for i, h := range c.Hosts {
		if h == "" || strings.ContainsAny(h, "/ \t\r\n@") {
			return fmt.Errorf("console: Config.Hosts[%d] %q is not a host name", i, h)
		}
	}
	if c.ResumeWait < 0 || c.SessionTTL < 0 || c.PollInterval < 0 || c.LoginWindow < 0 || c.LoginFailures < 0 || c.InboxLimit < 0 || c.InboxLimit > 1000 {
		return errors.New("console: a Config duration or limit is negative")
	}
	return nil
}

// Console is the operator console: an [http.Handler] serving the pages and
// the JSON API over one runtime, and so over one tenant. Close it to stop
// the resumes and live streams it started.
type Console struct {
	rt    *actoviq.Runtime
	cfg   Config
	auth  *auth
	hosts map[string]bool // lowercased Config.Hosts, without ports
	tmpl  map[string]*template.Template
	mux   *http.ServeMux

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	resumes      map[string]chan struct{}     // run id → closed when its console-started drive ends
	inboxFlights map[inboxFilter]*inboxFlight // the inbox computations live streams wait for

	inboxComputed atomic.Int64 // pages the live streams computed (tests)
}

// New returns a console over rt. The console does not own rt.
func New(rt *actoviq.Runtime, cfg *Config) (*Console, error) {
	if rt == nil {
		return nil, errors.New("console: nil runtime")
	}
	if cfg == nil {
		return nil, errors.New("console: nil Config: Config.Tokens is required")
	}
	c := *cfg
	c.Tokens = append([]Token(nil), cfg.Tokens...)
	c.Hosts = append([]string(nil), cfg.Hosts...)
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.ResumeWait == 0 {
		c.ResumeWait = 10 * time.Second
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.PollInterval == 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.LoginFailures == 0 {
		c.LoginFailures = 5
	}
	if c.LoginWindow == 0 {
		c.LoginWindow = time.Minute
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Random == nil {
		c.Random = rand.Reader
	}
	if c.InboxLimit == 0 {
		c.InboxLimit = 100
	}
	if c.EscalateEvery == 0 {
		c.EscalateEvery = 30 * time.Second
	}
	if c.ResumeDescription == "" {
		c.ResumeDescription = "Resuming applies the recorded decisions and the recovery rules, then continues from the last checkpoint: nothing committed runs again, and a call whose outcome is unknown is never re-run without a decision."
	}
	if c.ResumeCommand == nil {
		c.ResumeCommand = func(runID string) string {
			return "call Runtime.Resume for run " + runID + " in the program that owns its agent"
		}
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	con := &Console{rt: rt, cfg: c, auth: newAuth(&c), tmpl: tmpl, ctx: ctx, cancel: cancel, resumes: map[string]chan struct{}{}}
	con.hosts = map[string]bool{}
	for _, h := range c.Hosts {
		con.hosts[hostName(h)] = true
	}
	con.routes()
	if c.EscalateEvery > 0 {
		con.wg.Add(1)
		go con.escalate()
	}
	return con, nil
}

// escalate runs the runtime's approvals escalation until the console
// closes; a runtime without an approvals policy escalates nothing.
func (c *Console) escalate() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.EscalateEvery)
	defer t.Stop()
	for {
		_, _ = c.rt.EscalateApprovals(c.ctx) // the inbox shows what it could not do; the next tick tries again
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the live streams and waits for the resumes this console
// started (they are cancelled, and their runs stay resumable).
func (c *Console) Close() error {
	// Under mu, so that no drive or computation starts after Wait begins.
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// ServeHTTP implements [http.Handler].
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	if !c.servesHost(r.Host) {
		http.Error(w, "this console does not serve the host "+strconv.Quote(r.Host)+": open it by its address, or add the name to console.Config.Hosts (actoviq console --host NAME)", http.StatusMisdirectedRequest)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// hostName is a Host header's name, lowercased, without its port or an
// IPv6 address's brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
}

// servesHost reports whether a request for host is one for this console:
// an IP address, localhost (or a name under .localhost), or a name in
// Config.Hosts. Any other name may be a DNS rebinding page's.
func (c *Console) servesHost(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	return c.hosts[name]
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	m.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		// Files only: a directory (which FileServer would list) is not found.
		name := strings.TrimPrefix(r.URL.Path, "/static/")
		if st, err := fs.Stat(static, name); name == "" || err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})

	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.page(c.logout))
	m.HandleFunc("GET /{$}", c.page(c.inboxPage))
	m.HandleFunc("GET /runs", c.page(c.runsPage))
	m.HandleFunc("GET /runs/{id}", c.page(c.runPage))

	m.HandleFunc("GET /api/v1/inbox", c.api(c.apiInbox))
	m.HandleFunc("GET /api/v1/inbox/stream", c.api(c.apiInboxStream))
	m.HandleFunc("GET /api/v1/runs", c.api(c.apiRuns))
	m.HandleFunc("GET /api/v1/runs/{id}", c.api(c.apiRun))
	m.HandleFunc("POST /api/v1/runs/{id}/decisions", c.api(c.apiDecisions))
	m.HandleFunc("POST /api/v1/runs/{id}/resume", c.api(c.apiResume))
	m.HandleFunc("POST /api/v1/runs/{id}/calls/{call}/cancel-task", c.api(c.apiCancelTask))
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path+" (see the console package documentation)")
	})
	c.mux = m
}
