package crashtest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// Store faults (issue 17). Each test breaks the store while the side
// effect of call c1 runs (the started entry is durable, the effect is on
// disk, the committed write is next), and checks the same three rules:
// the runtime never assumes an outcome it did not see (the effect is
// never run again on its own), never loses a recorded result, and leaves
// the run in a status that says what to do (stalled: resume it; then
// completed, or interrupted for reconciliation when the commit did not
// happen).

// faultRun runs the one-call agent over s, calling fault once the effect
// happened, and returns what Run returned.
func faultRun(t *testing.T, s store.Store, b *bundle, fault func()) (*actoviq.RunResult, error) {
	return faultRunTTL(t, s, b, leaseTTL, fault)
}

// faultRunTTL is faultRun with the claim's lease: a long one keeps
// heartbeats off the wire while the fault is armed.
func faultRunTTL(t *testing.T, s store.Store, b *bundle, ttl time.Duration, fault func()) (*actoviq.RunResult, error) {
	t.Helper()
	rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: ttl, CommitTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var once sync.Once
	agent := newAgent(tool.SideEffect, actoviq.RecoveryPolicy{}, b.counter, func(point string) {
		if point == pointRunning {
			once.Do(fault)
		}
	})
	return rt.Run(context.Background(), agent, &actoviq.Input{RunID: b.runID, Items: []item.Item{item.UserText("act once")}})
}

// settleAfterFault opens the store afresh and checks the run: stalled
// with c1 committed or started, never run again; a resume completes it
// (after a committed decision when the commit was not recorded). It
// returns whether the commit had been recorded.
func settleAfterFault(t *testing.T, b *bundle) bool {
	t.Helper()
	ctx := context.Background()
	rt := b.parent(t)
	agent := newAgent(tool.SideEffect, actoviq.RecoveryPolicy{}, b.counter, nil)
	info, err := rt.Get(ctx, b.runID)
	if err != nil {
		t.Fatalf("get after the fault: %v", err)
	}
	if info.StoredStatus != actoviq.StatusRunning || len(info.Ledger) != 1 {
		t.Fatalf("after the fault: stored %s with %d entries; want running (the run did not end) with c1", info.StoredStatus, len(info.Ledger))
	}
	committed := info.Ledger[0].State == store.LedgerCommitted
	if !committed && info.Ledger[0].State != store.LedgerStarted {
		t.Fatalf("after the fault c1 is %s, want started or committed", info.Ledger[0].State)
	}
	res, err := resumeWhenFree(ctx, rt, agent, b.runID)
	if err != nil {
		t.Fatalf("resume after the fault: %v", err)
	}
	if committed {
		checkCompleted(t, rt, b, res, []int{1})
		return true
	}
	checkInterrupted(t, rt, b, res, actoviq.InterruptReconciliation, 1)
	if got := readEffects(t, b.counter); len(got) != 1 {
		t.Fatalf("the resume ran the tool again: %v", got)
	}
	res, err = rt.Resume(ctx, agent, b.runID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: callID, Kind: actoviq.DecideCommitted, By: "test", Reason: "the effect is in the counter file", Result: "ok"}}})
	if err != nil {
		t.Fatal(err)
	}
	checkCompleted(t, rt, b, res, []int{1})
	return false
}

// cutProxy relays TCP to PostgreSQL. Armed, it takes the next chunk a
// client sends (the committed write) and either forwards it whole, waits
// for the server's answer and drops it (the commit happened, the client
// never hears of it), or forwards only its first half (the statement is
// never complete); then it cuts both connections.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Int32 // 0 off, 1 whole, 2 half
	cuts   atomic.Int32
	wg     sync.WaitGroup
}

