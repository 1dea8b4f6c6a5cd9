package mcptool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool/mcptool"
)

func TestFileTokenStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "actoviq", "mcp-tokens.json")
	s := mcptool.NewFileTokenStore(path)
	if tok, err := s.Load(ctx, "a"); tok != nil || err != nil {
		t.Fatalf("empty store: %v %v", tok, err)
	}
	want := &mcptool.Token{ServerURL: "https://h/mcp", ClientID: "c", ClientSecret: "cs-secret-41d2", TokenURL: "https://h/token",
		AuthStyle: 2, Scopes: []string{"a", "b"}, AccessToken: "at-secret-77e1", TokenType: "Bearer", RefreshToken: "rt-secret-9c0a",
		Expiry: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := s.Save(ctx, "a", want); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "b", &mcptool.Token{ServerURL: "https://b/mcp", AccessToken: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := mcptool.NewFileTokenStore(path).Load(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerURL != want.ServerURL || got.ClientSecret != want.ClientSecret || got.AuthStyle != 2 || strings.Join(got.Scopes, " ") != "a b" ||
		got.AccessToken != want.AccessToken || got.RefreshToken != want.RefreshToken || !got.Expiry.Equal(want.Expiry) {
		t.Fatalf("round trip: got %#v", *got)
	}
	if s := got.String(); strings.Contains(s, "secret") || !strings.Contains(s, "https://h/mcp") {
		t.Fatalf("String() = %q", s)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if tok, _ := s.Load(ctx, "a"); tok != nil {
		t.Fatal("deleted token still there")
	}
	if tok, _ := s.Load(ctx, "b"); tok == nil {
		t.Fatal("the other server's token went with it")
	}
	// A file others can read is refused, with the command that fixes it.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "b"); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("world-readable file: %v", err)
	}
	// A corrupt file is an error that quotes nothing of it.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"version":1,"servers":{"a":{"access_token":"at-secret-77e1"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "a"); err == nil || strings.Contains(err.Error(), "at-secret") || !strings.Contains(err.Error(), "sign in again") {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestDefaultTokenFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/tmp/xdg-test")
	p, err := mcptool.DefaultTokenFile()
	if err != nil || p != "/tmp/xdg-test/actoviq/mcp-tokens.json" {
		t.Fatalf("DefaultTokenFile() = %q, %v", p, err)
	}
}
