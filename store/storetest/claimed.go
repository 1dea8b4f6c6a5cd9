package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// A run created already claimed (RunCreateParams.Holder) with its first
// events, and a write that gives its claim up (RunWriteParams.Release):
// a drive's first and last round trips carry its claim.

func testRunCreateClaimed(t *testing.T, bb *bundle) {
	key := store.RunClaimKey("r")
	evs := []*store.EventRecord{{ID: "e1", Type: "run.started", Data: json.RawMessage(`{"epoch":1}`)}, {ID: "e2", Type: "note"}}
	created, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r"), Holder: "w1", TTL: time.Minute, Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	if created.Revision != 1 || created.EventSeq != 2 {
		t.Fatalf("created: revision %d event seq %d, want 1 and 2", created.Revision, created.EventSeq)
	}
	c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key})
	if err != nil || c.Holder != "w1" || c.Epoch != store.CreatedClaimEpoch || !c.ExpiresAt.Equal(bb.clock.Now().Add(time.Minute)) {
		t.Fatalf("the created run's claim: %+v %v", c, err)
	}
	got, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[0].ID != "e1" || got[0].Type != "run.started" ||
		string(got[0].Data) != `{"epoch":1}` || got[1].Seq != 2 || got[1].Data != nil || got[0].TraceID != "" {
		t.Fatalf("the created run's events: %v %v", describeEvents(got), err)
	}
	if r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"}); err != nil || r.EventSeq != 2 {
		t.Fatalf("RunGet after a create with events: %+v %v", r, err)
	}
	// Held: another holder is refused; the creator writes under epoch 1
	// and its events follow the created ones.
	if _, err := acquire(bb, key, "w2", time.Minute); !errors.Is(err, store.ErrClaimHeld) {
		t.Fatalf("acquire a run created claimed by another holder: %v", err)
	}
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Fence: &store.Fence{Key: key, Holder: "w1", Epoch: store.CreatedClaimEpoch}, Events: []*store.EventRecord{{Type: "x"}}})
	if err != nil || res.Events[0].Seq != 3 {
		t.Fatalf("write under the created claim: %+v %v", res, err)
	}

	// A claim already under the key refuses the create: nothing is created
	// and the claim is left as it was.
	old, err := acquire(bb, store.RunClaimKey("left"), "w9", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: store.Fence{Key: old.Key, Holder: "w9", Epoch: old.Epoch}}); err != nil {
		t.Fatal(err)
	}
	_, err = bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "left"), Holder: "w1", TTL: time.Minute, Events: evs})
	var ex *store.ExistsError
	if !errors.As(err, &ex) || ex.Kind != "claim" || ex.ID != store.RunClaimKey("left") {
		t.Fatalf("create claimed over a stored claim: %v, want ExistsError of Kind claim", err)
	}
	if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "left"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused create left the run: %v", err)
	}
	if got, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "left"}); err != nil || len(got) != 0 {
		t.Fatalf("a refused create left events: %v %v", describeEvents(got), err)
	}
	if c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: old.Key}); err != nil || c.Holder != "w9" || c.Epoch != old.Epoch {
		t.Fatalf("a refused create changed the claim: %+v %v", c, err)
	}
	// Without a claim the same run is created (the key is only checked
	// when the create takes it).
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "left")}); err != nil {
		t.Fatalf("unclaimed create next to a stored claim: %v", err)
	}

	// An existing run: ErrExists of Kind run, its claim untouched.
	_, err = bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r"), Holder: "w3", TTL: time.Minute})
	if !errors.As(err, &ex) || ex.Kind != "run" {
		t.Fatalf("create claimed of an existing run: %v", err)
	}
	if c, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key}); c.Holder != "w1" {
		t.Fatalf("a refused create took the existing run's claim: %+v", c)
	}
	// A child without its parent: refused, nothing claimed.
	orphan := newRun("t", "orphan")
	orphan.ParentID = "missing"
	_, err = bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: orphan, Holder: "w1", TTL: time.Minute, Events: evs})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claimed create of an orphan: %v", err)
	}
	if _, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey("orphan")}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused orphan left a claim: %v", err)
	}
	// A child of a parent that exists, created claimed.
	child := newRun("t", "r.child")
	child.ParentID = "r"
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: child, Holder: "w4", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey("r.child")}); err != nil || c.Holder != "w4" || c.Epoch != 1 {
		t.Fatalf("child created claimed: %+v %v", c, err)
	}
	// Events without a claim.
	if r, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "plain"), Events: evs[1:]}); err != nil || r.EventSeq != 1 {
		t.Fatalf("unclaimed create with an event: %+v %v", r, err)
	}
	if _, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey("plain")}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unclaimed create made a claim: %v", err)
	}
	// Invalid: a holder without a TTL, a nil or typeless event.
	for i, p := range []*store.RunCreateParams{
		{Run: newRun("t", "bad1"), Holder: "w1"},
		{Run: newRun("t", "bad2"), Events: []*store.EventRecord{nil}},
		{Run: newRun("t", "bad3"), Events: []*store.EventRecord{{ID: "x"}}},
		{Run: newRun("t", "bad4"), Events: []*store.EventRecord{{Type: "x", Data: json.RawMessage(`{`)}}},
	} {
		if _, err := bb.s.RunCreate(bb.ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("invalid create %d: %v", i, err)
		}
	}
}

