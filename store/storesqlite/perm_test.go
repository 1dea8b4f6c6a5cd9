package storesqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestFilesArePrivate: the database and the WAL and SHM files SQLite makes
// beside it are created 0600, even under a umask that lets everyone read
// (SQLite alone creates them 0644). Not parallel: the umask is the
// process's.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	path := filepath.Join(t.TempDir(), "actoviq.db")
	var warnings []string
	s, err := storesqlite.Open(path, &storesqlite.Config{Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	createRun(t, s, "default", "run-1", store.RunRunning)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v (a WAL store has all three while open)", p, err)
		}
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(p), perm)
		}
	}
	if len(warnings) != 0 {
		t.Errorf("a new store warned: %q", warnings)
	}
}

// TestWarnsWhenReadableByOthers: an existing database that other users can
// read is opened (its mode is the owner's choice) with a warning naming the
// file, its mode and the fix; a private one gets none.
func TestWarnsWhenReadableByOthers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "actoviq.db")
	s := open(t, path, nil)
	createRun(t, s, "default", "run-1", store.RunRunning)
	// Keep a second handle open so the WAL and SHM files stay.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warnings []string
	s2, err := storesqlite.Open(path, &storesqlite.Config{Warn: func(m string) { mu.Lock(); warnings = append(warnings, m); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.RunGet(context.Background(), &store.RunGetParams{Tenant: "default", ID: "run-1"}); err != nil {
		t.Fatalf("the store opened with a warning must work: %v", err)
	}
	mu.Lock()
	got := strings.Join(warnings, "\n")
	mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(got, path+" can be read") || !strings.Contains(got, "-rw-r--r--") || !strings.Contains(got, "chmod 600") {
		t.Errorf("warnings: %q", warnings)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("Open changed an existing file's mode to %v", st.Mode().Perm())
	}

	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	warnings = nil
	s3, err := storesqlite.Open(path, &storesqlite.Config{Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	s3.Close()
	if len(warnings) != 0 {
		t.Errorf("a private store warned: %q", warnings)
	}
}
