package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

const (
	sessionCookie = "actoviq_console"
	csrfHeader    = "X-CSRF-Token"
	csrfField     = "csrf"
)

// principal is who makes a request.
type principal struct {
	// operator is the name decisions are recorded under; empty for a
	// bearer token bound to no name (the request must then name one).
	operator string
	// session is set for cookie-authenticated requests.
	session *session
}

type session struct {
	operator string
	csrf     string
	expires  time.Time
}

type tokenHash struct {
	sum      [32]byte
	operator string
}

type auth struct {
	cfg    *Config
	tokens []tokenHash

	mu       sync.Mutex
	sessions map[[32]byte]*session // sha256(session id) → session
	failures map[string][]time.Time
}

func newAuth(c *Config) *auth {
	a := &auth{cfg: c, sessions: map[[32]byte]*session{}, failures: map[string][]time.Time{}}
	for _, t := range c.Tokens {
		a.tokens = append(a.tokens, tokenHash{sum: sha256.Sum256([]byte(t.Secret)), operator: t.Operator})
	}
	return a
}

// Sign-in page modes: what the page asks of the operator's name.
const (
	// nameAsked: no token is bound to a name; the operator types one.
	nameAsked = "asked"
	// nameFromToken: every token is bound to a name (actoviq console
	// --tokens-file): the page asks for none.
	nameFromToken = "token"
	// nameIfUnbound: some tokens are bound: a name typed is used only
	// with a token bound to none.
	nameIfUnbound = "unbound"
)

// nameMode is how the sign-in page asks for the operator's name, from
// how the configured tokens are bound.
func (a *auth) nameMode() string {
	bound := 0
	for _, t := range a.tokens {
		if t.operator != "" {
			bound++
		}
	}
	switch {
	case bound == 0:
		return nameAsked
	case bound == len(a.tokens):
		return nameFromToken
	default:
		return nameIfUnbound
	}
}

// checkToken compares secret with every configured token in constant time
// (the comparison is of fixed-length hashes, and every token is compared).
func (a *auth) checkToken(secret string) (operator string, ok bool) {
	sum := sha256.Sum256([]byte(secret))
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 && !ok {
			operator, ok = t.operator, true
		}
	}
	return operator, ok
}

func (a *auth) random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(a.cfg.Random, b); err != nil {
		return "", fmt.Errorf("console: random source: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// newSession starts a session and returns its id.
func (a *auth) newSession(operator string) (string, *session, error) {
	id, err := a.random(32)
	if err != nil {
		return "", nil, err
	}
	csrf, err := a.random(32)
	if err != nil {
		return "", nil, err
	}
	now := a.cfg.Clock()
	s := &session{operator: operator, csrf: csrf, expires: now.Add(a.cfg.SessionTTL)}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, old := range a.sessions {
		if !now.Before(old.expires) {
			delete(a.sessions, k)
		}
	}
	a.sessions[sha256.Sum256([]byte(id))] = s
	return id, s, nil
}

func (a *auth) session(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	key := sha256.Sum256([]byte(ck.Value))
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[key]
	if !ok {
		return nil
	}
	if !a.cfg.Clock().Before(s.expires) {
		delete(a.sessions, key)
		return nil
	}
	return s
}

func (a *auth) endSession(r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		a.mu.Lock()
		delete(a.sessions, sha256.Sum256([]byte(ck.Value)))
		a.mu.Unlock()
	}
}

// clientKey is the address failed logins are counted against.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// fail counts a failed sign-in (or bad bearer token) against the
// request's client address and reports whether that address has now failed
// more than LoginFailures times within LoginWindow, with how long until its
// oldest counted failure ages out. It is consulted only after a token was
// found invalid, so it never stands between a valid token and the console.
func (a *auth) fail(r *http.Request) (limited bool, wait time.Duration) {
	key := clientKey(r)
	now := a.cfg.Clock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failures) >= maxTrackedClients {
		// Many addresses failing at once: forget the ones whose failures
		// aged out, so the table stays bounded.
		for k, ts := range a.failures {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= a.cfg.LoginWindow {
				delete(a.failures, k)
			}
		}
	}
	recent := a.failures[key][:0]
	for _, t := range a.failures[key] {
		if now.Sub(t) < a.cfg.LoginWindow {
			recent = append(recent, t)
		}
	}
	limited = len(recent) >= a.cfg.LoginFailures
	recent = append(recent, now)
	if len(recent) > a.cfg.LoginFailures {
		recent = recent[len(recent)-a.cfg.LoginFailures:]
	}
	a.failures[key] = recent
	if limited {
		return true, a.cfg.LoginWindow - now.Sub(recent[0])
	}
	return false, 0
}

const maxTrackedClients = 10000

func retryAfter(w http.ResponseWriter, d time.Duration) {
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// checkOperator validates an operator's name as it will be recorded.
func checkOperator(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("the operator's name is empty")
	case len(name) > 64:
		return errors.New("the operator's name is longer than 64 bytes")
	case strings.EqualFold(strings.TrimSpace(name), "console"):
		return errors.New(`"console" is not a person: give the operator's own name`)
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return errors.New("the operator's name has non-printable characters")
	}
	return nil
}

type ctxKey struct{}

func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(ctxKey{}).(*principal)
	return p
}

