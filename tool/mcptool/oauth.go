package mcptool

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth grants a server's "oauth" block can name.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// DefaultLoginTimeout is how long a sign-in waits for the browser's
// redirect when [OAuthOptions.LoginTimeout] is zero.
const DefaultLoginTimeout = 5 * time.Minute

// OAuthConfig is a server's "oauth" block, in the shape other MCP clients
// use:
//
//	"oauth": {"clientId": "actoviq-cli", "clientSecret": "${TICKETS_CLIENT_SECRET}",
//	          "callbackPort": 8765, "scopes": "tickets:read tickets:write"}
//
// Every field is optional. The authorization server is discovered from the
// MCP server (its protected-resource metadata, then the authorization
// server's metadata, with the fallbacks of the MCP specification), and the
// scopes from its WWW-Authenticate challenge or its metadata.
type OAuthConfig struct {
	// ClientID is a client registered with the authorization server
	// beforehand. Empty: the client ID metadata document at
	// ClientMetadataURL when the server supports those, else dynamic
	// client registration.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret goes with ClientID for a confidential client. It may be
	// written "${NAME}" and is a secret like header values.
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is the https URL of a client ID metadata document
	// that describes this client; it is used as the client id where the
	// authorization server supports such documents.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// CallbackPort is the port of the loopback redirect URI
	// http://127.0.0.1:PORT/callback. Zero: a free port, chosen when the
	// Source is created (register a fixed port with a pre-registered
	// client).
	CallbackPort int `json:"callbackPort,omitempty"`
	// Scopes, space-separated, replace the scopes the server asks for.
	Scopes string `json:"scopes,omitempty"`
	// Grant is "authorization_code" (the default: a person signs in in a
	// browser, with PKCE) or "client_credentials" (no person: for workers;
	// needs clientId and clientSecret).
	Grant string `json:"grant,omitempty"`
	// PrivateKey, with "client_credentials", authenticates the client with a
	// signed JWT (private_key_jwt, RFC 7523) instead of a secret: a PEM EC
	// P-256 or RSA private key, usually written "${NAME}". A secret.
	PrivateKey string `json:"privateKey,omitempty"`
	// SigningAlgorithm is the JWT's "alg" for PrivateKey: "ES256" or
	// "RS256". Empty: by the key's type.
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
	// Disabled turns authorization off for the server: a 401 is an error.
	Disabled bool `json:"disabled,omitempty"`
}

func (o *OAuthConfig) validate(bad func(field, format string, args ...any) error, headers map[string]string) error {
	switch o.Grant {
	case "", GrantAuthorizationCode, GrantClientCredentials:
	default:
		return bad("oauth.grant", `unsupported %q: want "authorization_code" or "client_credentials"`, o.Grant)
	}
	if o.Disabled {
		return nil
	}
	for k := range headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return bad("oauth", `the server also has an "Authorization" header: remove the header, or set "disabled": true in "oauth"`)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return bad("oauth.clientSecret", `needs "clientId"`)
	}
	if o.Grant == GrantClientCredentials && (o.ClientID == "" || (o.ClientSecret == "") == (o.PrivateKey == "")) {
		return bad("oauth.grant", `"client_credentials" needs "clientId" and one of "clientSecret" and "privateKey"`)
	}
	if o.PrivateKey != "" && o.Grant != GrantClientCredentials {
		return bad("oauth.privateKey", `only with "grant": "client_credentials"`)
	}
	switch o.SigningAlgorithm {
	case "", "ES256", "RS256":
	default:
		return bad("oauth.signingAlgorithm", `unsupported %q: want "ES256" or "RS256"`, o.SigningAlgorithm)
	}
	if err := checkRefs(o.ClientSecret); err != nil {
		return bad("oauth.clientSecret", "%v", err)
	}
	if err := checkRefs(o.PrivateKey); err != nil {
		return bad("oauth.privateKey", "%v", err)
	}
	if strings.ContainsAny(o.ClientSecret+o.ClientID+o.Scopes, "\r\n") {
		return bad("oauth", "a value contains a line break")
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return bad("oauth.clientMetadataUrl", "must be an https URL with a path")
		}
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		return bad("oauth.callbackPort", "must be a port number (1-65535), or 0 for any free port")
	}
	return nil
}

