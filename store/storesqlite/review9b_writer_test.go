package storesqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// A write whose context ends while its BEGIN IMMEDIATE runs must not leave
// the store's write connection inside a transaction: the driver reports
// the context's error even when the statement finished (its deferred
// check sees the watcher's flag), so BEGIN may have taken the write lock
// though it "failed". Every later write of the store then failed with
// "cannot start a transaction within a transaction", and the lock stayed
// held against every other process.
func TestReview9bCanceledBeginLeavesNoTransaction(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "w.db"), nil)
	bg := context.Background()
	create := func(ctx context.Context, i int) error {
		_, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: fmt.Sprint("r", i), Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		return err
	}
	if err := create(bg, -1); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		ctx, cancel := context.WithCancel(bg)
		go func() {
			time.Sleep(time.Duration(rand.IntN(40)) * time.Microsecond)
			cancel()
		}()
		_ = create(ctx, i)
		cancel()
		if err := create(bg, 100000+i); err != nil {
			t.Fatalf("after write %d with a canceled context, a write with a live one: %v", i, err)
		}
	}
}

// Close while writes run: no write that starts after Close returned
// succeeds, and once the writes in flight ended no connection of the
// store stays open. The write connection was opened again by a leader
// that came between the writer's close and the database's, and then kept
// for good: writes went on succeeding after Close, holding the file open.
func TestReview9bCloseDuringWritesLeavesNoConnection(t *testing.T) {
	for round := range 20 {
		s, err := storesqlite.Open(filepath.Join(t.TempDir(), "w.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		bg := context.Background()
		var closed atomic.Bool
		late := make(chan string, 4)
		for g := range 4 {
			go func() {
				for i := 0; ; i++ {
					after := closed.Load()
					_, err := s.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: fmt.Sprint("r", g, "-", i), Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
					if err != nil {
						late <- ""
						return
					}
					if after {
						late <- fmt.Sprint("write r", g, "-", i, " started after Close returned and succeeded")
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		_ = s.Close()
		closed.Store(true)
		for range 4 {
			if msg := <-late; msg != "" {
				t.Fatalf("round %d: %s", round, msg)
			}
		}
		if n := s.DB().Stats().OpenConnections; n != 0 {
			t.Fatalf("round %d: %d connections open after Close and the end of every write", round, n)
		}
	}
}

// The write lock held by another connection (another process's, here a
// second *sql.DB on the file): a write whose context ends during the wait
// stores nothing and leaves no transaction open; once the lock is given
// up, writes go on. Two Stores on one file write concurrently: each write
// succeeds or is busy, and a busy one stored nothing.
func TestReview9bLockHeldElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s := open(t, path, &storesqlite.Config{BusyTimeout: 2 * time.Second})
	bg := context.Background()
	create := func(s *storesqlite.Store, ctx context.Context, id string) error {
		_, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		return err
	}
	if err := create(s, bg, "r0"); err != nil {
		t.Fatal(err)
	}
	other := open(t, path, nil).DB()
	conn, err := other.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ctx, cancel := context.WithTimeout(bg, time.Duration(10+i*10)*time.Millisecond)
		err := create(s, ctx, fmt.Sprint("w", i))
		cancel()
		if err == nil {
			t.Fatalf("write %d succeeded while another connection held the write lock", i)
		}
	}
	if _, err := conn.ExecContext(bg, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := create(s, bg, "r1"); err != nil {
		t.Fatalf("after the lock was given up: %v", err)
	}
	for i := range 5 {
		if _, err := s.RunGet(bg, &store.RunGetParams{Tenant: "t", ID: fmt.Sprint("w", i)}); err == nil {
			t.Errorf("write w%d failed but is stored", i)
		}
	}
	// Two Stores on one file, concurrent writers.
	s2 := open(t, path, &storesqlite.Config{BusyTimeout: 2 * time.Second})
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if i%2 == 1 {
				st = s2
			}
			errs[i] = create(st, bg, fmt.Sprint("x", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		_, gerr := s.RunGet(bg, &store.RunGetParams{Tenant: "t", ID: fmt.Sprint("x", i)})
		switch {
		case err == nil && gerr != nil:
			t.Errorf("x%d: written, not read back from the other pool: %v", i, gerr)
		case err != nil && errors.Is(err, store.ErrBusy) && gerr == nil:
			t.Errorf("x%d: busy but stored", i)
		case err != nil && !errors.Is(err, store.ErrBusy):
			t.Errorf("x%d: %v", i, err)
		}
	}
}

// A write that fills the database (max_page_count) is a FullError and
// leaves the write connection usable: a small write after it, alone or
// batched, is stored or is itself full, never refused for a transaction
// left open.
func TestReview9bFullLeavesWriterUsable(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "w.db"), &storesqlite.Config{MaxPageCount: 200})
	bg := context.Background()
	create := func(id string, n int) error {
		_, err := s.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning,
			Checkpoint: json.RawMessage(`{"p":"` + strings.Repeat("x", n) + `"}`)}})
		return err
	}
	full := 0
	for i := range 200 {
		err := create(fmt.Sprint("big", i), 60000)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrFull) {
			t.Fatalf("big write %d: %v, want a FullError", i, err)
		}
		full++
		var wg sync.WaitGroup
		for j := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := create(fmt.Sprint("small", i, "-", j), 1); err != nil && !errors.Is(err, store.ErrFull) {
					t.Errorf("small write after a full one: %v", err)
				}
			}()
		}
		wg.Wait()
		if full > 3 {
			break
		}
	}
	if full == 0 {
		t.Fatal("the database never filled")
	}
}
