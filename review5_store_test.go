package actoviq_test

// Review 5A: the store side of runs created claimed
// (RunCreateParams.Holder/TTL/Events) and of a claim released in a write
// (RunWriteParams.Release), on every backend: a refused create or write
// leaves nothing behind and takes nothing away, and a released claim
// fences its old holder once another took it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

const tn = store.DefaultTenant

func claimedRun(t *testing.T, st store.Store, id, holder string) *store.Run {
	t.Helper()
	r, err := st.RunCreate(context.Background(), &store.RunCreateParams{Holder: holder, TTL: time.Minute,
		Run:    &store.Run{Tenant: tn, ID: id, AgentID: "a", Status: store.RunRunning},
		Events: []*store.EventRecord{{ID: id + "-e1", Type: "run.started", Data: json.RawMessage(`{"n":1}`)}}})
	if err != nil {
		t.Fatalf("create %s claimed: %v", id, err)
	}
	return r
}

func runFence(id, holder string) *store.Fence {
	return &store.Fence{Key: store.RunClaimKey(id), Holder: holder, Epoch: store.CreatedClaimEpoch}
}

func liveClaim(t *testing.T, st store.Store, key, holder string, epoch int64) {
	t.Helper()
	c, err := st.ClaimGet(context.Background(), &store.ClaimGetParams{Tenant: tn, Key: key})
	if err != nil || c.Holder != holder || c.Epoch != epoch || !c.ExpiresAt.After(time.Now()) {
		t.Fatalf("claim %s: %+v %v, want live, held by %s at epoch %d", key, c, err, holder, epoch)
	}
}

func eventCount(t *testing.T, st store.Store, id string) int {
	t.Helper()
	evs, err := st.EventList(context.Background(), &store.EventListParams{Tenant: tn, RunID: id, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// A write that would release the claim but is refused (a stale revision)
// leaves the claim live, alone and inside a batch of other releasing
// writes (the PostgreSQL store's group commit runs the batch again one by
// one after the failed one).
func TestReview5RefusedReleaseKeepsTheClaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		const n = 8
		runs := make([]*store.Run, n)
		for i := range n {
			runs[i] = claimedRun(t, st, fmt.Sprintf("rr%d", i), "A")
		}
		_, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: tn, RunID: "rr0", Fence: runFence("rr0", "A"), Release: true,
			Run: &store.RunUpdate{ExpectedRevision: runs[0].Revision + 5, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale releasing write: %v, want a conflict", err)
		}
		liveClaim(t, st, store.RunClaimKey("rr0"), "A", 1)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 1; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rev := runs[i].Revision
				if i%3 == 0 {
					rev += 7 // refused
				}
				id := runs[i].ID
				_, errs[i] = st.RunWrite(ctx, &store.RunWriteParams{Tenant: tn, RunID: id, Fence: runFence(id, "A"), Release: true,
					Run:    &store.RunUpdate{ExpectedRevision: rev, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)},
					Events: []*store.EventRecord{{ID: id + "-end", Type: "run.completed", Data: json.RawMessage(`{}`)}}})
			}()
		}
		wg.Wait()
		for i := 1; i < n; i++ {
			id := runs[i].ID
			c, cerr := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: tn, Key: store.RunClaimKey(id)})
			if cerr != nil {
				t.Fatal(cerr)
			}
			r, rerr := st.RunGet(ctx, &store.RunGetParams{Tenant: tn, ID: id})
			if rerr != nil {
				t.Fatal(rerr)
			}
			if i%3 == 0 {
				if !errors.Is(errs[i], store.ErrConflict) || r.Status != store.RunRunning || eventCount(t, st, id) != 1 {
					t.Errorf("%s: refused write: %v, status %s", id, errs[i], r.Status)
				}
				liveClaim(t, st, store.RunClaimKey(id), "A", 1)
				continue
			}
			if errs[i] != nil || r.Status != store.RunCompleted || c.ExpiresAt.After(time.Now()) || eventCount(t, st, id) != 2 {
				t.Errorf("%s: releasing write: %v, status %s, claim %+v", id, errs[i], r.Status, c)
			}
		}
	})
}