// OAuthOptions configures MCP authorization for a [Source]. A nil
// *OAuthOptions keeps tokens in memory and never asks a person: a server
// that needs a sign-in fails with an [*AuthError].
type OAuthOptions struct {
	// Tokens keeps the servers' tokens between processes. Nil: a
	// [MemoryTokenStore], so tokens live as long as the Source.
	Tokens TokenStore
	// OpenURL is called when a server needs a person to sign in. It must
	// show authURL to the person (print it, open a browser) and return;
	// the sign-in then waits, up to LoginTimeout, for the browser to come
	// back to a loopback listener on 127.0.0.1 that this package runs. Nil:
	// no sign-in happens; the server's calls fail with an [*AuthError]
	// until its token is in Tokens.
	OpenURL func(ctx context.Context, server, authURL string) error
	// LoginTimeout bounds the wait for the browser's redirect. Zero means
	// [DefaultLoginTimeout].
	LoginTimeout time.Duration
	// LoginHint is the sentence an [*AuthError] ends with, telling a person
	// how to sign in to server. Nil: "sign in with Source.Login" (the
	// actoviq command sets "run `actoviq mcp login NAME`").
	LoginHint func(server string) string
}

// ErrAuthRequired is matched (errors.Is) by an [*AuthError].
var ErrAuthRequired = errors.New("mcptool: authorization required")

// AuthError says that a server needs an authorization this process does
// not have, and what to do. A tools/call that failed with it was refused
// by the server before it ran.
type AuthError struct {
	Server string // the server's name in the configuration
	Reason string // what happened, without any secret
	Hint   string // what to do next
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("mcptool: server %s needs authorization (%s): %s", e.Server, e.Reason, e.Hint)
}

// Is matches [ErrAuthRequired].
func (e *AuthError) Is(target error) bool { return target == ErrAuthRequired }

// oauthHandler is a server's auth.OAuthHandler: the SDK's authorization
// code or client credentials handler, with our token store, loopback
// redirect and errors around it.
type oauthHandler struct {
	sv     *server
	cfg    OAuthConfig // ClientSecret resolved
	opts   OAuthOptions
	tokens TokenStore

	key    crypto.Signer // private_key_jwt, with its alg
	keyAlg string

	mu       sync.Mutex
	inner    auth.OAuthHandler
	port     int
	saveErr  error
	hadToken bool
}

func newOAuthHandler(sv *server, cfg OAuthConfig, opts *OAuthOptions) *oauthHandler {
	h := &oauthHandler{sv: sv, cfg: cfg}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.LoginTimeout <= 0 {
		h.opts.LoginTimeout = DefaultLoginTimeout
	}
	h.tokens = h.opts.Tokens
	if h.tokens == nil {
		h.tokens = &MemoryTokenStore{}
	}
	return h
}

func (h *oauthHandler) hint() string {
	if h.opts.LoginHint != nil {
		return h.opts.LoginHint(h.sv.name)
	}
	return fmt.Sprintf("sign in with Source.Login(ctx, %q) on a Source whose OAuthOptions.OpenURL is set", h.sv.name)
}

func (h *oauthHandler) authError(reason string) *AuthError {
	return &AuthError{Server: h.sv.name, Reason: reason, Hint: h.hint()}
}

// httpClient is the client for the authorization server: the Source's,
// without the MCP server's configured headers.
func (h *oauthHandler) httpClient() *http.Client { return h.sv.src.opts.HTTPClient }

