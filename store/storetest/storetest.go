package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/actoviq/actoviq-go/store"
)

// FakeClock is a settable clock for claim expiry tests.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock standing at a fixed instant.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	ctx   context.Context
	open  func(t *testing.T, clock store.Clock) store.Store
	clock *FakeClock
	s     store.Store // first handle, on the fake clock
}

// Run runs the conformance suite against b.
func Run(t *testing.T, b Backend) {
	setup := func(t *testing.T) *bundle {
		t.Helper()
		open := b.NewDatabase(t)
		clock := NewFakeClock()
		return &bundle{ctx: context.Background(), open: open, clock: clock, s: open(t, clock.Now)}
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, bb *bundle)
	}{
		{"RunCreateGet", testRunCreateGet},
		{"RunList", testRunList},
		{"TenantIsolation", testTenantIsolation},
		{"RunWriteCAS", testRunWriteCAS},
		{"RunWriteAtomic", testRunWriteAtomic},
		{"RunWriteRace", testRunWriteRace},
		{"NoLostUpdate", testNoLostUpdate},
		{"Ledger", testLedger},
		{"LedgerRecords", testLedgerRecords},
		{"EventRows", testEventRows},
		{"EventRowsStartedTail", testEventRowsStartedTail},
		{"RunLog", testRunLog},
		{"Events", testEvents},
		{"Claims", testClaims},
		{"Fencing", testFencing},
		{"RunCreateClaimed", testRunCreateClaimed},
		{"RunWriteRelease", testRunWriteRelease},
		{"FenceAfterRelease", testFenceAfterRelease},
		{"RunClaimNext", testRunClaimNext},
		{"RunClaimNextAgents", testRunClaimNextAgents},
		{"RunClaimNextStale", testRunClaimNextStale},
		{"QueueWatch", testQueueWatch},
		{"Sessions", testSessions},
		{"SessionRace", testSessionRace},
		{"SessionAsOf", testSessionAsOf},
		{"Once", testOnce},
		{"Invalid", testInvalid},
		{"NotUTF8", testNotUTF8},
		{"RunListPaging", testRunListPaging},
		{"RunListClaims", testRunListClaims},
		{"RunListHeldBy", testRunListHeldBy},
		{"RunCount", testRunCount},
		{"LedgerListRuns", testLedgerListRuns},
		{"RunPrune", testRunPrune},
		{"RunPruneOwnedClaims", testRunPruneOwnedClaims},
		{"RunPruneRacesChildCreate", testRunPruneRacesChildCreate},
		{"RunPruneKeepsOpenTrees", testRunPruneKeepsOpenTrees},
		{"ClaimReleaseRemove", testClaimReleaseRemove},
		{"ClaimListDue", testClaimListDue},
		{"RunCounters", testRunCounters},
		{"WaitingStamp", testWaitingStamp},
		{"WaitingStampRandom", testWaitingStampRandom},
		{"IdleFilterEdges", testIdleFilterEdges},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, setup(t))
		})
	}
	t.Run("Corrupt", func(t *testing.T) {
		if b.Corrupt == nil {
			t.Skipf("%s: backend gives no way to damage a stored row", b.Name)
		}
		testCorrupt(t, setup(t), b.Corrupt)
	})
}

