package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A claim's epoch is a fencing token: once another worker has taken the
// claim over, every write fenced with the old epoch fails and changes
// nothing.
func ExampleFence() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := storemem.New(&storemem.Config{Clock: func() time.Time { return now }})
	s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r1", Status: store.RunRunning}})

	key := store.RunClaimKey("r1")
	old, _ := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "worker-a", TTL: time.Second})
	now = now.Add(2 * time.Second) // worker-a stops heartbeating
	cur, _ := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "worker-b", TTL: time.Second})
	fmt.Println("epochs:", old.Epoch, cur.Epoch)

	_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r1",
		Fence:  &store.Fence{Key: key, Holder: "worker-a", Epoch: old.Epoch},
		Events: []*store.EventRecord{{Type: "late.write"}}})
	fmt.Println(errors.Is(err, store.ErrFenced))
	// Output:
	// epochs: 1 2
	// true
}
