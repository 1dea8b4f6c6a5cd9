package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// testFenceAfterRelease: a holder that gave its claim up (ClaimRelease, or
// a run write's Release) writes nothing more under it: every fenced call
// (a run write of each shape, a releasing one, a session append, a renew)
// is a *store.FencedError with Released set, and changes nothing; a renew
// does not revive the claim. Releasing again changes nothing and
// succeeds. Expiry alone does not fence: a holder whose lease ran out and
// that nobody took over still writes and renews. Taking the claim again
// gives a new epoch, under which writes go on; the released epoch stays
// fenced. (Before, all three stores accepted writes after a release, and
// a renew revived the released claim.)
func testFenceAfterRelease(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	key := store.RunClaimKey("r")
	c, err := acquire(bb, key, "w1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: key, Holder: "w1", Epoch: c.Epoch}
	// Expired, nobody took it: the holder still writes, and renews.
	bb.clock.Advance(2 * time.Second)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerPrepared)}}}); err != nil {
		t.Fatalf("write by the holder of an expired claim: %v", err)
	}
	if _, err := bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: "t", Fence: *fence, TTL: time.Second}); err != nil {
		t.Fatalf("renew of an expired claim nobody took: %v", err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: *fence}); err != nil {
		t.Fatal(err)
	}
	released, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	wantReleased := func(what string, err error) {
		t.Helper()
		var fe *store.FencedError
		if !errors.As(err, &fe) || !errors.Is(err, store.ErrFenced) || !fe.Released || fe.Epoch != fence.Epoch ||
			fe.CurrentHolder != "w1" || fe.CurrentEpoch != fence.Epoch {
			t.Fatalf("%s after the holder's release: %v (%+v), want a *store.FencedError with Released", what, err, fe)
		}
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerStarted), ExpectedRevision: 1}}})
	wantReleased("a ledger write", err)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerStarted), ExpectedRevision: 1,
			Event: &store.EventRecord{Type: "tool.started"}}}})
	wantReleased("a ledger write with its event", err)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{"n":1}`)}})
	wantReleased("a run write", err)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Events: []*store.EventRecord{{Type: "late"}}})
	wantReleased("an events-only write", err)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Release: true,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{"n":1}`)}})
	wantReleased("a releasing write", err)
	_, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", RunID: "r", Items: items(`"late"`), Fence: fence})
	wantReleased("a session append", err)
	_, err = bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: "t", Fence: *fence, TTL: time.Minute})
	wantReleased("a renew", err)
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: *fence}); err != nil {
		t.Fatalf("a second release by the holder: %v", err)
	}
	r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	e, _ := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c"})
	st, _ := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	got, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key})
	if r.Revision != 1 || r.Status != store.RunRunning || r.EventSeq != 0 || e.State != store.LedgerPrepared || e.Revision != 1 || st.Revision != 0 {
		t.Fatalf("writes after the release changed data: run %+v, entry %s rev %d, session rev %d", r, e.State, e.Revision, st.Revision)
	}
	if got.Holder != "w1" || got.Epoch != fence.Epoch || !got.ExpiresAt.Equal(released.ExpiresAt) || got.ExpiresAt.After(bb.clock.Now()) {
		t.Fatalf("the released claim changed (revived by a renew?): %+v, released %+v", got, released)
	}
	// The holder takes it again: a new epoch, writes go on; the old epoch
	// stays fenced, as after any takeover.
	again, err := acquire(bb, key, "w1", time.Minute)
	if err != nil || again.Epoch != fence.Epoch+1 {
		t.Fatalf("acquire after the release: %+v %v", again, err)
	}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: key, Holder: "w1", Epoch: again.Epoch},
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerStarted), ExpectedRevision: 1}}}); err != nil {
		t.Fatalf("write under the new epoch: %v", err)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence, Events: []*store.EventRecord{{Type: "late"}}})
	var fe *store.FencedError
	if !errors.As(err, &fe) || fe.Released || fe.CurrentEpoch != again.Epoch {
		t.Fatalf("write under the released epoch after a new acquire: %v", err)
	}
	// A run write's Release fences alike.
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r2"), Holder: "w1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f2 := &store.Fence{Key: store.RunClaimKey("r2"), Holder: "w1", Epoch: store.CreatedClaimEpoch}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r2", Fence: f2, Release: true,
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, Checkpoint: json.RawMessage(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r2", Fence: f2, Events: []*store.EventRecord{{Type: "late"}}})
	if !errors.As(err, &fe) || !fe.Released {
		t.Fatalf("write after a releasing write: %v", err)
	}
	_, err = bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: "t", Fence: *f2, TTL: time.Minute})
	if !errors.As(err, &fe) || !fe.Released {
		t.Fatalf("renew after a releasing write: %v", err)
	}
}