func newRun(tenant, id string) *store.Run {
	return &store.Run{Tenant: tenant, ID: id, AgentID: "agent", AgentDigest: "d1", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{"n":0}`)}
}

func mustCreate(t *testing.T, bb *bundle, r *store.Run) *store.Run {
	t.Helper()
	got, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: r})
	if err != nil {
		t.Fatalf("RunCreate %s: %v", r.ID, err)
	}
	return got
}

func entry(tenant, runID, callID string, idx int, state store.LedgerState) *store.LedgerEntry {
	return &store.LedgerEntry{Tenant: tenant, RunID: runID, CallID: callID, Turn: 1, Index: idx, Tool: "pay",
		Effect: "side-effect", State: state, IdempotencyKey: runID + ":" + callID,
		ArgsDigest: "sha256:x", Args: json.RawMessage(`{"amount":5}`)}
}

func wantConflict(t *testing.T, err error, expected, actual int64) {
	t.Helper()
	var ce *store.ConflictError
	if !errors.Is(err, store.ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("want ConflictError, got %v", err)
	}
	if ce.Expected != expected || ce.Actual != actual {
		t.Fatalf("conflict revisions = expected %d actual %d, want %d/%d", ce.Expected, ce.Actual, expected, actual)
	}
}

func testRunCreateGet(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t1", "parent"))
	r := newRun("t1", "run-1")
	r.SessionID, r.ParentID, r.Meta = "sess", "parent", json.RawMessage(`{"model":"m"}`)
	r.Deadline = bb.clock.Now().Add(time.Hour)
	got := mustCreate(t, bb, r)
	if got.Revision != 1 || got.EventSeq != 0 || got.CreatedAt.IsZero() {
		t.Fatalf("created run = %+v", got)
	}
	again, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Checkpoint) != `{"n":0}` || string(again.Meta) != `{"model":"m"}` || again.SessionID != "sess" ||
		again.ParentID != "parent" || !again.Deadline.Equal(store.Time(r.Deadline)) || again.AgentDigest != "d1" {
		t.Fatalf("read back %+v", again)
	}
	_, err = bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t1", "run-1")})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate create: want ErrExists, got %v", err)
	}
	_, err = bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "nope"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run: want ErrNotFound, got %v", err)
	}
	// A child needs its parent, in its own tenant; an existing id is
	// refused as existing first.
	orphan := newRun("t1", "orphan")
	orphan.ParentID = "nope"
	_, err = bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: orphan})
	var nf *store.NotFoundError
	if !errors.As(err, &nf) || nf.Kind != "parent run" || nf.ID != "nope" || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("child of a missing parent: want a NotFoundError of its parent, got %v", err)
	}
	if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t1", ID: "orphan"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused child was written: %v", err)
	}
	other := newRun("t2", "orphan")
	other.ParentID = "parent" // exists in t1, not in t2
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: other}); !errors.As(err, &nf) {
		t.Fatalf("child of another tenant's run: want NotFoundError, got %v", err)
	}
	dup := newRun("t1", "run-1")
	dup.ParentID = "nope"
	if _, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: dup}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("existing id with a missing parent: want ErrExists, got %v", err)
	}
}

func testRunList(t *testing.T, bb *bundle) {
	for i := range 4 {
		r := newRun("t1", fmt.Sprintf("run-%d", i))
		if i%2 == 1 {
			r.Status = store.RunInterrupted
		}
		if i == 3 {
			r.ParentID = "run-0"
		}
		mustCreate(t, bb, r)
		bb.clock.Advance(time.Second)
	}
	all, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[0].ID != "run-3" || all[3].ID != "run-0" {
		t.Fatalf("list order: %v", ids(all))
	}
	intr, _ := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Status: store.RunInterrupted})
	if len(intr) != 2 || intr[0].ID != "run-3" {
		t.Fatalf("status filter: %v", ids(intr))
	}
	kids, _ := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", ParentID: "run-0"})
	if len(kids) != 1 || kids[0].ID != "run-3" {
		t.Fatalf("parent filter: %v", ids(kids))
	}
	lim, _ := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t1", Limit: 1})
	if len(lim) != 1 {
		t.Fatalf("limit: %v", ids(lim))
	}
}

func ids(rs []*store.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func testTenantIsolation(t *testing.T, bb *bundle) {
	a, b := newRun("A", "same"), newRun("B", "same")
	b.Checkpoint = json.RawMessage(`{"tenant":"B"}`)
	mustCreate(t, bb, a)
	mustCreate(t, bb, b)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "A", RunID: "same",
		Ledger: []store.LedgerWrite{{Entry: entry("A", "same", "c1", 0, store.LedgerPrepared)}},
		Events: []*store.EventRecord{{Type: "x"}}}); err != nil {
		t.Fatal(err)
	}
	got, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "B", ID: "same"})
	if string(got.Checkpoint) != `{"tenant":"B"}` || got.EventSeq != 0 {
		t.Fatalf("tenant B sees A's data: %+v", got)
	}
	if l, _ := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "B", RunID: "same"}); len(l) != 0 {
		t.Fatalf("tenant B sees A's ledger")
	}
	if ev, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "B", RunID: "same"}); len(ev) != 0 {
		t.Fatalf("tenant B sees A's events")
	}
	if l, _ := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "A"}); len(l) != 1 {
		t.Fatalf("tenant A lists %d runs", len(l))
	}
	if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "A", Key: "k", Holder: "h1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "B", Key: "k", Holder: "h2", TTL: time.Minute}); err != nil {
		t.Fatalf("claim in tenant B blocked by tenant A: %v", err)
	}
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "A", SessionID: "s", Items: []json.RawMessage{[]byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "B", SessionID: "s"}); st.Revision != 0 {
		t.Fatalf("tenant B sees A's session")
	}
	if _, err := bb.s.OncePut(bb.ctx, &store.OncePutParams{Tenant: "A", Key: "k", Value: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "B", Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant B sees A's once record: %v", err)
	}
}

func testRunWriteCAS(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, Checkpoint: json.RawMessage(`{"n":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Revision != 2 || res.Run.Status != store.RunInterrupted || string(res.Run.Checkpoint) != `{"n":1}` {
		t.Fatalf("after write: %+v", res.Run)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"n":99}`)}})
	wantConflict(t, err, 1, 2)
	got, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if string(got.Checkpoint) != `{"n":1}` || got.Revision != 2 {
		t.Fatalf("stale write changed the run: %+v", got)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "missing",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write to missing run: want ErrNotFound, got %v", err)
	}
}

// testRunWriteAtomic: when any part of a write fails, no part is stored.
func testRunWriteAtomic(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c1", 0, store.LedgerPrepared)}}}); err != nil {
		t.Fatal(err)
	}
	// The run update is valid but the second ledger write is stale.
	_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"n":5}`)},
		Ledger: []store.LedgerWrite{
			{Entry: entry("t", "r", "c2", 1, store.LedgerPrepared)},
			{Entry: entry("t", "r", "c1", 0, store.LedgerStarted), ExpectedRevision: 7},
		},
		Events: []*store.EventRecord{{Type: "should-not-exist"}}})
	wantConflict(t, err, 7, 1)
	got, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if got.Revision != 1 || string(got.Checkpoint) != `{"n":0}` || got.EventSeq != 0 {
		t.Fatalf("partial write stored the run: %+v", got)
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c2"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("partial write stored c2: %v", err)
	}
	if ev, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"}); len(ev) != 0 {
		t.Fatalf("partial write stored events")
	}
	c1, _ := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c1"})
	if c1.State != store.LedgerPrepared || c1.Revision != 1 {
		t.Fatalf("c1 changed: %+v", c1)
	}
}

