package mcptool

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
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
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// jwtClientAssertionType is the client_assertion_type of RFC 7523 §2.2.
const jwtClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// parsePrivateKey reads a PEM private key (PKCS#8, SEC 1 EC or PKCS#1 RSA)
// and checks it fits alg ("ES256" or "RS256"; "" picks by key type).
func parsePrivateKey(pemText, alg string) (crypto.Signer, string, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", errors.New("not a PEM private key")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", errors.New("the PEM block is not a private key this client reads (PKCS#8, EC or RSA)")
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve.Params().BitSize != 256 || (alg != "" && alg != "ES256") {
			return nil, "", errors.New(`an EC key signs with "ES256" on P-256 only`)
		}
		return k, "ES256", nil
	case *rsa.PrivateKey:
		if alg != "" && alg != "RS256" {
			return nil, "", errors.New(`an RSA key signs with "RS256" only`)
		}
		return k, "RS256", nil
	}
	return nil, "", errors.New("unsupported key type: use an EC P-256 or RSA key")
}

// signJWT builds a compact JWS of claims.
func signJWT(key crypto.Signer, alg string, claims map[string]any) (string, error) {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64) // JWS: r and s, 32 bytes each (RFC 7518 §3.4)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			return "", err
		}
	default:
		return "", errors.New("unsupported key")
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// jwtClientCredentials is an auth.OAuthHandler for the client credentials
// grant with private_key_jwt client authentication (RFC 7523), which the
// SDK has no handler for. Discovery is the SDK's: protected-resource
// metadata, then the authorization server's metadata.
type jwtClientCredentials struct {
	clientID string
	key      crypto.Signer
	alg      string
	scopes   []string // configured; nil: the challenge's or the metadata's
	client   *http.Client
	scrub    *scrubber

	mu sync.Mutex
	ts oauth2.TokenSource
}

func (h *jwtClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

func (h *jwtClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	var metadataURL, scope string
	for _, c := range challenges {
		if strings.EqualFold(c.Scheme, "bearer") {
			if c.Params["resource_metadata"] != "" {
				metadataURL = c.Params["resource_metadata"]
			}
			if c.Params["scope"] != "" {
				scope = c.Params["scope"]
			}
		}
	}
	resource := req.URL.String()
	prm, err := h.resourceMetadata(ctx, metadataURL, req.URL)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.client)
	if err != nil {
		return fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil || asm.TokenEndpoint == "" {
		return errors.New("the authorization server publishes no metadata with a token endpoint")
	}
	scopes := h.scopes
	if scopes == nil {
		if scope != "" {
			scopes = strings.Fields(scope)
		} else {
			scopes = prm.ScopesSupported
		}
	}
	if prm.Resource != "" {
		resource = prm.Resource
	}
	fetch := &jwtTokenFetch{h: h, tokenURL: asm.TokenEndpoint, audience: asm.Issuer, scopes: scopes, resource: resource}
	tok, err := fetch.Token()
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.ts = oauth2.ReuseTokenSource(tok, fetch)
	h.mu.Unlock()
	return nil
}

// resourceMetadata finds the protected-resource metadata: the challenge's
// URL, then the path-aware and the root well-known URLs (RFC 9728 §3.1).
func (h *jwtClientCredentials) resourceMetadata(ctx context.Context, fromChallenge string, resource *url.URL) (*oauthex.ProtectedResourceMetadata, error) {
	type cand struct{ url, resource string }
	var cands []cand
	if fromChallenge != "" {
		cands = append(cands, cand{fromChallenge, resource.String()})
	}
	u := *resource
	u.RawQuery, u.Fragment = "", ""
	u.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(resource.Path, "/")
	cands = append(cands, cand{u.String(), resource.String()})
	root := *resource
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	u.Path = "/.well-known/oauth-protected-resource"
	cands = append(cands, cand{u.String(), root.String()})
	var last error
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, h.client)
		if err != nil {
			last = err
			continue
		}
		if prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	if last == nil {
		last = errors.New("none found")
	}
	return nil, fmt.Errorf("protected resource metadata: %w", last)
}

// jwtTokenFetch runs one client credentials grant per Token call, each with
// a fresh signed assertion.
type jwtTokenFetch struct {
	h                  *jwtClientCredentials
	tokenURL, audience string
	scopes             []string
	resource           string
}

func (f *jwtTokenFetch) Token() (*oauth2.Token, error) {
	h := f.h
	now := time.Now()
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return nil, err
	}
	assertion, err := signJWT(h.key, h.alg, map[string]any{
		"iss": h.clientID, "sub": h.clientID, "aud": f.audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": new(big.Int).SetBytes(jti).Text(36),
	})
	if err != nil {
		return nil, fmt.Errorf("sign the client assertion: %w", err)
	}
	form := url.Values{
		"grant_type":            {"client_credentials"},
		"client_id":             {h.clientID},
		"client_assertion_type": {jwtClientAssertionType},
		"client_assertion":      {assertion},
	}
	if len(f.scopes) > 0 {
		form.Set("scope", strings.Join(f.scopes, " "))
	}
	if f.resource != "" {
		form.Set("resource", f.resource)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		why := tr.Error
		if tr.Description != "" {
			why += ": " + tr.Description
		}
		if why == "" {
			why = "no access token in the answer"
		}
		return nil, fmt.Errorf("token endpoint answered %d (%s)", resp.StatusCode, h.scrub.Text(why))
	}
	h.scrub.Add(tr.AccessToken)
	tok := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType}
	if tr.ExpiresIn > 0 {
		tok.Expiry = now.Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	return tok, nil
}
