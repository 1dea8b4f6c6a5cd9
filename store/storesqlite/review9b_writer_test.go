package storesqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