// testRunWriteRace: many writers on independent handles race for the same
// revision; exactly one wins.
func testRunWriteRace(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	handles := []store.Store{bb.s, bb.open(t, bb.clock.Now)}
	const writers = 8
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := handles[i%2].RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(fmt.Sprintf(`{"w":%d}`, i))}})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != writers-1 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and %d", wins.Load(), conflicts.Load(), writers-1)
	}
	got, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if got.Revision != 2 {
		t.Fatalf("revision = %d, want 2", got.Revision)
	}
}

// testNoLostUpdate: concurrent read-modify-write loops that retry on
// conflict never lose an increment.
func testNoLostUpdate(t *testing.T, bb *bundle) {
	handles := []store.Store{bb.s, bb.open(t, bb.clock.Now)}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		id := fmt.Sprintf("r%d", n)
		mustCreate(t, bb, newRun("t", id))
		writers := rapid.IntRange(2, 5).Draw(rt, "writers")
		incs := rapid.IntRange(1, 6).Draw(rt, "increments")
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := handles[w%2]
				for done := 0; done < incs; {
					r, err := h.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: id})
					if err != nil {
						rt.Errorf("get: %v", err)
						return
					}
					var cp struct{ N int }
					_ = json.Unmarshal(r.Checkpoint, &cp)
					_, err = h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: id,
						Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: store.RunRunning,
							Checkpoint: json.RawMessage(fmt.Sprintf(`{"N":%d}`, cp.N+1))}})
					switch {
					case err == nil:
						done++
					case errors.Is(err, store.ErrConflict):
					default:
						rt.Errorf("write: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: id})
		var cp struct{ N int }
		_ = json.Unmarshal(r.Checkpoint, &cp)
		if cp.N != writers*incs || r.Revision != int64(1+writers*incs) {
			rt.Fatalf("counter %d revision %d, want %d and %d", cp.N, r.Revision, writers*incs, 1+writers*incs)
		}
	})
}

