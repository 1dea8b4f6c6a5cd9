package mcptool_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// oauthPeer is an MCP server behind the MCP authorization flow, and its
// authorization server, on one httptest server: protected-resource
// metadata (RFC 9728), authorization-server metadata (RFC 8414), dynamic
// client registration (RFC 7591), an authorization endpoint that redirects
// at once (the person consents), and a token endpoint that checks PKCE and
// the client, and refreshes. Tokens are random-looking strings so that a
// leak is easy to find.
type oauthPeer struct {
	t  *testing.T
	ts *httptest.Server

	mu         sync.Mutex
	clients    map[string]string // client id -> secret ("" public)
	codes      map[string]codeGrant
	tokens     map[string][]string // access token -> scopes
	refresh    map[string][]string // refresh token -> scopes
	n          int
	registered int
	authorized int
	refreshed  int
	ccGrants   int
	needScope  string // a scope tools/call needs beyond "tools"
	ran        []string
	seenAuth   []string // Authorization headers of MCP requests
	jwtKey     *ecdsa.PublicKey
}

// verifyES256 checks a client assertion: ES256 signature, iss = sub =
// client, aud = the issuer, not expired.
func verifyES256(pub *ecdsa.PublicKey, jwt, client, issuer string) bool {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return false
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	var h struct{ Alg string }
	var c struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil || h.Alg != "ES256" || len(sig) != 64 {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(pub, sum[:], r, s) && c.Iss == client && c.Sub == client && c.Aud == issuer && c.Exp > time.Now().Unix()
}

type codeGrant struct {
	clientID, challenge, redirect string
	scopes                        []string
}

func newOAuthPeer(t *testing.T) *oauthPeer {
	t.Helper()
	p := &oauthPeer{t: t, clients: map[string]string{"pre-client": "pre-secret-5b1e0c77"}, codes: map[string]codeGrant{},
		tokens: map[string][]string{}, refresh: map[string][]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	srv.AddTool(annotated("open", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		key, _ := req.Params.Meta[mcptool.MetaIdempotencyKey].(string)
		p.mu.Lock()
		p.ran = append(p.ran, key)
		p.mu.Unlock()
		// A careless server echoes what it received.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened; you sent " + req.Extra.Header.Get("Authorization")}}}, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": p.ts.URL + "/mcp", "authorization_servers": []string{p.ts.URL},
			"scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": p.ts.URL, "authorization_endpoint": p.ts.URL + "/authorize",
			"token_endpoint": p.ts.URL + "/token", "registration_endpoint": p.ts.URL + "/register",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var md struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		_ = json.NewDecoder(r.Body).Decode(&md)
		p.mu.Lock()
		p.n++
		p.registered++
		id := fmt.Sprintf("dyn-client-%d", p.n)
		p.clients[id] = ""
		p.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.clients[q.Get("client_id")]; !ok || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("response_type") != "code" || q.Get("resource") != p.ts.URL+"/mcp" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		p.n++
		p.authorized++
		code := fmt.Sprintf("code-%d", p.n)
		p.codes[code] = codeGrant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			scopes: strings.Fields(q.Get("scope"))}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", p.token)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		p.mu.Lock()
		p.seenAuth = append(p.seenAuth, h)
		scopes, ok := p.tokens[strings.TrimPrefix(h, "Bearer ")]
		need := p.needScope
		p.mu.Unlock()
		rm := `resource_metadata="` + p.ts.URL + `/.well-known/oauth-protected-resource/mcp"`
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer `+rm+`, scope="tools"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if need != "" && !slices.Contains(scopes, need) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", `+rm+`, scope="tools `+need+`"`)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	p.ts = httptest.NewServer(mux)
	t.Cleanup(func() {
		p.ts.Close()
		// Sessions whose DELETE was refused (a revoked token) are still
		// open on the server.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return p
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (p *oauthPeer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	issue := func(scopes []string, withRefresh bool) {
		p.n++
		at := fmt.Sprintf("at-%d-9f3c2a71e4", p.n)
		p.tokens[at] = scopes
		out := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "scope": strings.Join(scopes, " ")}
		if withRefresh {
			rt := fmt.Sprintf("rt-%d-0d7e5b9a13", p.n)
			p.refresh[rt] = scopes
			out["refresh_token"] = rt
		}
		writeJSON(w, out)
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		client := r.PostForm.Get("client_id")
		if id, secret, basic := r.BasicAuth(); basic {
			client = id
			if p.clients[id] != secret {
				fail("invalid_client")
				return
			}
		} else if p.clients[client] != "" {
			fail("invalid_client") // a confidential client must authenticate
			return
		}
		if !ok || g.clientID != client || g.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			fail("invalid_grant")
			return
		}
		issue(g.scopes, true)
	case "refresh_token":
		scopes, ok := p.refresh[r.PostForm.Get("refresh_token")]
		if !ok {
			fail("invalid_grant")
			return
		}
		delete(p.refresh, r.PostForm.Get("refresh_token"))
		p.refreshed++
		issue(scopes, true)
	case "client_credentials":
		if a := r.PostForm.Get("client_assertion"); a != "" {
			if r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || p.jwtKey == nil ||
				!verifyES256(p.jwtKey, a, r.PostForm.Get("client_id"), p.ts.URL) {
				w.WriteHeader(http.StatusUnauthorized)
				writeJSON(w, map[string]string{"error": "invalid_client"})
				return
			}
			p.ccGrants++
			issue([]string{"tools"}, false)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok || p.clients[id] != secret || secret == "" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		p.ccGrants++
		issue([]string{"tools"}, false)
	default:
		fail("unsupported_grant_type")
	}
}

// revokeAll forgets every access token, as a server does when a session is
// revoked.
func (p *oauthPeer) revokeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = map[string][]string{}
	p.refresh = map[string][]string{}
}

func (p *oauthPeer) counts() (registered, authorized, refreshed int, ran []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registered, p.authorized, p.refreshed, slices.Clone(p.ran)
}

// browser plays the person at the browser: it opens the URL and follows
// the redirect back to the Source's loopback listener.
type browser struct {
	mu     sync.Mutex
	opened []string
}

func (b *browser) open(ctx context.Context, server, authURL string) error {
	b.mu.Lock()
	b.opened = append(b.opened, server+" "+authURL)
	b.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Signed in to "+server) {
		return fmt.Errorf("callback page: %s %s", resp.Status, body)
	}
	return nil
}

func (b *browser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opened)
}

func loginHint(s string) string { return "run `actoviq mcp login " + s + "`" }

// leaks fails the test when s contains any token or secret the peer
// issued or knows.
func (p *oauthPeer) leaks(t *testing.T, what, s string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, needle := range []string{"9f3c2a71e4", "0d7e5b9a13", "pre-secret-5b1e0c77"} {
		if strings.Contains(s, needle) {
			t.Fatalf("%s leaks a token or secret (%s): %s", what, needle, s)
		}
	}
}

// TestOAuthSignInStoreRefresh: a server behind MCP authorization. Login
// discovers the authorization server, registers this client dynamically,
// runs the authorization code flow with PKCE through the loopback listener
// and stores the token in a 0600 file. A second Source (another process)
// uses the stored token without any sign-in, and refreshes an expired one
// with the stored refresh token, storing the new one.
func TestOAuthSignInStoreRefresh(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	file := filepath.Join(t.TempDir(), "cfg", "actoviq", "mcp-tokens.json")
	cfg := map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp"}}
	b := &browser{}
	src := newSource(t, cfg, &mcptool.Options{OAuth: &mcptool.OAuthOptions{Tokens: mcptool.NewFileTokenStore(file), OpenURL: b.open}})
	if st, _ := src.AuthStatus(context.Background(), "tickets"); st.Kind != "oauth" || st.SignedIn {
		t.Fatalf("before login: %+v", st)
	}
	st, err := src.Login(context.Background(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	if !st.SignedIn || !st.Refreshable || st.Expiry.IsZero() || !slices.Equal(st.Scopes, []string{"tools"}) {
		t.Fatalf("after login: %+v", st)
	}
	if reg, auth, _, _ := p.counts(); reg != 1 || auth != 1 || b.count() != 1 {
		t.Fatalf("registered %d, authorized %d, browser opened %d: want 1 each", reg, auth, b.count())
	}
	if u := b.opened[0]; !strings.Contains(u, "redirect_uri=http%3A%2F%2F127.0.0.1%3A") || !strings.Contains(u, "code_challenge_method=S256") {
		t.Fatalf("authorization URL %s", u)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(file)); di.Mode().Perm() != 0o700 {
		t.Fatalf("token dir mode %v, want 0700", di.Mode().Perm())
	}
	// Login again: already authorized, nothing asked.
	if _, err := src.Login(context.Background(), "tickets"); err != nil || b.count() != 1 {
		t.Fatalf("second login: %v, browser opened %d times", err, b.count())
	}
	ts, err := src.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	// The server echoed the bearer token: it is scrubbed from the result.
	if !strings.HasPrefix(res.Content, "opened; you sent ") || !strings.Contains(res.Content, "[REDACTED]") {
		t.Fatalf("result %q", res.Content)
	}
	p.leaks(t, "result", res.Content)

	// Another process: the stored token, no sign-in possible.
	src2 := newSource(t, cfg, &mcptool.Options{OAuth: &mcptool.OAuthOptions{Tokens: mcptool.NewFileTokenStore(file), LoginHint: loginHint}})
	ts2, err := src2.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatalf("with the stored token: %v", err)
	}
	if _, err := ts2[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c2"), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}

	// The stored access token expires: the next process refreshes it and
	// stores the new one.
	store := mcptool.NewFileTokenStore(file)
	tok, err := store.Load(context.Background(), "tickets")
	if err != nil || tok == nil {
		t.Fatalf("load: %v %v", tok, err)
	}
	old := tok.AccessToken
	tok.Expiry = time.Now().Add(-time.Minute)
	if err := store.Save(context.Background(), "tickets", tok); err != nil {
		t.Fatal(err)
	}
	src3 := newSource(t, cfg, &mcptool.Options{OAuth: &mcptool.OAuthOptions{Tokens: store, LoginHint: loginHint}})
	ts3, err := src3.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatalf("with an expired token and a refresh token: %v", err)
	}
	if _, err := ts3[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c3"), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	_, _, refreshed, ran := p.counts()
	if refreshed != 1 {
		t.Fatalf("refreshed %d times, want 1", refreshed)
	}
	if got := strings.Join(ran, " "); got != "r1:c1 r1:c2 r1:c3" {
		t.Fatalf("tool ran for %q", got)
	}
	tok2, _ := store.Load(context.Background(), "tickets")
	if tok2.AccessToken == old || !tok2.Expiry.After(time.Now()) {
		t.Fatalf("the refreshed token was not stored: %v", tok2)
	}
	// Nothing of the token shows in its string forms.
	for _, s := range []string{tok2.String(), fmt.Sprintf("%v %+v %#v", tok2, *tok2, tok2)} {
		p.leaks(t, "Token's string form", s)
	}

	// Logout forgets it: the next process must sign in again.
	if err := src3.Logout(context.Background(), "tickets"); err != nil {
		t.Fatal(err)
	}
	if st, _ := src3.AuthStatus(context.Background(), "tickets"); st.SignedIn {
		t.Fatalf("after logout: %+v", st)
	}
	b4, _ := os.ReadFile(file)
	p.leaks(t, "token file after logout", string(b4))
}

// TestOAuthHeadlessSaysWhatToDo: a process that cannot ask a person gets an
// *AuthError that names the server and the next command, never a bare
// "Unauthorized"; nothing is registered at the authorization server.
func TestOAuthHeadlessSaysWhatToDo(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	src := newSource(t, map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp"}},
		&mcptool.Options{OAuth: &mcptool.OAuthOptions{LoginHint: loginHint}})
	_, err := src.Tools(context.Background())
	var ae *mcptool.AuthError
	if !errors.As(err, &ae) || !errors.Is(err, mcptool.ErrAuthRequired) || ae.Server != "tickets" {
		t.Fatalf("discovery without a token: %v", err)
	}
	if !strings.Contains(err.Error(), "server tickets needs authorization") || !strings.HasSuffix(err.Error(), "run `actoviq mcp login tickets`") {
		t.Fatalf("message %q", err)
	}
	if reg, auth, _, _ := p.counts(); reg != 0 || auth != 0 {
		t.Fatalf("registered %d, authorized %d: a headless process asked the authorization server", reg, auth)
	}
	// Without options the hint names the library call.
	src2 := newSource(t, map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp"}}, nil)
	if _, err := src2.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "Source.Login") {
		t.Fatalf("default hint: %v", err)
	}
}

// TestOAuthRefusedCallDidNotRun: a token revoked between discovery and a
// side-effect call. The tools/call is answered 401, no one can sign in, so
// the call fails with an AuthError whose outcome is known: the tool did not
// run, and the runtime gives the model an error result instead of a
// reconciliation. No token reaches an event, the run result or an error.
func TestOAuthRefusedCallDidNotRun(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	store := &mcptool.MemoryTokenStore{}
	b := &browser{}
	cfg := map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp"}}
	login := newSource(t, cfg, &mcptool.Options{OAuth: &mcptool.OAuthOptions{Tokens: store, OpenURL: b.open}})
	if _, err := login.Login(context.Background(), "tickets"); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, cfg, &mcptool.Options{OAuth: &mcptool.OAuthOptions{Tokens: store, LoginHint: loginHint}})
	tools, err := src.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.revokeAll()
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	var events []string
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		mu.Lock()
		events = append(events, string(ev.Data))
		mu.Unlock()
	})
	agent := &actoviq.AgentSpec{ID: "ticketer", Model: "scripted-1", Tools: tools, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "tickets__open", `{}`)}},
		scripted.Turn{Text: "could not open it"})}
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("open a ticket")}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusCompleted || len(res.Interruptions) != 0 {
		t.Fatalf("a refused call must not need reconciliation: %+v", res)
	}
	info, err := rt.Get(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	var got *item.ToolResult
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			got = it.ToolResult
		}
	}
	if got == nil || !got.IsError || !strings.Contains(got.Content, "needs authorization") || !strings.Contains(got.Content, "actoviq mcp login tickets") {
		t.Fatalf("tool result %+v", got)
	}
	if _, _, _, ran := p.counts(); len(ran) != 0 {
		t.Fatalf("the tool ran: %q", ran)
	}
	// Directly, the error is known-outcome.
	_, err = tools[0].Call(tool.WithIdempotencyKey(context.Background(), "r2:c1"), json.RawMessage(`{}`))
	if !errors.Is(err, mcptool.ErrAuthRequired) || errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("refused call: %v", err)
	}
	p.leaks(t, "error", err.Error())
	b2, _ := json.Marshal(res)
	p.leaks(t, "run result", string(b2))
	b3, _ := json.Marshal(info)
	p.leaks(t, "run info", string(b3))
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range events {
		p.leaks(t, "event", ev)
	}
}

