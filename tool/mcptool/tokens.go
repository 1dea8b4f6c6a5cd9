package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Token is what this package keeps of one server's OAuth authorization:
// the tokens, and what refreshing them needs (the client registration and
// the token endpoint). Every field but ServerURL, TokenURL, Scopes and
// Expiry is a secret: String and GoString never print them, and this
// package never puts them in an error, a result or a log.
type Token struct {
	// ServerURL is the MCP server's URL the token was issued for. A token
	// whose ServerURL is not the configured url is not used.
	ServerURL string
	// ClientID and ClientSecret are the OAuth client the token was issued
	// to: pre-registered, registered dynamically, or the URL of a client ID
	// metadata document. ClientSecret is empty for a public client.
	ClientID, ClientSecret string
	// TokenURL is the authorization server's token endpoint, and AuthStyle
	// how the client authenticates there: 0 auto-detect, 1 in the form
	// body, 2 HTTP Basic (golang.org/x/oauth2's AuthStyle values).
	TokenURL  string
	AuthStyle int
	// Scopes are the scopes that were requested.
	Scopes []string
	// AccessToken, TokenType, RefreshToken and Expiry are the token
	// response. A zero Expiry means the server gave none.
	AccessToken, TokenType, RefreshToken string
	Expiry                               time.Time
}

// String describes the token without any secret.
func (t Token) String() string {
	exp := "no expiry"
	if !t.Expiry.IsZero() {
		exp = "expires " + t.Expiry.UTC().Format(time.RFC3339)
	}
	refresh := "no refresh token"
	if t.RefreshToken != "" {
		refresh = "refresh token"
	}
	return fmt.Sprintf("mcptool.Token{%s, %s, %s, [REDACTED]}", t.ServerURL, exp, refresh)
}

// GoString is String, so that %#v prints no secret either.
func (t Token) GoString() string { return t.String() }

func (t *Token) secrets() []string {
	return []string{t.AccessToken, t.RefreshToken, t.ClientSecret}
}

// TokenStore keeps OAuth tokens by server name, outside the run store:
// nothing of a token ever reaches a checkpoint, an event or a ledger entry.
// Its methods must be safe for concurrent use.
type TokenStore interface {
	// Load returns the server's token, or nil and no error when there is
	// none.
	Load(ctx context.Context, server string) (*Token, error)
	// Save stores the server's token, replacing any earlier one.
	Save(ctx context.Context, server string, t *Token) error
	// Delete forgets the server's token; deleting none is not an error.
	Delete(ctx context.Context, server string) error
}

// MemoryTokenStore is a [TokenStore] that keeps tokens in memory: they live
// as long as the process. The zero value is ready to use.
type MemoryTokenStore struct {
	mu sync.Mutex
	m  map[string]Token
}

// Load implements [TokenStore].
func (s *MemoryTokenStore) Load(_ context.Context, server string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[server]
	if !ok {
		return nil, nil
	}
	t.Scopes = slices.Clone(t.Scopes)
	return &t, nil
}

// Save implements [TokenStore].
func (s *MemoryTokenStore) Save(_ context.Context, server string, t *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Token{}
	}
	c := *t
	c.Scopes = slices.Clone(t.Scopes)
	s.m[server] = c
	return nil
}

// Delete implements [TokenStore].
func (s *MemoryTokenStore) Delete(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, server)
	return nil
}

// FileTokenStore is a [TokenStore] in one JSON file that only its owner
// may read (mode 0600, in a directory of mode 0700). Writes replace the
// file atomically. Processes that share the file see each other's tokens;
// when two refresh the same token at once, the later write wins, and a
// server that rotates refresh tokens may then ask for a new sign-in.
type FileTokenStore struct {
	path string
	mu   sync.Mutex
}

// NewFileTokenStore returns a store in the file at path (created on the
// first Save).
func NewFileTokenStore(path string) *FileTokenStore { return &FileTokenStore{path: path} }

// DefaultTokenFile is where the actoviq command keeps MCP tokens:
// "actoviq/mcp-tokens.json" under [os.UserConfigDir].
func DefaultTokenFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("mcptool: token file: %w", err)
	}
	return filepath.Join(dir, "actoviq", "mcp-tokens.json"), nil
}

// Path returns the file's path.
func (s *FileTokenStore) Path() string { return s.path }

type tokenFile struct {
	Version int                   `json:"version"`
	Servers map[string]*fileToken `json:"servers"`
}

type fileToken struct {
	ServerURL    string    `json:"server_url"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

func (s *FileTokenStore) read() (*tokenFile, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &tokenFile{Version: 1, Servers: map[string]*fileToken{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcptool: token file %s: %w", s.path, err)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(s.path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("mcptool: token file %s has mode %#o, so others may read its tokens: run chmod 600 %s", s.path, fi.Mode().Perm(), s.path)
		}
	}
	var f tokenFile
	if err := json.Unmarshal(b, &f); err != nil {
		// Never echo the content: it holds tokens.
		return nil, fmt.Errorf("mcptool: token file %s is not valid JSON: delete it and sign in again", s.path)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("mcptool: token file %s has version %d, this program reads version 1", s.path, f.Version)
	}
	if f.Servers == nil {
		f.Servers = map[string]*fileToken{}
	}
	return &f, nil
}

func (s *FileTokenStore) write(f *tokenFile) error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".mcp-tokens-*")
	if err != nil {
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("mcptool: token file: %w", err)
	}
	return nil
}

// Load implements [TokenStore].
func (s *FileTokenStore) Load(_ context.Context, server string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	ft := f.Servers[server]
	if ft == nil {
		return nil, nil
	}
	return &Token{ServerURL: ft.ServerURL, ClientID: ft.ClientID, ClientSecret: ft.ClientSecret, TokenURL: ft.TokenURL,
		AuthStyle: ft.AuthStyle, Scopes: ft.Scopes, AccessToken: ft.AccessToken, TokenType: ft.TokenType,
		RefreshToken: ft.RefreshToken, Expiry: ft.Expiry}, nil
}

// Save implements [TokenStore].
func (s *FileTokenStore) Save(_ context.Context, server string, t *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	f.Servers[server] = &fileToken{ServerURL: t.ServerURL, ClientID: t.ClientID, ClientSecret: t.ClientSecret, TokenURL: t.TokenURL,
		AuthStyle: t.AuthStyle, Scopes: slices.Clone(t.Scopes), AccessToken: t.AccessToken, TokenType: t.TokenType,
		RefreshToken: t.RefreshToken, Expiry: t.Expiry}
	return s.write(f)
}

// Delete implements [TokenStore].
func (s *FileTokenStore) Delete(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if _, ok := f.Servers[server]; !ok {
		return nil
	}
	delete(f.Servers, server)
	return s.write(f)
}