// get builds the SDK handler on first use, with the stored token.
func (h *oauthHandler) get(ctx context.Context) (auth.OAuthHandler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inner != nil {
		return h.inner, nil
	}
	hc := h.httpClient()
	if h.cfg.Grant == GrantClientCredentials && h.key != nil {
		var scopes []string
		if f := strings.Fields(h.cfg.Scopes); len(f) > 0 {
			scopes = f
		}
		h.inner = &jwtClientCredentials{clientID: h.cfg.ClientID, key: h.key, alg: h.keyAlg, scopes: scopes, client: hc, scrub: h.sv.scrub}
		return h.inner, nil
	}
	if h.cfg.Grant == GrantClientCredentials {
		in, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: h.cfg.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: h.cfg.ClientSecret}},
			HTTPClient:  hc,
		})
		if err != nil {
			return nil, h.sv.errorf("oauth: %w", err)
		}
		h.inner = &scrubbingTokens{OAuthHandler: in, scrub: h.sv.scrub}
		return h.inner, nil
	}
	var initial oauth2.TokenSource
	t, err := h.tokens.Load(ctx, h.sv.name)
	if err != nil {
		return nil, h.sv.errorf("oauth: load token: %w", err)
	}
	if t != nil && t.ServerURL == h.sv.cfg.URL && t.AccessToken != "" {
		h.hadToken = true
		h.sv.scrub.Add(t.secrets()...)
		cfg := &oauth2.Config{ClientID: t.ClientID, ClientSecret: t.ClientSecret, Scopes: slices.Clone(t.Scopes),
			Endpoint: oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyle(t.AuthStyle)}}
		tok := &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
		initial = h.persisting(context.WithValue(context.Background(), oauth2.HTTPClient, hc), cfg, tok, false)
	}
	port := h.cfg.CallbackPort
	if port == 0 && h.opts.OpenURL != nil {
		if port, err = freePort(); err != nil {
			return nil, h.sv.errorf("oauth: choose a port for the sign-in redirect: %w (set oauth.callbackPort)", err)
		}
	}
	h.port = port
	redirect := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	conf := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetchCode,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:  []string{redirect},
			ClientName:    h.sv.src.opts.ClientName,
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}},
		RequestRefreshToken: true,
		Client:              hc,
		InitialTokenSource:  initial,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			return h.persisting(ctx, cfg, tok, true), nil
		},
	}
	if h.cfg.ClientMetadataURL != "" {
		conf.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientMetadataURL}
	}
	if h.cfg.ClientID != "" {
		conf.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.cfg.ClientID}
		if h.cfg.ClientSecret != "" {
			conf.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.ClientSecret}
		}
	}
	if scopes := strings.Fields(h.cfg.Scopes); len(scopes) > 0 {
		conf.ScopeFilter = func([]string) []string { return slices.Clone(scopes) }
	}
	in, err := auth.NewAuthorizationCodeHandler(conf)
	if err != nil {
		return nil, h.sv.errorf("oauth: %w", err)
	}
	h.inner = in
	return in, nil
}

// TokenSource implements auth.OAuthHandler.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	in, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	return in.TokenSource(ctx)
}

// Authorize implements auth.OAuthHandler. It runs when the server answered
// 401 or 403. Without OpenURL it asks no one and returns an *AuthError.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	in, err := h.get(ctx)
	if err != nil {
		resp.Body.Close()
		return err
	}
	if h.cfg.Grant == GrantClientCredentials {
		if err := in.Authorize(ctx, req, resp); err != nil {
			return h.authError("the client credentials grant failed: " + h.sv.scrub.Text(err.Error()))
		}
		return nil
	}
	stepUp := resp.StatusCode == http.StatusForbidden && insufficientScope(resp)
	if resp.StatusCode == http.StatusForbidden && !stepUp {
		// A refusal that no sign-in can change: the SDK leaves it alone.
		return in.Authorize(ctx, req, resp)
	}
	if h.opts.OpenURL == nil {
		resp.Body.Close()
		h.mu.Lock()
		had := h.hadToken
		h.mu.Unlock()
		reason := "it answered 401 Unauthorized and no token is stored for it"
		switch {
		case stepUp:
			reason = "its token lacks a scope the request needs (403 insufficient_scope)"
		case had:
			reason = "it refused the stored token, or the token could not be refreshed"
		}
		return h.authError(reason)
	}
	if err := in.Authorize(ctx, req, resp); err != nil {
		var ae *AuthError
		if errors.As(err, &ae) {
			return ae
		}
		return h.authError("sign-in failed: " + h.sv.scrub.Text(err.Error()))
	}
	h.mu.Lock()
	serr := h.saveErr
	h.mu.Unlock()
	if serr != nil {
		return h.sv.errorf("oauth: signed in, but the token could not be stored: %w", serr)
	}
	return nil
}

