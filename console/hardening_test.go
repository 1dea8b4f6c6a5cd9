package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// proxy is a real reverse proxy in front of the console: every request the
// console sees comes from the proxy's address, as behind the TLS proxy the
// docs/console.md recommends.
func (f *fixture) proxy() *httptest.Server {
	f.t.Helper()
	target, _ := url.Parse(f.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = f.srv.Client().Transport
	p := httptest.NewServer(rp)
	f.t.Cleanup(p.Close)
	return p
}

// signIn posts the login form to base with a cookie-holding client that
// does not follow redirects.
func signIn(t *testing.T, base string, c *http.Client, token, name string) *http.Response {
	t.Helper()
	res, err := c.PostForm(base+"/login", url.Values{"token": {token}, "name": {name}, "next": {"/runs"}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func noRedirect(c http.Client) *http.Client {
	jar, _ := cookiejar.New(nil)
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func get(t *testing.T, c *http.Client, u, bearer string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header
}

// TestValidTokenNeverLockedOut is the probe's first finding, replayed with
// real clients through a real reverse proxy: an attacker sends many bad
// tokens (bearer and login form) from the address every client shares;
// then an operator with the right token signs in and calls the API at
// once (the clock does not move). The attacker's further guesses get 429
// with Retry-After.
func TestValidTokenNeverLockedOut(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	px := f.proxy()
	attacker := noRedirect(*px.Client())
	// Bearer and login failures share one count per address; the first
	// five are answered 401, every later one 429 with Retry-After.
	want := func(n int) int {
		if n > 5 {
			return http.StatusTooManyRequests
		}
		return http.StatusUnauthorized
	}
	for n := 1; n <= 24; n += 2 {
		st, hdr := get(t, attacker, px.URL+"/api/v1/runs", "wrong-token-0123456789")
		if st != want(n) {
			t.Fatalf("bad bearer token (failure %d) through the proxy: %d, want %d", n, st, want(n))
		}
		if st == http.StatusTooManyRequests && hdr.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		if res := signIn(t, px.URL, attacker, "wrong-token-0123456789", "mallory"); res.StatusCode != want(n+1) {
			t.Fatalf("bad login (failure %d) through the proxy: %d, want %d", n+1, res.StatusCode, want(n+1))
		}
	}

	// The operator, behind the same proxy (same client address as seen by
	// the console), with the right token.
	op := noRedirect(*px.Client())
	if st, _ := get(t, op, px.URL+"/api/v1/runs/run-1", tokenAnon); st != http.StatusOK {
		t.Fatalf("the right bearer token after 24 failures from its address: %d", st)
	}
	res := signIn(t, px.URL, op, tokenAnon, "bob")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs" {
		t.Fatalf("the right token at /login after 24 failures from its address: %d %v", res.StatusCode, res.Header)
	}
	if st, _ := get(t, op, px.URL+"/api/v1/runs/run-1", ""); st != http.StatusOK {
		t.Fatalf("the session after signing in: %d", st)
	}
	// Without the proxy, the same holds for a client's own address.
	direct := noRedirect(*f.srv.Client())
	for i := 0; i < 8; i++ {
		get(t, direct, f.srv.URL+"/api/v1/runs", "wrong-token-0123456789")
	}
	if st, _ := get(t, direct, f.srv.URL+"/api/v1/runs", tokenAlice); st != http.StatusOK {
		t.Fatalf("the right token directly after 8 failures: %d", st)
	}
	if st, _ := get(t, direct, f.srv.URL+"/api/v1/runs", "wrong-token-0123456789"); st != http.StatusTooManyRequests {
		t.Fatalf("a bad token after a good one is still throttled: %d, want 429 (a success must not reset the count)", st)
	}
}

// TestHostHeaderChecked: a DNS rebinding page sends its own name as Host;
// the console refuses every name it does not serve, before any handler
// (the login page, the API with a valid token, the static files).
func TestHostHeaderChecked(t *testing.T) {
	t.Parallel()
	f := setup(t, &setupOpts{cfg: func(c *console.Config) { c.Hosts = []string{"Console.Example.com"} }})
	c := f.srv.Client()
	do := func(host, path, bearer string) (int, string) {
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		req.Host = host
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, path := range []string{"/login", "/static/console.js"} {
		for _, host := range []string{"evil.example:18080", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example"} {
			if st, body := do(host, path, ""); st != http.StatusMisdirectedRequest || !strings.Contains(body, "Config.Hosts") {
				t.Errorf("GET %s with Host %s: %d %q, want 421", path, host, st, body)
			}
		}
	}
	if st, _ := do("evil.example:18080", "/api/v1/runs", tokenAnon); st != http.StatusMisdirectedRequest {
		t.Errorf("API with a valid token for another host: %d, want 421", st)
	}
	for _, host := range []string{"127.0.0.1:18080", "127.0.0.1", "[::1]:8080", "localhost:8080", "LOCALHOST", "app.localhost:1",
		"console.example.com", "console.example.com:443", "CONSOLE.example.com."} {
		if st, body := do(host, "/login", ""); st != http.StatusOK {
			t.Errorf("GET /login with Host %s: %d %q, want 200", host, st, body)
		}
	}
	if _, err := console.New(f.rt, &console.Config{Tokens: []console.Token{{Secret: tokenAnon}}, Hosts: []string{"https://x.example/"}}); err == nil || !strings.Contains(err.Error(), "Config.Hosts[0]") {
		t.Errorf("a URL in Hosts: %v", err)
	}
}

// TestNextStaysOnConsole: the post-login redirect goes only to a page the
// console routes; a control character, a space or a backslash anywhere
// (browsers drop the first and read the last as a slash) sends it home.
func TestNextStaysOnConsole(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cases := map[string]string{
		"/\t/127.0.0.1:9999/x":           "/",
		"/\n/127.0.0.1:9999/x":           "/",
		"/\r/evil.example":               "/",
		"/\x00/evil.example":             "/",
		"/\x7f/evil.example":             "/",
		"/ /evil.example":                "/",
		"/\u00a0/evil.example":           "/",
		"/\u2028/evil.example":           "/",
		"/\\evil.example":                "/",
		"/runs/\\\\evil.example":         "/",
		"//evil.example":                 "/",
		"https://evil.example/runs":      "/",
		"/%09/127.0.0.1:9999/x":          "/",
		"/runs/%2F%2Fevil.example":       "/",
		"/api/v1/runs":                   "/",
		"/static/console.js":             "/",
		"/runs/a/b":                      "/",
		"/runs/":                         "/",
		"runs":                           "/",
		"/runs/run-1#x":                  "/",
		"":                               "/",
		"/":                              "/",
		"/runs":                          "/runs",
		"/runs?status=interrupted&q=pay": "/runs?status=interrupted&q=pay",
		"/runs/run-1":                    "/runs/run-1",
		"/runs/run%201":                  "/runs/run%201",
		"/?kind=approval":                "/?kind=approval",
	}
	for next, want := range cases {
		c := noRedirect(*f.srv.Client())
		res, err := c.PostForm(f.srv.URL+"/login", url.Values{"token": {tokenAnon}, "name": {"bob"}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("next %q: %d Location %q, want %q", next, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
	page := f.call("GET", "/login?next="+url.QueryEscape("/\t/127.0.0.1:9999/x"), "", "")
	if !strings.Contains(string(page.body), `name="next" value="/"`) {
		t.Errorf("the login page keeps a next with a tab: %s", page.body)
	}
}

// TestStaticDoesNotList: /static/ serves its files and lists nothing.
func TestStaticDoesNotList(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, path := range []string{"/static/", "/static/./", "/static/nope.js"} {
		r := f.call("GET", path, "", "")
		if r.status != http.StatusNotFound || strings.Contains(string(r.body), "console.js") {
			t.Errorf("GET %s: %d %q, want 404 without a listing", path, r.status, r.body)
		}
	}
	if r := f.call("GET", "/static/console.js", "", ""); r.status != http.StatusOK {
		t.Errorf("GET /static/console.js: %d", r.status)
	}
}

// TestSignInEndsOlderSession: signing in again in a browser ends the
// session its cookie held; the old session id no longer works anywhere.
func TestSignInEndsOlderSession(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	c := noRedirect(*f.srv.Client())
	u, _ := url.Parse(f.srv.URL)
	cookie := func() string {
		for _, ck := range c.Jar.Cookies(u) {
			if ck.Name == "actoviq_console" {
				return ck.Value
			}
		}
		return ""
	}
	if res := signIn(t, f.srv.URL, c, tokenAnon, "bob"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", res.StatusCode)
	}
	first := cookie()
	if res := signIn(t, f.srv.URL, c, tokenAlice, ""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", res.StatusCode)
	}
	second := cookie()
	if first == "" || second == "" || first == second {
		t.Fatalf("session ids %q then %q", first, second)
	}
	withCookie := func(id string) int {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/runs/run-1", nil)
		req.AddCookie(&http.Cookie{Name: "actoviq_console", Value: id})
		res, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := withCookie(first); st != http.StatusUnauthorized {
		t.Errorf("the older session after a new sign-in: %d, want 401", st)
	}
	if st := withCookie(second); st != http.StatusOK {
		t.Errorf("the new session: %d", st)
	}
}

type connectArgs struct {
	Host       string `json:"host"`
	Passphrase string `json:"passphrase"`
	Pwd        string `json:"pwd"`
	PIN        string `json:"pin"`
	Cmd        string `json:"cmd"`
	DSN        string `json:"dsn"`
	Key        string `json:"key"`
}

// TestSecretsInStringsNeverStored is the probe's third finding: a run whose
// tool arguments carry secrets under passphrase, pwd and pin, a
// "password=…" inside a string, a connection string with a password and a
// PEM private key. The tool receives them all; none of them is in the
// SQLite files on disk (checkpoint, ledger, events) nor in the console's
// JSON. A user's own message text is stored as written, as documented.
func TestSecretsInStringsNeverStored(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	secrets := []string{"horse-battery-77", "pw-4411", "8642", "hunter2-zz", "pgpass-99", "MIIEsecretkeybody"}
	args := connectArgs{Host: "db.internal", Passphrase: "horse-battery-77", Pwd: "pw-4411", PIN: "8642",
		Cmd: "psql --host db.internal password=hunter2-zz", DSN: "postgres://app:pgpass-99@db.internal/x",
		Key: "-----BEGIN OPENSSH PRIVATE KEY-----\nMIIEsecretkeybody\n-----END OPENSSH PRIVATE KEY-----\n"}
	raw, _ := json.Marshal(args)
	var mu sync.Mutex
	var got connectArgs
	connect := tool.Func(tool.Spec{Name: "connect", Description: "Connect to a database", Effect: tool.Read},
		func(ctx context.Context, a connectArgs) (string, error) {
			mu.Lock()
			got = a
			mu.Unlock()
			return "connected to " + a.Host, nil
		})
	agent := &actoviq.AgentSpec{ID: "dba", Model: "scripted", Tools: []tool.Tool{connect}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "connect", Arguments: raw}}},
		scripted.Turn{Text: "Connected."},
	)}
	res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-s",
		Items: []item.Item{item.UserText("connect to the db; note: my-own-words=typed-by-the-user")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	mu.Lock()
	if got != args {
		t.Errorf("the tool received %+v, want the unredacted arguments", got)
	}
	mu.Unlock()

	var disk []byte
	for _, p := range []string{f.dbPath, f.dbPath + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		disk = append(disk, b...)
	}
	r := f.call("GET", "/api/v1/runs/run-s", tokenAnon, "")
	if r.status != http.StatusOK {
		t.Fatalf("console: %d %s", r.status, r.body)
	}
	for _, s := range secrets {
		if bytes.Contains(disk, []byte(s)) {
			t.Errorf("%q is in the SQLite files on disk", s)
		}
		if bytes.Contains(r.body, []byte(s)) {
			t.Errorf("%q is in the console's JSON", s)
		}
	}
	for _, want := range []string{"password=[REDACTED]", "postgres://app:[REDACTED]@db.internal/x", "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]", "db.internal"} {
		if !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("the console's JSON lacks %q (what is not secret stays readable)", want)
		}
	}
	// Documented: the user's own text is not redacted.
	if !bytes.Contains(r.body, []byte("my-own-words=typed-by-the-user")) {
		t.Errorf("the user's message text was changed; docs/data-hygiene.md says it is stored as written")
	}
}