// TestOAuthPreRegisteredStepUp: a pre-registered confidential client (id
// from the config, secret from the environment) signs in without dynamic
// registration; when a call needs a scope the token lacks (403
// insufficient_scope), the client signs in again asking for the union of
// scopes, and the call is sent again once: the first POST was refused, so
// the tool ran once.
func TestOAuthPreRegisteredStepUp(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	b := &browser{}
	src := newSource(t, map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp",
		OAuth: &mcptool.OAuthConfig{ClientID: "pre-client", ClientSecret: "${TICKETS_SECRET}"}}},
		&mcptool.Options{LookupEnv: func(string) (string, bool) { return "pre-secret-5b1e0c77", true },
			OAuth: &mcptool.OAuthOptions{OpenURL: b.open}})
	ts, err := src.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.needScope = "admin"
	p.mu.Unlock()
	if _, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	reg, auth, _, ran := p.counts()
	if reg != 0 || auth != 2 || b.count() != 2 {
		t.Fatalf("registered %d, authorized %d, browser %d: want 0, 2, 2", reg, auth, b.count())
	}
	u, err := url.Parse(strings.TrimPrefix(b.opened[1], "tickets "))
	if err != nil {
		t.Fatal(err)
	}
	scopes := strings.Fields(u.Query().Get("scope"))
	slices.Sort(scopes)
	if !slices.Equal(scopes, []string{"admin", "tools"}) || u.Query().Get("client_id") != "pre-client" {
		t.Fatalf("step-up authorization URL %s", b.opened[1])
	}
	if strings.Join(ran, " ") != "r1:c1" {
		t.Fatalf("tool ran %q", ran)
	}
}