const (
	cutWhole = 1
	cutHalf  = 2
)

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.relay(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	answered := make(chan struct{})
	go func() { _, _ = io.Copy(client, server); client.Close(); close(answered) }()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			switch mode := p.armed.Swap(0); mode {
			case 0:
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			default:
				p.cuts.Add(1)
				if mode == cutHalf {
					_, _ = server.Write(buf[:n/2])
					return
				}
				// Close the client's side first, so the server's answer
				// (it committed) reaches nobody, then send the write and
				// wait for that answer to arrive and be dropped.
				client.Close()
				_, _ = server.Write(buf[:n])
				select {
				case <-answered:
				case <-time.After(10 * time.Second):
				}
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestPGConnectionCutDuringCommit cuts the connection that carries the
// committed write of c1, once after the server got all of it (it
// commits; the client never hears) and once after half of it (nothing is
// committed). The runtime does not guess which: it reads c1's record back
// under its fence (drive_write.go readBack). Committed, it goes on with
// it; unchanged, it makes the same write again, whose revision and fence
// let one of the two commit at most. Either way the run completes, the
// tool ran once and its result is recorded once. (Before the read-back,
// Run failed with the lost connection and the next drive read the truth
// from the store: reconciliation after a half cut.)
func TestPGConnectionCutDuringCommit(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		cut  int32
	}{{"whole", cutWhole}, {"half", cutHalf}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, backend{new: newPGTarget})
			u, err := url.Parse(b.tg.DSN)
			if err != nil {
				t.Fatal(err)
			}
			px := newCutProxy(t, u.Host)
			u.Host = px.ln.Addr().String()
			s, err := storepg.Open(context.Background(), u.String(), &storepg.Config{Schema: b.tg.Schema, MaxConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// No heartbeat while armed: the next chunk is the committed write.
			res, err := faultRunTTL(t, s, b, time.Minute, func() { px.armed.Store(mode.cut) })
			if px.cuts.Load() != 1 {
				t.Fatalf("the proxy cut %d connections, want 1", px.cuts.Load())
			}
			if err != nil {
				t.Fatalf("Run after a %s cut: %v; want the record read back or written again", mode.name, err)
			}
			checkCompleted(t, b.parent(t), b, res, []int{1})
		})
	}
}

// TestPGRestartDuringRun restarts a PostgreSQL cluster of its own
// (pg_ctl restart -m immediate: no checkpoint, WAL recovery) while c1's
// effect runs. The committed write meets a dead connection or, if the
// pool reconnects in time, a recovered server: either way nothing is
// assumed and nothing recorded is lost.
func TestPGRestartDuringRun(t *testing.T) {
	t.Parallel()
	pgAvailable(t)
	if _, err := exec.LookPath("pg_config"); err != nil {
		t.Skip("pg_config not on PATH: this test starts a cluster of its own with scripts/pg")
	}
	dir := t.TempDir()
	pgScript, _ := filepath.Abs("../../scripts/pg")
	// Not under t.TempDir: the postgres user must reach it.
	cluster, err := os.MkdirTemp("", "actoviq-pg-restart-")
	if err != nil {
		t.Fatal(err)
	}
	start := exec.Command(pgScript, "start", cluster)
	// Durable commits (no PG_FAST): an immediate restart keeps every
	// commit the server acknowledged.
	start.Env = append(os.Environ(), "PG_FAST=0")
	var stderr strings.Builder
	start.Stderr = &stderr
	out, err := start.Output()
	if err != nil {
		t.Fatalf("scripts/pg start: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = exec.Command(pgScript, "stop", cluster).Run() })
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	tg := target{Kind: "pg", DSN: lines[len(lines)-1], Schema: "restart"}
	s, err := tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &bundle{tg: tg, runID: "run-" + randHex(6), counter: filepath.Join(dir, "effects.log")}
	b.key = b.runID + ":" + callID
	restarted := false
	res, err := faultRun(t, s, b, func() {
		cmd := exec.Command(pgScript, "restart", cluster)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("scripts/pg restart: %v\n%s", err, out)
			return
		}
		restarted = true
	})
	if !restarted {
		t.Fatal("the server was not restarted")
	}
	t.Logf("Run after the restart: %v (%v)", statusOf(res), err)
	if err == nil && res.Status != actoviq.StatusCompleted {
		t.Fatalf("Run ended %s with no error", res.Status)
	}
	if err == nil {
		// The pool reconnected: the commit went through on a new connection.
		checkCompleted(t, b.parent(t), b, res, []int{1})
		return
	}
	settleAfterFault(t, b)
}

func statusOf(res *actoviq.RunResult) actoviq.Status {
	if res == nil {
		return ""
	}
	return res.Status
}

// tmpfsDir mounts a small tmpfs (root only) and unmounts it at cleanup.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// TestSQLiteOutOfSpace fills the file system of the database (a 4 MiB
// tmpfs) while c1's effect runs: the committed write fails with a
// *store.FullError; once space is back, the run is settled from the
// ledger as it stands.
func TestSQLiteOutOfSpace(t *testing.T) {
	t.Parallel()
	dir := tmpfsDir(t, "4m")
	tg := target{Kind: "sqlite", DSN: filepath.Join(dir, "actoviq.db")}
	b := &bundle{tg: tg, runID: "run-" + randHex(6), counter: filepath.Join(t.TempDir(), "effects.log")}
	b.key = b.runID + ":" + callID
	s, err := tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	res, err := faultRun(t, s, b, func() {
		f, err := os.Create(filler)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("filling: %v", err)
				}
				return
			}
		}
	})
	var full *store.FullError
	if !errors.As(err, &full) || !errors.Is(err, store.ErrFull) {
		t.Fatalf("Run on a full disk: %v (result %v), want a *store.FullError", err, statusOf(res))
	}
	s.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if settleAfterFault(t, b) {
		t.Fatal("c1 reads committed, but its commit failed with a full disk")
	}
}