// reset forgets the handler (and the tokens it holds in memory).
func (h *oauthHandler) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inner = nil
	h.hadToken = false
	h.saveErr = nil
}

func insufficientScope(resp *http.Response) bool {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// persisting wraps cfg's refreshing token source so that every new token
// is stored and scrubbed. save says whether tok itself is new.
func (h *oauthHandler) persisting(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token, save bool) oauth2.TokenSource {
	p := &persistSource{h: h, cfg: cfg, base: cfg.TokenSource(ctx, tok)}
	if save {
		p.store(tok)
	} else {
		p.last = tok.AccessToken
	}
	return p
}

type persistSource struct {
	h    *oauthHandler
	cfg  *oauth2.Config
	base oauth2.TokenSource

	mu   sync.Mutex
	last string
}

func (p *persistSource) Token() (*oauth2.Token, error) {
	t, err := p.base.Token()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	changed := t.AccessToken != p.last
	p.mu.Unlock()
	if changed {
		p.store(t)
	}
	return t, nil
}

func (p *persistSource) store(t *oauth2.Token) {
	p.mu.Lock()
	p.last = t.AccessToken
	p.mu.Unlock()
	h := p.h
	st := &Token{ServerURL: h.sv.cfg.URL, ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		TokenURL: p.cfg.Endpoint.TokenURL, AuthStyle: int(p.cfg.Endpoint.AuthStyle), Scopes: slices.Clone(p.cfg.Scopes),
		AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
	h.sv.scrub.Add(st.secrets()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.tokens.Save(ctx, h.sv.name, st)
	h.mu.Lock()
	h.saveErr = err
	if err == nil {
		h.hadToken = true
	}
	h.mu.Unlock()
}

// scrubbingTokens learns the tokens a handler hands out, so that no error
// text carries them.
type scrubbingTokens struct {
	auth.OAuthHandler
	scrub *scrubber
}

func (s *scrubbingTokens) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	ts, err := s.OAuthHandler.TokenSource(ctx)
	if err != nil || ts == nil {
		return ts, err
	}
	return tokenSourceFunc(func() (*oauth2.Token, error) {
		t, err := ts.Token()
		if err == nil && t != nil {
			s.scrub.Add(t.AccessToken, t.RefreshToken)
		}
		return t, err
	}), nil
}

type tokenSourceFunc func() (*oauth2.Token, error)

func (f tokenSourceFunc) Token() (*oauth2.Token, error) { return f() }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type callback struct {
	code, state, iss, errCode, errDesc string
}

// fetchCode shows the authorization URL through OpenURL and waits for the
// browser's redirect on the loopback listener.
func (h *oauthHandler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	h.mu.Lock()
	port := h.port
	h.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, h.authError(fmt.Sprintf("cannot listen for the sign-in redirect on 127.0.0.1:%d: %v; set oauth.callbackPort to a free port", port, err))
	}
	got := make(chan callback, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		cb := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), errCode: q.Get("error"), errDesc: q.Get("error_description")}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := "Signed in to " + h.sv.name + ". You can close this tab."
		if cb.errCode != "" {
			msg = "Sign-in to " + h.sv.name + " failed: " + cb.errCode + "."
		}
		fmt.Fprintf(w, "<!doctype html><title>actoviq</title><p>%s</p>\n", html.EscapeString(msg))
		select {
		case got <- cb:
		default:
		}
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		wg.Wait()
	}()
	if err := h.opts.OpenURL(ctx, h.sv.name, args.URL); err != nil {
		return nil, h.authError("showing the sign-in URL failed: " + err.Error())
	}
	timer := time.NewTimer(h.opts.LoginTimeout)
	defer timer.Stop()
	select {
	case cb := <-got:
		if cb.errCode != "" {
			reason := "the authorization server refused the sign-in: " + cb.errCode
			if cb.errDesc != "" {
				reason += " (" + cb.errDesc + ")"
			}
			return nil, h.authError(reason)
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, h.authError(fmt.Sprintf("no sign-in came back within %s", h.opts.LoginTimeout))
	}
}