// Once a write released the claim and another holder took it, the old
// holder can neither write, renew nor release: its fence is stale.
func TestReview5ReleasedClaimFencesItsOldHolder(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		r := claimedRun(t, st, "rf", "A")
		w, err := st.RunWrite(ctx, &store.RunWriteParams{Tenant: tn, RunID: "rf", Fence: runFence("rf", "A"), Release: true,
			Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunInterrupted, Checkpoint: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: tn, Key: store.RunClaimKey("rf"), Holder: "B", TTL: time.Minute})
		if err != nil || c.Epoch != 2 {
			t.Fatalf("B takes the released claim: %+v %v", c, err)
		}
		_, err = st.RunWrite(ctx, &store.RunWriteParams{Tenant: tn, RunID: "rf", Fence: runFence("rf", "A"),
			Run: &store.RunUpdate{ExpectedRevision: w.Run.Revision, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{"late":1}`)}})
		if !errors.Is(err, store.ErrFenced) {
			t.Fatalf("A's write after its release and B's claim: %v, want fenced", err)
		}
		_, err = st.RunWrite(ctx, &store.RunWriteParams{Tenant: tn, RunID: "rf", Fence: runFence("rf", "A"), Release: true,
			Events: []*store.EventRecord{{ID: "late", Type: "x", Data: json.RawMessage(`{}`)}}})
		if !errors.Is(err, store.ErrFenced) {
			t.Fatalf("A's releasing write after B's claim: %v, want fenced", err)
		}
		if _, err := st.ClaimRenew(ctx, &store.ClaimRenewParams{Tenant: tn, Fence: *runFence("rf", "A"), TTL: time.Minute}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("A's renew after B's claim: %v, want fenced", err)
		}
		if err := st.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: tn, Fence: *runFence("rf", "A")}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("A's release after B's claim: %v, want fenced", err)
		}
		liveClaim(t, st, store.RunClaimKey("rf"), "B", 2)
		got, err := st.RunGet(ctx, &store.RunGetParams{Tenant: tn, ID: "rf"})
		if err != nil || got.Status != store.RunInterrupted || got.Revision != w.Run.Revision || eventCount(t, st, "rf") != 1 {
			t.Fatalf("the run after A's stale writes: %+v %v", got, err)
		}
	})
}

// A create that asks for its claim and is refused creates nothing and
// changes no claim: a parent that does not exist, a run that exists and
// is held by another, a claim row left under the key, an invalid event.
func TestReview5RefusedClaimedCreateLeavesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		noRun := func(id string) {
			t.Helper()
			if _, err := st.RunGet(ctx, &store.RunGetParams{Tenant: tn, ID: id}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("run %s exists after a refused create: %v", id, err)
			}
			if c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: tn, Key: store.RunClaimKey(id)}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a claim of %s is stored after a refused create: %+v %v", id, c, err)
			}
		}
		create := func(id, parent, holder string, ttl time.Duration, data string) error {
			_, err := st.RunCreate(ctx, &store.RunCreateParams{Holder: holder, TTL: ttl,
				Run:    &store.Run{Tenant: tn, ID: id, ParentID: parent, AgentID: "a", Status: store.RunRunning},
				Events: []*store.EventRecord{{ID: id + "-e1", Type: "run.started", Data: json.RawMessage(data)}}})
			return err
		}
		if err := create("orphan", "nobody", "A", time.Minute, `{}`); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claimed create under a missing parent: %v", err)
		}
		noRun("orphan")
		var inv *store.InvalidError
		if err := create("badev", "", "A", time.Minute, `{"x":`); !errors.As(err, &inv) {
			t.Fatalf("claimed create with an invalid event: %v", err)
		}
		noRun("badev")
		if err := create("nottl", "", "A", 0, `{}`); !errors.As(err, &inv) {
			t.Fatalf("claimed create without a TTL: %v", err)
		}
		noRun("nottl")

		claimedRun(t, st, "held", "B")
		if err := create("held", "", "A", time.Minute, `{}`); !errors.Is(err, store.ErrExists) {
			t.Fatalf("claimed create of a run that exists: %v", err)
		}
		liveClaim(t, st, store.RunClaimKey("held"), "B", 1)
		if n := eventCount(t, st, "held"); n != 1 {
			t.Fatalf("the existing run has %d events after a refused create", n)
		}

		left, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: tn, Key: store.RunClaimKey("left"), Holder: "C", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		err = create("left", "", "A", time.Minute, `{}`)
		var ex *store.ExistsError
		if !errors.As(err, &ex) || ex.Kind != "claim" {
			t.Fatalf("claimed create over a claim row: %v, want ExistsError Kind claim", err)
		}
		if _, err := st.RunGet(ctx, &store.RunGetParams{Tenant: tn, ID: "left"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("run created over a claim row: %v", err)
		}
		liveClaim(t, st, left.Key, "C", left.Epoch)
		if n := eventCount(t, st, "left"); n != 0 {
			t.Fatalf("%d events stored by a refused create", n)
		}
	})
}