func testLedger(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	e2 := entry("t", "r", "b", 1, store.LedgerPrepared)
	e1 := entry("t", "r", "a", 0, store.LedgerAwaitingApproval)
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: e2}, {Entry: e1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ledger) != 2 || res.Ledger[0].Revision != 1 || res.Run != nil {
		t.Fatalf("result %+v", res)
	}
	// Creating an existing entry is a conflict.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "a", 0, store.LedgerPrepared)}}})
	wantConflict(t, err, 0, 1)

	started := *res.Ledger[1]
	started.State = store.LedgerStarted
	started.Attempt = 1
	started.Holder, started.Epoch = "w1", 3
	started.StartedAt = bb.clock.Now()
	started.Approval = &store.DecisionRecord{Kind: "approve", By: "alice", At: bb.clock.Now(), Reason: "ok",
		ArgsDigest: "sha256:x", PolicyVersion: "p1", Evidence: json.RawMessage(`{"shown":true}`)}
	bb.clock.Advance(time.Second)
	res2, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &started, ExpectedRevision: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Ledger[0].Revision != 2 {
		t.Fatalf("revision after update = %d", res2.Ledger[0].Revision)
	}
	got, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.LedgerStarted || got.Attempt != 1 || got.Holder != "w1" || got.Epoch != 3 ||
		got.Approval == nil || got.Approval.By != "alice" || string(got.Approval.Evidence) != `{"shown":true}` ||
		!got.Approval.At.Equal(started.Approval.At) || got.IdempotencyKey != "r:a" || string(got.Args) != `{"amount":5}` ||
		!got.StartedAt.Equal(started.StartedAt) || !got.CreatedAt.Before(got.UpdatedAt) {
		t.Fatalf("read back %+v (approval %+v)", got, got.Approval)
	}
	// A stale update changes nothing.
	stale := *got
	stale.State = store.LedgerCommitted
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &stale, ExpectedRevision: 1}}})
	wantConflict(t, err, 1, 2)

	committed := *got
	committed.State = store.LedgerCommitted
	committed.Result = json.RawMessage(`{"call_id":"a","content":"paid"}`)
	committed.Resolution = &store.DecisionRecord{Kind: "probe", By: "probe", At: bb.clock.Now(), Result: json.RawMessage(`{"ok":true}`)}
	committed.CommittedAt = bb.clock.Now()
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &committed, ExpectedRevision: 2}}}); err != nil {
		t.Fatal(err)
	}
	list, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].CallID != "a" || list[1].CallID != "b" {
		t.Fatalf("ledger order: %+v", list)
	}
	if list[0].State != store.LedgerCommitted || string(list[0].Result) != `{"call_id":"a","content":"paid"}` ||
		list[0].Resolution == nil || string(list[0].Resolution.Result) != `{"ok":true}` || list[0].Revision != 3 {
		t.Fatalf("committed entry: %+v", list[0])
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "zzz"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing entry: %v", err)
	}
}