// TestSQLiteLockedPastBusyTimeout has another process (python3's sqlite3)
// hold the database's write lock, past the store's busy timeout and past
// the runtime's CommitTimeout (5 s: the committed write is made again
// while the budget lasts, then given up), while c1's effect runs.
func TestSQLiteLockedPastBusyTimeout(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: it is the other process that holds the lock")
	}
	b := setup(t, backend{new: newSQLiteTarget})
	s, err := storesqlite.Open(b.tg.DSN, &storesqlite.Config{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var locker *exec.Cmd
	var release io.WriteCloser
	res, err := faultRun(t, s, b, func() {
		locker = exec.Command("python3", "-c", `import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
c.execute("ROLLBACK")`, b.tg.DSN)
		release, _ = locker.StdinPipe()
		out, _ := locker.StdoutPipe()
		if err := locker.Start(); err != nil {
			t.Error(err)
			return
		}
		line := make([]byte, 7)
		if _, err := io.ReadFull(out, line); err != nil || string(line) != "locked\n" {
			t.Errorf("the locking process said %q: %v", line, err)
		}
	})
	if locker == nil {
		t.Fatal("no locking process")
	}
	release.Close()
	_ = locker.Wait()
	if err == nil {
		t.Fatalf("Run with the database locked returned %s with no error", res.Status)
	}
	if !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "busy") {
		t.Fatalf("the error does not say the database was locked: %v", err)
	}
	t.Logf("Run with the database locked: %v", err)
	s.Close()
	if settleAfterFault(t, b) {
		t.Fatal("c1 reads committed, but its commit met a locked database")
	}
}

// TestSQLiteReadOnly: a run was SIGKILLed while its side effect ran; the
// database is then reached through a read-only bind mount (root only:
// file modes do not stop root, and a file system with the database open
// cannot be remounted read-only). Opening or resuming there must fail
// saying so, and change nothing; through the writable path the run is
// then settled as after any crash.
func TestSQLiteReadOnly(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a read-only bind mount needs root")
	}
	b := setup(t, backend{new: newSQLiteTarget})
	crashChild(t, b, scenario{effect: tool.SideEffect}, "run", "", pointRunning)
	ro := t.TempDir()
	if out, err := exec.Command("mount", "--bind", filepath.Dir(b.tg.DSN), ro).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", ro).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", ro, err, out)
		}
	})
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v %s", err, out)
	}
	ctx := context.Background()
	path := filepath.Join(ro, filepath.Base(b.tg.DSN))
	agent := newAgent(tool.SideEffect, actoviq.RecoveryPolicy{}, b.counter, nil)
	s, err := storesqlite.Open(path, nil)
	if err == nil {
		rt, nerr := actoviq.New(s, &actoviq.Config{LeaseTTL: leaseTTL})
		if nerr != nil {
			t.Fatal(nerr)
		}
		var res *actoviq.RunResult
		res, err = resumeWhenFree(ctx, rt, agent, b.runID)
		rt.Close()
		s.Close()
		if err == nil {
			t.Fatalf("resume on a read-only database returned %s with no error", res.Status)
		}
	}
	if !strings.Contains(strings.ToLower(err.Error()), "readonly") && !strings.Contains(strings.ToLower(err.Error()), "read-only") {
		t.Fatalf("the error does not say the database is read-only: %v", err)
	}
	t.Logf("on a read-only database: %v", err)
	if got := readEffects(t, b.counter); len(got) != 1 {
		t.Fatalf("effects after the read-only attempt: %v, want the one of the killed drive", got)
	}
	if settleAfterFault(t, b) {
		t.Fatal("c1 reads committed, but the killed drive never committed it")
	}
}
