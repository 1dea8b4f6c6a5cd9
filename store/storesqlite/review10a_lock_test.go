package storesqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestReview10aLockHolderChild is the other process of
// TestReview10aLockHeldByAnotherProcess: it takes the write lock of the
// file, says so, holds it for the time asked, then gives it up.
func TestReview10aLockHolderChild(t *testing.T) {
	path := os.Getenv("REVIEW10A_LOCK_PATH")
	if path == "" {
		t.Skip("the lock-holding child process only")
	}
	hold, _ := time.ParseDuration(os.Getenv("REVIEW10A_LOCK_HOLD"))
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("LOCKED")
	time.Sleep(hold)
	if _, err := c.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
}

// lockElsewhere starts a process that holds path's write lock for hold
// and returns once it holds it; wait waits for it to end.
func lockElsewhere(t *testing.T, path string, hold time.Duration) (cmd *exec.Cmd, wait func()) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestReview10aLockHolderChild$", "-test.v")
	cmd.Env = append(os.Environ(), "REVIEW10A_LOCK_PATH="+path, "REVIEW10A_LOCK_HOLD="+hold.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "LOCKED" {
			break
		}
	}
	done := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(done)
	}()
	return cmd, func() { <-done; _ = cmd.Wait() }
}

// TestReview10aLockHeldByAnotherProcess (review10a): another process
// holds the file's write lock. A write waits for it and succeeds once it
// is given up; gives up at its deadline or when cancelled, or at the busy
// timeout with ErrBusy, promptly, storing nothing; and the Store's next
// writes (the hot ledger write included) go on at once, leaving no
// transaction open (the other process gets the lock without waiting).
// A holder killed with the lock held frees it.
func TestReview10aLockHeldByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path, &storesqlite.Config{BusyTimeout: 1500 * time.Millisecond})
	bg := context.Background()
	n := 0
	create := func(ctx context.Context) (string, error) {
		n++
		id := "r" + strconv.Itoa(n)
		_, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		return id, err
	}
	stored := func(id string) bool {
		_, err := s.RunGet(bg, &store.RunGetParams{Tenant: "t", ID: id})
		return err == nil
	}
	rev := 0
	hot := func(ctx context.Context) error {
		e := &store.LedgerEntry{Tenant: "t", RunID: "r1", CallID: "c", Tool: "x", State: store.LedgerStarted}
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r1", Ledger: []store.LedgerWrite{{Entry: e, ExpectedRevision: int64(rev), Event: &store.EventRecord{Type: "ledger"}}}})
		if err == nil {
			rev++
		}
		return err
	}
	if _, err := create(bg); err != nil {
		t.Fatal(err)
	}
	// Free again at once: nothing of ours holds a transaction.
	freeNow := func(what string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("BEGIN IMMEDIATE; ROLLBACK"); err != nil {
			t.Fatalf("%s: the lock is not free: %v", what, err)
		}
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		defer cancel()
		start := time.Now()
		if err := hot(ctx); err != nil || time.Since(start) > time.Second {
			t.Fatalf("%s: the next hot write: %v after %v", what, err, time.Since(start))
		}
	}

	// 1. Waits, then succeeds.
	_, wait := lockElsewhere(t, path, 250*time.Millisecond)
	start := time.Now()
	id, err := create(context.Background())
	if took := time.Since(start); err != nil || took < 150*time.Millisecond {
		t.Fatalf("a write while another process held the lock 250ms: %v after %v", err, took)
	}
	wait()
	if !stored(id) {
		t.Fatal("not stored")
	}
	freeNow("after a wait")

	// 2. Deadline first (100 ms < busy timeout 1.5 s).
	_, wait = lockElsewhere(t, path, 4*time.Second)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	start = time.Now()
	err = hot(ctx)
	cancel()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Fatalf("hot write, deadline 100ms: %v after %v", err, took)
	}
	// 3. Cancelled mid-wait.
	ctx, cancel = context.WithCancel(bg)
	time.AfterFunc(80*time.Millisecond, cancel)
	start = time.Now()
	id, err = create(ctx)
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > time.Second {
		t.Fatalf("create cancelled at 80ms: %v after %v", err, took)
	}
	if stored(id) {
		t.Fatal("a cancelled create was stored")
	}
	// 4. The busy timeout first.
	start = time.Now()
	err = hot(bg)
	if took := time.Since(start); !errors.Is(err, store.ErrBusy) || took < 1400*time.Millisecond || took > 3500*time.Millisecond {
		t.Fatalf("hot write past the busy timeout: %v after %v", err, took)
	}
	wait()
	freeNow("after giving up")
	if e, err := s.LedgerGet(bg, &store.LedgerGetParams{Tenant: "t", RunID: "r1", CallID: "c"}); err != nil || e.Revision != int64(rev) {
		t.Fatalf("ledger after: %+v %v (want revision %d)", e, err, rev)
	}

	// 5. The holder is killed with the lock held.
	cmd, wait := lockElsewhere(t, path, time.Hour)
	time.AfterFunc(150*time.Millisecond, func() { _ = cmd.Process.Kill() })
	start = time.Now()
	ctx, cancel = context.WithTimeout(bg, 3*time.Second)
	err = hot(ctx)
	cancel()
	if took := time.Since(start); err != nil || took > 2500*time.Millisecond {
		t.Fatalf("hot write while the holder is killed: %v after %v", err, took)
	}
	wait()
	freeNow("after the holder was killed")
}