// TestOAuthClientCredentials: a headless worker with a client id and
// secret gets its token with the client credentials grant, asking no one.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	src := newSource(t, map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp",
		OAuth: &mcptool.OAuthConfig{Grant: mcptool.GrantClientCredentials, ClientID: "pre-client", ClientSecret: "pre-secret-5b1e0c77"}}}, nil)
	if st, _ := src.AuthStatus(context.Background(), "tickets"); st.Kind != mcptool.GrantClientCredentials {
		t.Fatalf("state %+v", st)
	}
	ts, err := src.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	p.leaks(t, "result", res.Content)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ccGrants != 1 || p.registered != 0 || p.authorized != 0 {
		t.Fatalf("client credentials grants %d, registrations %d, authorizations %d", p.ccGrants, p.registered, p.authorized)
	}
}

// TestOAuthWrongClientSecret: a rejected client credentials grant is an
// AuthError without the secret in it.
func TestOAuthWrongClientSecret(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	src := newSource(t, map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp",
		OAuth: &mcptool.OAuthConfig{Grant: mcptool.GrantClientCredentials, ClientID: "pre-client", ClientSecret: "wrong-secret-77aa01"}}}, nil)
	_, err := src.Tools(context.Background())
	if !errors.Is(err, mcptool.ErrAuthRequired) || strings.Contains(err.Error(), "wrong-secret-77aa01") {
		t.Fatalf("wrong secret: %v", err)
	}
}