func testEvents(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	for i := range 3 {
		res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
			Events: []*store.EventRecord{{Type: "a", ID: fmt.Sprintf("e%da", i), TraceID: "tr", SpanID: "sp", ParentRunID: "p"},
				{Type: "b", ID: fmt.Sprintf("e%db", i), Data: json.RawMessage(`{"i":1}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Events[0].Seq != int64(2*i+1) || res.Events[1].Seq != int64(2*i+2) {
			t.Fatalf("seqs %d,%d", res.Events[0].Seq, res.Events[1].Seq)
		}
	}
	// Events written concurrently from two handles stay gapless.
	h2 := bb.open(t, bb.clock.Now)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := bb.s
			if i%2 == 1 {
				h = h2
			}
			if _, err := h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Events: []*store.EventRecord{{Type: "c"}}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	evs, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 16 {
		t.Fatalf("%d events", len(evs))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.RunID != "r" || e.Tenant != "t" || e.Time.IsZero() {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	if evs[0].TraceID != "tr" || evs[0].SpanID != "sp" || evs[0].ParentRunID != "p" || evs[0].ID != "e0a" || string(evs[1].Data) != `{"i":1}` {
		t.Fatalf("envelope fields lost: %+v %+v", evs[0], evs[1])
	}
	page, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: 4, Limit: 3})
	if len(page) != 3 || page[0].Seq != 5 || page[2].Seq != 7 {
		t.Fatalf("page: %d events", len(page))
	}
	r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if r.EventSeq != 16 || r.Revision != 1 {
		t.Fatalf("run after events: seq %d rev %d (events must not bump the revision)", r.EventSeq, r.Revision)
	}
}

func acquire(bb *bundle, key, holder string, ttl time.Duration) (*store.Claim, error) {
	return bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: holder, TTL: ttl})
}

func testClaims(t *testing.T, bb *bundle) {
	c, err := acquire(bb, "k", "w1", 10*time.Second)
	if err != nil || c.Epoch != 1 || c.Holder != "w1" || !c.ExpiresAt.Equal(bb.clock.Now().Add(10*time.Second)) {
		t.Fatalf("first acquire: %+v %v", c, err)
	}
	_, err = acquire(bb, "k", "w2", 10*time.Second)
	if !errors.Is(err, store.ErrClaimHeld) {
		t.Fatalf("live claim taken: %v", err)
	}
	bb.clock.Advance(5 * time.Second)
	c, err = acquire(bb, "k", "w1", 10*time.Second)
	if err != nil || c.Epoch != 1 {
		t.Fatalf("same holder re-acquire: %+v %v", c, err)
	}
	c, err = bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: "t", Fence: store.Fence{Key: "k", Holder: "w1", Epoch: 1}, TTL: 10 * time.Second})
	if err != nil || !c.ExpiresAt.Equal(bb.clock.Now().Add(10*time.Second)) || !c.HeartbeatAt.Equal(bb.clock.Now()) {
		t.Fatalf("renew: %+v %v", c, err)
	}
	bb.clock.Advance(10 * time.Second) // now exactly at expiry: free
	c, err = acquire(bb, "k", "w2", 10*time.Second)
	if err != nil || c.Epoch != 2 || c.Holder != "w2" {
		t.Fatalf("takeover after expiry: %+v %v", c, err)
	}
	_, err = bb.s.ClaimRenew(bb.ctx, &store.ClaimRenewParams{Tenant: "t", Fence: store.Fence{Key: "k", Holder: "w1", Epoch: 1}, TTL: time.Second})
	var fe *store.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, store.ErrFenced) || fe.CurrentEpoch != 2 || fe.CurrentHolder != "w2" {
		t.Fatalf("stale renew: %v", err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: store.Fence{Key: "k", Holder: "w1", Epoch: 1}}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale release: %v", err)
	}
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: store.Fence{Key: "k", Holder: "w2", Epoch: 2}}); err != nil {
		t.Fatal(err)
	}
	c, err = acquire(bb, "k", "w3", time.Second)
	if err != nil || c.Epoch != 3 {
		t.Fatalf("acquire after release: %+v %v", c, err)
	}
	got, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: "k"})
	if err != nil || got.Holder != "w3" || got.Epoch != 3 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: "none"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing claim: %v", err)
	}
	// Racing acquirers on two handles: exactly one wins.
	h2 := bb.open(t, bb.clock.Now)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := bb.s
			if i%2 == 1 {
				h = h2
			}
			_, err := h.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: "race", Holder: fmt.Sprintf("h%d", i), TTL: time.Minute})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, store.ErrClaimHeld) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d racing acquirers won", wins.Load())
	}
}

// testFencing: a worker whose claim was taken over cannot write anything.
func testFencing(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	key := store.RunClaimKey("r")
	old, err := acquire(bb, key, "w1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	oldFence := &store.Fence{Key: key, Holder: "w1", Epoch: old.Epoch}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: oldFence,
		Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, store.LedgerPrepared)}}}); err != nil {
		t.Fatalf("fenced write by the holder: %v", err)
	}
	bb.clock.Advance(2 * time.Second)
	if _, err := acquire(bb, key, "w2", time.Minute); err != nil {
		t.Fatal(err)
	}
	started := entry("t", "r", "c", 0, store.LedgerStarted)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: oldFence,
		Run:    &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"n":1}`)},
		Ledger: []store.LedgerWrite{{Entry: started, ExpectedRevision: 1}}, Events: []*store.EventRecord{{Type: "x"}}})
	var fe *store.FencedError
	if !errors.As(err, &fe) || fe.Epoch != 1 || fe.CurrentEpoch != 2 {
		t.Fatalf("stale epoch write: %v", err)
	}
	e, _ := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c"})
	r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if e.State != store.LedgerPrepared || r.Revision != 1 || r.EventSeq != 0 {
		t.Fatalf("fenced-out write changed data: %+v %+v", e, r)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Fence: &store.Fence{Key: "run:never-claimed", Holder: "w1", Epoch: 1}, Events: []*store.EventRecord{{Type: "x"}}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("write under a missing claim: %v", err)
	}
	// A session append fenced by the old holder's run claim fails and
	// appends nothing; the current holder's succeeds.
	_, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", RunID: "r", Items: items(`"late"`), Fence: oldFence})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale session append: %v", err)
	}
	if st, _ := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"}); st.Revision != 0 {
		t.Fatalf("fenced-out append changed the session: %+v", st)
	}
	cur, _ := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: key})
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", RunID: "r", Items: items(`"ok"`),
		Fence: &store.Fence{Key: key, Holder: cur.Holder, Epoch: cur.Epoch}}); err != nil {
		t.Fatalf("append by the current holder: %v", err)
	}
}