func testRunWriteRelease(t *testing.T, bb *bundle) {
	key := store.RunClaimKey("r")
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r"), Holder: "w1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: key, Holder: "w1", Epoch: 1}
	// A release whose write fails (revision) leaves the claim as it was.
	_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Release: true,
		Run: &store.RunUpdate{ExpectedRevision: 7, Status: store.RunCompleted}})
	wantConflict(t, err, 7, 1)
	if c, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key}); !c.ExpiresAt.After(bb.clock.Now()) || c.Holder != "w1" {
		t.Fatalf("a failed write released the claim: %+v", c)
	}
	if _, err := acquire(bb, key, "w2", time.Minute); !errors.Is(err, store.ErrClaimHeld) {
		t.Fatalf("claim after a failed releasing write: %v", err)
	}
	// The last write releases: the run is written, the claim is free at
	// once (no TTL to wait for) and keeps its epoch.
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Release: true,
		Run:    &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{"n":9}`)},
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerCommitted)}}, Events: []*store.EventRecord{{Type: "run.completed"}}})
	if err != nil || res.Run.Status != store.RunCompleted || res.Run.Revision != 2 || len(res.Events) != 1 {
		t.Fatalf("releasing write: %+v %v", res, err)
	}
	c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key})
	if err != nil || c.ExpiresAt.After(bb.clock.Now()) || c.Epoch != 1 || c.Holder != "w1" {
		t.Fatalf("claim after the releasing write: %+v %v", c, err)
	}
	next, err := acquire(bb, key, "w2", time.Minute)
	if err != nil || next.Epoch != 2 {
		t.Fatalf("take the released claim: %+v %v", next, err)
	}
	// A stale fence: the write and its release are both refused; the new
	// holder's claim is untouched.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Release: true,
		Events: []*store.EventRecord{{Type: "late"}}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("releasing write under a stale fence: %v", err)
	}
	if c, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key}); c.Holder != "w2" || c.Epoch != 2 || !c.ExpiresAt.Equal(next.ExpiresAt) {
		t.Fatalf("a fenced-out release changed the claim: %+v", c)
	}
	// Release needs a fence.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Release: true, Events: []*store.EventRecord{{Type: "x"}}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("release without a fence: %v", err)
	}
	// Many drives ending at once (a backend may commit them together):
	// each write is stored and each claim released.
	const n = 12
	for i := range n {
		if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", fmt.Sprintf("m%d", i)), Holder: fmt.Sprintf("h%d", i), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m%d", i)
			// Every third write carries a stale epoch: refused, its
			// neighbours' writes and releases are not.
			epoch := int64(1)
			if i%3 == 2 {
				epoch = 5
			}
			_, errs[i] = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Release: true,
				Fence: &store.Fence{Key: store.RunClaimKey(id), Holder: fmt.Sprintf("h%d", i), Epoch: epoch},
				Run:   &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted}, Events: []*store.EventRecord{{Type: "run.completed"}}})
		}()
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: id})
		c, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey(id)})
		if i%3 == 2 {
			if !errors.Is(errs[i], store.ErrFenced) || r.Status != store.RunRunning || !c.ExpiresAt.After(bb.clock.Now()) {
				t.Fatalf("stale releasing write %s: %v, run %s, claim %+v", id, errs[i], r.Status, c)
			}
			continue
		}
		if errs[i] != nil || r.Status != store.RunCompleted || c.ExpiresAt.After(bb.clock.Now()) {
			t.Fatalf("releasing write %s: %v, run %s, claim %+v", id, errs[i], r.Status, c)
		}
	}
}

func describeEvents(evs []*store.EventRecord) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, e.Data))
	}
	return out
}
