package storesqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
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