func testRunClaimNext(t *testing.T, bb *bundle) {
	_, _, err := bb.s.RunClaimNext(bb.ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "w", TTL: time.Minute})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("empty queue: %v", err)
	}
	const n = 6
	for i := range n {
		r := newRun("t", fmt.Sprintf("q%d", i))
		r.Status = store.RunQueued
		mustCreate(t, bb, r)
		bb.clock.Advance(time.Millisecond)
	}
	mustCreate(t, bb, newRun("t", "not-queued"))
	h2 := bb.open(t, bb.clock.Now)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range n + 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := bb.s
			if i%2 == 1 {
				h = h2
			}
			r, c, err := h.RunClaimNext(bb.ctx, &store.RunClaimNextParams{Tenant: "t", Holder: fmt.Sprintf("w%d", i), TTL: time.Minute})
			if errors.Is(err, store.ErrNotFound) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			if r.Status != store.RunRunning || c.Key != store.RunClaimKey(r.ID) || c.Holder != fmt.Sprintf("w%d", i) {
				t.Errorf("claimed %+v with %+v", r, c)
			}
			mu.Lock()
			got[r.ID]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("claimed %d distinct runs, want %d: %v", len(got), n, got)
	}
	for id, k := range got {
		if k != 1 {
			t.Fatalf("run %s handed out %d times", id, k)
		}
	}
}

func items(vals ...string) []json.RawMessage {
	var out []json.RawMessage
	for _, v := range vals {
		out = append(out, json.RawMessage(v))
	}
	return out
}