// AuthState describes a server's authorization, without any secret.
type AuthState struct {
	// Server is the server's name.
	Server string
	// Kind is "none" (stdio, or authorization turned off), "header" (a
	// configured Authorization header), "client_credentials", or "oauth"
	// (a person signs in).
	Kind string
	// SignedIn reports a stored token for the server's URL (oauth only).
	SignedIn bool
	// Expiry is the stored access token's expiry; zero when unknown.
	Expiry time.Time
	// Refreshable reports a stored refresh token.
	Refreshable bool
	// Scopes are the scopes that were requested.
	Scopes []string
}

// AuthStatus reports how the named server is authorized. It reads the
// token store and connects to nothing.
func (s *Source) AuthStatus(ctx context.Context, name string) (AuthState, error) {
	sv, ok := s.servers[name]
	if !ok {
		return AuthState{}, fmt.Errorf("mcptool: no enabled server %q", name)
	}
	st := AuthState{Server: name, Kind: "none"}
	switch {
	case sv.auth != nil && sv.auth.cfg.Grant == GrantClientCredentials:
		st.Kind = GrantClientCredentials
	case sv.auth != nil:
		st.Kind = "oauth"
		t, err := sv.auth.tokens.Load(ctx, name)
		if err != nil {
			return st, sv.errorf("oauth: load token: %w", err)
		}
		if t != nil && t.ServerURL == sv.cfg.URL && t.AccessToken != "" {
			st.SignedIn, st.Expiry, st.Refreshable, st.Scopes = true, t.Expiry, t.RefreshToken != "", slices.Clone(t.Scopes)
		}
	case sv.headers.Get("Authorization") != "":
		st.Kind = "header"
	}
	return st, nil
}

// Login makes sure the named server is authorized: it connects and, when
// the server asks for authorization and no stored token satisfies it,
// runs the sign-in through [OAuthOptions.OpenURL] and stores the token. A
// server already authorized is left as it is (call Logout first to sign in
// again). It returns the state afterwards.
func (s *Source) Login(ctx context.Context, name string) (AuthState, error) {
	sv, ok := s.servers[name]
	if !ok {
		return AuthState{}, fmt.Errorf("mcptool: no enabled server %q", name)
	}
	if sv.auth == nil {
		return AuthState{}, fmt.Errorf("mcptool: server %s does not use MCP authorization (it is a stdio server, has an Authorization header, or its oauth block is disabled)", name)
	}
	if _, err := sv.discover(ctx); err != nil {
		return AuthState{}, err
	}
	return s.AuthStatus(ctx, name)
}

// Logout forgets the named server's stored token and drops its
// connection; the next call needs a new sign-in. Revocation at the
// authorization server is not attempted.
func (s *Source) Logout(ctx context.Context, name string) error {
	sv, ok := s.servers[name]
	if !ok {
		return fmt.Errorf("mcptool: no enabled server %q", name)
	}
	if sv.auth == nil {
		return nil
	}
	if err := sv.auth.tokens.Delete(ctx, name); err != nil {
		return sv.errorf("oauth: delete token: %w", err)
	}
	sv.auth.reset()
	sv.mu.Lock()
	cur := sv.cur
	sv.mu.Unlock()
	if cur != nil {
		sv.drop(cur)
	}
	return nil
}