// TestOAuthClientCredentialsJWT: a worker authenticates with a signed JWT
// (private_key_jwt) whose key comes from the environment; the key never
// shows in an error.
func TestOAuthClientCredentialsJWT(t *testing.T) {
	t.Parallel()
	p := newOAuthPeer(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	p.mu.Lock()
	p.jwtKey = &key.PublicKey
	p.mu.Unlock()
	cfg := map[string]*mcptool.ServerConfig{"tickets": {URL: p.ts.URL + "/mcp",
		OAuth: &mcptool.OAuthConfig{Grant: mcptool.GrantClientCredentials, ClientID: "jwt-client", PrivateKey: "${KEY}"}}}
	src := newSource(t, cfg, &mcptool.Options{LookupEnv: func(string) (string, bool) { return pemKey, true }})
	ts, err := src.ServerTools(context.Background(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts[0].Call(tool.WithIdempotencyKey(context.Background(), "r1:c1"), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	grants := p.ccGrants
	p.mu.Unlock()
	if grants != 1 {
		t.Fatalf("%d client credentials grants, want 1", grants)
	}
	// The wrong key: refused, and the error shows nothing of the key.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der2, _ := x509.MarshalPKCS8PrivateKey(other)
	pem2 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der2}))
	src2 := newSource(t, cfg, &mcptool.Options{LookupEnv: func(string) (string, bool) { return pem2, true }})
	_, err = src2.Tools(context.Background())
	if !errors.Is(err, mcptool.ErrAuthRequired) || strings.Contains(err.Error(), "PRIVATE KEY") || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("wrong key: %v", err)
	}
	// A key that is not PEM is a configuration error naming the field.
	_, err = mcptool.New(&mcptool.Config{Servers: cfg}, &mcptool.Options{LookupEnv: func(string) (string, bool) { return "not a key", true }})
	var ce *mcptool.ConfigError
	if !errors.As(err, &ce) || ce.Field != "oauth.privateKey" || strings.Contains(err.Error(), "not a key") {
		t.Fatalf("bad key: %v", err)
	}
}