func testSessions(t *testing.T, bb *bundle) {
	st, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if err != nil || st.Revision != 0 || len(st.Entries) != 0 {
		t.Fatalf("new session: %+v %v", st, err)
	}
	rev, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", RunID: "r1", Items: items(`"a"`, `"b"`)})
	if err != nil || rev != 2 {
		t.Fatalf("append: %d %v", rev, err)
	}
	_, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: 1, Items: items(`"x"`)})
	wantConflict(t, err, 1, 2)
	_, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: 0, Items: items(`"x"`)})
	wantConflict(t, err, 0, 2)
	if rev, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: 2, RunID: "r2", Turn: 7, Items: items(`"c"`)}); err != nil || rev != 3 {
		t.Fatalf("append 2: %d %v", rev, err)
	}
	st, _ = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if st.Revision != 3 || len(st.Entries) != 3 || string(st.Entries[2].Item) != `"c"` || st.Entries[2].Seq != 3 ||
		st.Entries[2].RunID != "r2" || st.Entries[0].RunID != "r1" || st.Snapshot != nil {
		t.Fatalf("load: %+v", st)
	}
	// The append's identity (run and turn) is stored with each item.
	if st.Entries[2].Turn != 7 || st.Entries[0].Turn != 0 || st.Entries[1].Turn != 0 {
		t.Fatalf("turns %d %d %d, want 0 0 7", st.Entries[0].Turn, st.Entries[1].Turn, st.Entries[2].Turn)
	}
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: 3, Turn: -1, Items: items(`"x"`)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("negative turn: %v", err)
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 9, Data: json.RawMessage(`[]`)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("snapshot beyond journal: %v", err)
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 2, Data: json.RawMessage(`["a","b"]`)}); err != nil {
		t.Fatal(err)
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 2, Data: json.RawMessage(`["other"]`)}); err != nil {
		t.Fatal(err)
	}
	st, _ = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if st.SnapshotRevision != 2 || string(st.Snapshot) != `["a","b"]` || len(st.Entries) != 1 || st.Entries[0].Seq != 3 || st.Revision != 3 {
		t.Fatalf("load from snapshot: %+v", st)
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 3, Data: json.RawMessage(`["a","b","c"]`)}); err != nil {
		t.Fatal(err)
	}
	st, _ = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if st.SnapshotRevision != 3 || len(st.Entries) != 0 {
		t.Fatalf("load from newest snapshot: %+v", st)
	}

	// A snapshot inside one append: the entries after it come back, with
	// the append's run and turn, and nothing before it.
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s2", RunID: "r", Turn: 2,
		Items: items(`{"i":1}`, `{"i": 2}`, `[3]`, `"4"`)}); err != nil {
		t.Fatal(err)
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s2", Revision: 2, Data: json.RawMessage(`[1,2]`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s2", ExpectedRevision: 4, RunID: "q", Items: items(`5`)}); err != nil {
		t.Fatal(err)
	}
	st, err = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(st.Revision, st.SnapshotRevision)
	for _, e := range st.Entries {
		got += fmt.Sprintf(" %d:%s:%d:%s", e.Seq, e.RunID, e.Turn, e.Item)
	}
	if want := `5 2 3:r:2:[3] 4:r:2:"4" 5:q:0:5`; got != want {
		t.Fatalf("load from a snapshot inside an append: %s, want %s", got, want)
	}
}

func testSessionRace(t *testing.T, bb *bundle) {
	h2 := bb.open(t, bb.clock.Now)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := bb.s
			if i%2 == 1 {
				h = h2
			}
			_, err := h.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", Items: items(fmt.Sprint(i))})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st, _ := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if wins.Load() != 1 || st.Revision != 1 || len(st.Entries) != 1 {
		t.Fatalf("wins %d, revision %d, entries %d", wins.Load(), st.Revision, len(st.Entries))
	}
}

