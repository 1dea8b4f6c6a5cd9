package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// MoveHeldClaims makes, on a store a held-claim migration has just taken
// forward, the moves both backends' migration tests check the counters
// after: it releases the claim of run d1, takes the claims of runs i4, i1
// and s2, and stores the held run i3 running (it changes group while
// held). The runs are those of the tests' fixture, in tenant.
func MoveHeldClaims(t *testing.T, s store.Store, tenant string) {
	t.Helper()
	ctx := context.Background()
	fence := func(id string) store.Fence {
		t.Helper()
		c, err := s.ClaimGet(ctx, &store.ClaimGetParams{Tenant: tenant, Key: store.RunClaimKey(id)})
		if err != nil {
			t.Fatal(err)
		}
		return store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
	}
	if err := s.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: tenant, Fence: fence("d1")}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"i4", "i1", "s2"} {
		if _, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: tenant, Key: store.RunClaimKey(id), Holder: "here:1:x", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	f := fence("i3")
	r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: tenant, ID: "i3"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: tenant, RunID: "i3", Fence: &f,
		Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunRunning, Checkpoint: r.Checkpoint}}); err != nil {
		t.Fatal(err)
	}
}
