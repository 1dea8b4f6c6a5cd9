package mcptool_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool/mcptool"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A stdio server that exits before the handshake says why on its standard
// error; the connect error carries its last lines, with the server's
// secrets scrubbed, and Options.Stderr still gets everything as written.
func TestConnectErrorCarriesStderr(t *testing.T) {
	t.Parallel()
	const secret = "tok-4b1d9e77c0ffee"
	script := `for i in 1 2 3 4 5 6 7 8 9 10; do echo "starting step $i" >&2; done
echo "using token $API_TOKEN" >&2
echo "Error: None of the specified directories are accessible" >&2
exit 1`
	cfg := &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
		"fs": {Command: "sh", Args: []string{"-c", script}, Env: map[string]string{"API_TOKEN": secret}},
	}}
	var log lockedBuffer
	src, err := mcptool.New(cfg, &mcptool.Options{Stderr: &log, TerminateWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Tools(context.Background())
	if err == nil {
		t.Fatal("Tools: no error from a server that exits at once")
	}
	msg := err.Error()
	t.Log(msg)
	if !strings.Contains(msg, "the server's stderr ended with:") || !strings.Contains(msg, "Error: None of the specified directories are accessible") {
		t.Errorf("connect error lacks the server's last words:\n%s", msg)
	}
	if strings.Contains(msg, secret) || !strings.Contains(msg, "using token") {
		t.Errorf("connect error shows the secret, or lost the line that held it:\n%s", msg)
	}
	if strings.Contains(msg, "starting step 1 ") || !strings.Contains(msg, "starting step 10") {
		t.Errorf("want only the last lines:\n%s", msg)
	}
	if got := log.String(); !strings.Contains(got, "starting step 1\n") || !strings.Contains(got, "accessible") {
		t.Errorf("Options.Stderr got %q", got)
	}
}

// The case that was reported: server-filesystem pointed at a directory
// that does not exist exits before the handshake, and says so only on its
// standard error.
func TestFilesystemMissingDirSaysWhy(t *testing.T) {
	t.Parallel()
	entry := npmServer(t, "server-filesystem")
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	src, err := mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
		"fs": {Command: "node", Args: []string{entry, missing}},
	}}, &mcptool.Options{TerminateWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Tools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "None of the specified directories are accessible") {
		t.Fatalf("err = %v, want the server's own explanation in it", err)
	}
}