func testOnce(t *testing.T, bb *bundle) {
	if _, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "t", Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	rec, err := bb.s.OncePut(bb.ctx, &store.OncePutParams{Tenant: "t", Key: "k", Value: json.RawMessage(`{"v":1}`)})
	if err != nil || string(rec.Value) != `{"v":1}` {
		t.Fatalf("put: %+v %v", rec, err)
	}
	if _, err := bb.s.OncePut(bb.ctx, &store.OncePutParams{Tenant: "t", Key: "k", Value: json.RawMessage(`{"v":2}`)}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second put: %v", err)
	}
	rec, err = bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "t", Key: "k"})
	if err != nil || string(rec.Value) != `{"v":1}` {
		t.Fatalf("get: %+v %v", rec, err)
	}
}

func testInvalid(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	cases := map[string]error{
		"create without tenant": func() error {
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("", "x")})
			return err
		}(),
		"checkpoint not JSON": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{`)}})
			return err
		}(),
		"unknown ledger state": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Ledger: []store.LedgerWrite{{Entry: entry("t", "r", "c", 0, "bogus")}}})
			return err
		}(),
		"entry of another run": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Ledger: []store.LedgerWrite{{Entry: entry("t", "other", "c", 0, store.LedgerPrepared)}}})
			return err
		}(),
		"claim without ttl": func() error {
			_, err := acquire(bb, "k", "h", 0)
			return err
		}(),
	}
	reads := map[string]func() error{
		"RunGet without tenant": func() error {
			_, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{ID: "r"})
			return err
		},
		"RunGet nil params": func() error {
			_, err := bb.s.RunGet(bb.ctx, nil)
			return err
		},
		"RunList unknown status": func() error {
			_, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t", Status: "bogus"})
			return err
		},
		"LedgerList without run": func() error {
			_, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t"})
			return err
		},
		"EventList nil params": func() error {
			_, err := bb.s.EventList(bb.ctx, nil)
			return err
		},
		"SessionLoad without tenant": func() error {
			_, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{SessionID: "s"})
			return err
		},
		"ClaimGet without key": func() error {
			_, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t"})
			return err
		},
		"OnceGet nil params": func() error {
			_, err := bb.s.OnceGet(bb.ctx, nil)
			return err
		},
	}
	for name, fn := range reads {
		cases[name] = fn()
	}
	for name, err := range cases {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
	}
}

func testCorrupt(t *testing.T, bb *bundle, corrupt func(t *testing.T, s store.Store, what, tenant, id, callID string)) {
	mustCreate(t, bb, newRun("t", "good"))
	mustCreate(t, bb, newRun("t", "bad"))
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "good",
		Ledger: []store.LedgerWrite{{Entry: entry("t", "good", "ok", 0, store.LedgerPrepared)}, {Entry: entry("t", "good", "broken", 1, store.LedgerPrepared)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", Items: items(`1`, `2`)}); err != nil {
		t.Fatal(err)
	}
	corrupt(t, bb.s, "run", "t", "bad", "")
	corrupt(t, bb.s, "ledger", "t", "good", "broken")
	corrupt(t, bb.s, "session", "t", "s", "")

	wantData := func(what string, err error) {
		t.Helper()
		var de *store.DataError
		if !errors.Is(err, store.ErrData) || !errors.As(err, &de) {
			t.Fatalf("%s: want DataError, got %v", what, err)
		}
	}
	_, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "bad"})
	wantData("RunGet", err)
	if r, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "good"}); err != nil || r.Revision != 1 {
		t.Fatalf("a healthy run became unreadable: %v", err)
	}
	runs, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t"})
	wantData("RunList", err)
	if len(runs) != 1 || runs[0].ID != "good" {
		t.Fatalf("RunList with a corrupt row: %d runs, want the healthy one", len(runs))
	}
	_, err = bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "good", CallID: "broken"})
	wantData("LedgerGet", err)
	_, err = bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "good"})
	wantData("LedgerList", err)
	if e, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "good", CallID: "ok"}); err != nil || e.State != store.LedgerPrepared {
		t.Fatalf("a healthy entry became unreadable: %v", err)
	}
	_, err = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	wantData("SessionLoad", err)
	// Writes to healthy records go on working.
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "good",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatalf("write after corruption elsewhere: %v", err)
	}
}