// api wraps a JSON API handler: a bearer token or a session cookie is
// required, and a state change made with the cookie needs the CSRF token.
func (c *Console) api(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var p *principal
		if hdr := r.Header.Get("Authorization"); hdr != "" {
			// The scheme is case-insensitive (RFC 9110 11.1).
			scheme, secret, ok := strings.Cut(hdr, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				w.Header().Set("WWW-Authenticate", `Bearer realm="actoviq console"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "the Authorization header must be \"Bearer TOKEN\"")
				return
			}
			// The token is checked first: a valid one is never refused,
			// however many failures came from its address (behind a proxy,
			// every client shares one).
			op, ok := c.auth.checkToken(strings.TrimSpace(secret))
			if !ok {
				if lim, wait := c.auth.fail(r); lim {
					retryAfter(w, wait)
					writeError(w, http.StatusTooManyRequests, "too_many_failures", "the bearer token is not valid for this console, and too many failed sign-ins came from this address: wait before trying another (a valid token is accepted at any time)")
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="actoviq console", error="invalid_token"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "the bearer token is not valid for this console")
				return
			}
			p = &principal{operator: op}
		} else if s := c.auth.session(r); s != nil {
			if crossSite(r) {
				writeError(w, http.StatusForbidden, "csrf", "a request from another site may not change anything here")
				return
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead && !c.csrfOK(r, s) {
				writeError(w, http.StatusForbidden, "csrf", "missing or wrong CSRF token: reload the page and try again")
				return
			}
			p = &principal{operator: s.operator, session: s}
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="actoviq console"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "sign in: send Authorization: Bearer TOKEN, or log in at /login")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, p)))
	}
}

// crossSite reports a state change a browser says comes from another site
// (Sec-Fetch-Site, or an Origin that is not this host). It is refused
// whatever it carries: defence in depth beside SameSite and the CSRF token.
func crossSite(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		return err != nil || u.Host != r.Host
	}
	return false
}

// csrfOK compares the request's CSRF token (header, or form field for
// plain forms) with the session's in constant time.
func (c *Console) csrfOK(r *http.Request, s *session) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		got = r.PostFormValue(csrfField)
	}
	if got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.csrf))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// page wraps a page handler: without a session the browser goes to the
// login page; a state change needs the CSRF token.
func (c *Console) page(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.auth.session(r)
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if crossSite(r) || r.Method != http.MethodGet && r.Method != http.MethodHead && !c.csrfOK(r, s) {
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, &principal{operator: s.operator, session: s})))
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login.html", c.loginData(safeNext(r.URL.Query().Get("next")), "", ""))
}

// loginData is what the sign-in page shows: where to go next, the name
// typed (when the page asks for one), an error, and how the page asks for
// the operator's name (nameMode: a name field, or none when every token
// names its person).
func (c *Console) loginData(next, name, msg string) map[string]any {
	d := map[string]any{"Next": next, "NameMode": c.auth.nameMode()}
	if name != "" {
		d["Name"] = name
	}
	if msg != "" {
		d["Error"] = msg
	}
	return d
}

// login checks the token and starts a session. The token may come from the
// login URL's fragment (filled in by the page's script) or be typed.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	next := safeNext(r.PostFormValue("next"))
	if crossSite(r) {
		// Login CSRF: another site must not sign a browser in.
		http.Error(w, "a sign-in from another site is refused", http.StatusForbidden)
		return
	}
	op, ok := c.auth.checkToken(strings.TrimSpace(r.PostFormValue("token")))
	if !ok {
		if lim, wait := c.auth.fail(r); lim {
			retryAfter(w, wait)
			c.render(w, r, http.StatusTooManyRequests, "login.html", c.loginData(next, r.PostFormValue("name"),
				"That token is not valid for this console, and too many failed sign-ins came from this address. Wait a minute before trying another; a valid token is accepted at any time."))
			return
		}
		c.render(w, r, http.StatusUnauthorized, "login.html", c.loginData(next, r.PostFormValue("name"),
			"That token is not valid for this console."))
		return
	}
	if op == "" {
		op = strings.TrimSpace(r.PostFormValue("name"))
		if err := checkOperator(op); err != nil {
			msg := "Your name is recorded with every decision you make: " + err.Error() + "."
			if c.auth.nameMode() == nameIfUnbound {
				msg = "This token is not bound to a name, so the name you type is recorded with every decision you make: " + err.Error() + "."
			}
			c.render(w, r, http.StatusBadRequest, "login.html", c.loginData(next, "", msg))
			return
		}
	}
	// A token bound to a name signs in as that name; a name typed beside
	// it is not used (the page names the person signed in).
	// A sign-in ends the session this browser held before (another
	// operator's, or its own): one browser, one session.
	c.auth.endSession(r)
	id, _, err := c.auth.newSession(op)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(c.cfg.SessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	c.auth.endSession(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site: it accepts only the
// pages the console routes (/, /runs, /runs/{id}, with a query), written
// as a path with no control character, space or backslash anywhere, and
// answers "/" for anything else. Browsers drop tabs and newlines from a
// URL and read a backslash as a slash, so "/<TAB>/host" would be
// "//host", another site.
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || strings.IndexFunc(next, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r)
	}) >= 0 {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.User != nil || u.Host != "" || u.Opaque != "" || u.Fragment != "" || strings.HasPrefix(next, "//") {
		return "/"
	}
	p := u.Path
	switch {
	case p == "/", p == "/runs":
	case strings.HasPrefix(p, "/runs/") && len(p) > len("/runs/") && !strings.Contains(p[len("/runs/"):], "/"):
	default:
		return "/"
	}
	out := (&url.URL{Path: p, RawPath: u.RawPath, RawQuery: u.RawQuery}).RequestURI()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return "/"
	}
	return out
}
