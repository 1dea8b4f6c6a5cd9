package storepg_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// holdRun makes the next write of run id wait: another session holds the
// run's advisory lock (the one run_write takes) until the returned func.
func holdRun(t *testing.T, s *storepg.Store, tenant, id string) func() {
	t.Helper()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "actoviq-run/"+tenant+"/"+id); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// openLeaders opens a store of its own whose group commit runs at most
// leaders transactions at once.
func openLeaders(t *testing.T, leaders int) *storepg.Store {
	t.Helper()
	s, err := storepg.Open(ctx, testURL(t), &storepg.Config{Schema: newSchema(t), MaxConns: 8, CommitLeaders: leaders})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitLocked returns once a session waits for run id's advisory lock (of
// tenant t): a write of that run is in flight.
func waitLocked(t *testing.T, s *storepg.Store, id string) {
	t.Helper()
	for {
		var waiting int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
			  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, "actoviq-run/t/"+id).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		runtime.Gosched()
	}
}

func queued(s *storepg.Store, n int) {
	for storepg.QueueLen(s) < n {
		runtime.Gosched()
	}
}

// TestGroupCommit holds one run write in flight, queues writes of other
// runs behind it and checks that they share one transaction; then that a
// batch in which one write conflicts gives every write the answer it
// would have had alone, that a write whose context ended before its batch
// is not sent, and that the fence still holds inside a batch.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s := openLeaders(t, 1)
	const k = 6
	mustCreateRun(t, s, "t", "held", store.RunRunning)
	for i := range k {
		mustCreateRun(t, s, "t", fmt.Sprint("r", i), store.RunRunning)
	}
	claim, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: "run:r0", Holder: "w1", TTL: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	ev := func() []*store.EventRecord { return []*store.EventRecord{{Type: "e"}} }
	write := func(wctx context.Context, id string, rev int64, fence *store.Fence) error {
		_, err := s.RunWrite(wctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: fence,
			Run:    &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: []byte(`{"n":1}`)},
			Events: ev()})
		return err
	}

	round := func(revs []int64, fences []*store.Fence, cancelled int) []error {
		release := holdRun(t, s, "t", "held")
		held := make(chan error, 1)
		go func() {
			_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "held", Events: ev()})
			held <- err
		}()
		// Wait until the held write is in flight: its session waits for
		// the advisory lock.
		waitLocked(t, s, "held")
		errs := make([]error, k)
		var wg sync.WaitGroup
		cctx, cancel := context.WithCancel(ctx)
		for i := range k {
			wctx := ctx
			if i == cancelled {
				wctx = cctx
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = write(wctx, fmt.Sprint("r", i), revs[i], fences[i])
			}()
			queued(s, i+1)
		}
		cancel()
		release()
		wg.Wait()
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		return errs
	}

	before := s.Stats()
	revs := []int64{1, 1, 1, 1, 1, 1}
	fences := make([]*store.Fence, k)
	fences[0] = &store.Fence{Key: "run:r0", Holder: "w1", Epoch: claim.Epoch}
	for i, err := range round(revs, fences, -1) {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	after := s.Stats()
	if c, b := after.Commits-before.Commits, after.Batched-before.Batched; c != 2 || b != k {
		t.Errorf("the held write and %d queued ones took %d commits (%d batched), want 2 (%d batched)", k, c, b, k)
	}

	// Second round: write 2 is stale, write 4's context ends while it
	// waits, write 0's fence is an old epoch; the others go through.
	revs = []int64{2, 2, 1, 2, 2, 2}
	fences[0] = &store.Fence{Key: "run:r0", Holder: "w1", Epoch: claim.Epoch - 1}
	errs := round(revs, fences, 4)
	var conflict *store.ConflictError
	if !errors.As(errs[2], &conflict) || conflict.Expected != 1 || conflict.Actual != 2 {
		t.Errorf("stale write in a batch: %v, want a conflict expected 1 actual 2", errs[2])
	}
	if !errors.Is(errs[0], store.ErrFenced) {
		t.Errorf("write under an old epoch in a batch: %v, want fenced", errs[0])
	}
	if !errors.Is(errs[4], context.Canceled) {
		t.Errorf("write whose context ended in the queue: %v, want context.Canceled", errs[4])
	}
	for _, i := range []int{1, 3, 5} {
		if errs[i] != nil {
			t.Errorf("write %d batched with failing ones: %v", i, errs[i])
		}
	}
	// What is stored is what the answers said.
	for i := range k {
		r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: fmt.Sprint("r", i)})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3)
		if i == 0 || i == 2 || i == 4 {
			want = 2
		}
		if r.Revision != want || r.EventSeq != want-1 {
			t.Errorf("run r%d: revision %d event seq %d, want %d and %d", i, r.Revision, r.EventSeq, want, want-1)
		}
	}
}

// TestGroupCommitLeaders checks Config.CommitLeaders: with 2, two writes
// of runs whose locks are held are in flight at once (each leads its own
// transaction); writes that arrive meanwhile queue, and go together in one
// transaction when a leader is free; every write gets its answer.
func TestGroupCommitLeaders(t *testing.T) {
	t.Parallel()
	s := openLeaders(t, 2)
	const k = 5
	for _, id := range []string{"h1", "h2"} {
		mustCreateRun(t, s, "t", id, store.RunRunning)
	}
	for i := range k {
		mustCreateRun(t, s, "t", fmt.Sprint("r", i), store.RunRunning)
	}
	write := func(id string) error {
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id,
			Run:    &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: []byte(`{"n":1}`)},
			Events: []*store.EventRecord{{Type: "e"}}})
		return err
	}
	before := s.Stats()
	var releases []func()
	errs := make([]error, k+2)
	var wg sync.WaitGroup
	for i, id := range []string{"h1", "h2"} {
		releases = append(releases, holdRun(t, s, "t", id))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k+i] = write(id)
		}()
		// In flight: with one leader, h2's write would queue behind h1's
		// instead and this would never return.
		waitLocked(t, s, id)
	}
	if n := storepg.QueueLen(s); n != 0 {
		t.Fatalf("%d writes queued while two leaders ran, want 0", n)
	}
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(fmt.Sprint("r", i))
		}()
	}
	queued(s, k) // both leaders are busy: the others queue
	for _, release := range releases {
		release()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	after := s.Stats()
	if c, b := after.Commits-before.Commits, after.Batched-before.Batched; c != 3 || b != k {
		t.Errorf("two held writes and %d queued ones took %d commits (%d batched), want 3 (%d batched)", k, c, b, k)
	}
	for _, id := range []string{"h1", "h2", "r0", "r4"} {
		r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if r.Revision != 2 || r.EventSeq != 1 {
			t.Errorf("run %s: revision %d event seq %d, want 2 and 1", id, r.Revision, r.EventSeq)
		}
	}
}

// TestGroupCommitRelease queues writes that release their claims (and
// carry ledger entries) behind a held one: they share one transaction,
// each releases its claim, and what is stored is what each was answered;
// then the same with one write fenced out, whose batch the others leave
// to be written one by one.
func TestGroupCommitRelease(t *testing.T) {
	t.Parallel()
	s := openLeaders(t, 1)
	const k = 4
	mustCreateRun(t, s, "t", "held", store.RunRunning)
	for round := range 2 {
		fences := make([]*store.Fence, k)
		for i := range k {
			id := fmt.Sprint("q", round, "-", i)
			mustCreateRun(t, s, "t", id, store.RunRunning)
			c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(id), Holder: "w", TTL: 3600e9})
			if err != nil {
				t.Fatal(err)
			}
			fences[i] = &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
		}
		if round == 1 {
			fences[2] = &store.Fence{Key: fences[2].Key, Holder: "w", Epoch: fences[2].Epoch + 1}
		}
		release := holdRun(t, s, "t", "held")
		held := make(chan error, 1)
		go func() {
			_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "held", Events: []*store.EventRecord{{Type: "e"}}})
			held <- err
		}()
		waitLocked(t, s, "held")
		before := s.Stats()
		errs := make([]error, k)
		results := make([]*store.RunWriteResult, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprint("q", round, "-", i)
				results[i], errs[i] = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: fences[i], Release: true,
					Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, WaitKind: "approval", Checkpoint: []byte(`{"n":2}`)},
					Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: id, CallID: "c1", Tool: "charge", State: store.LedgerPrepared,
						Args: []byte(`{"cents":1}`)}, Event: &store.EventRecord{Type: "tool.prepared"}}}})
			}()
			queued(s, i+1)
		}
		release()
		wg.Wait()
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		after := s.Stats()
		for i := range k {
			id := fmt.Sprint("q", round, "-", i)
			fenced := round == 1 && i == 2
			if fenced != errors.Is(errs[i], store.ErrFenced) || (!fenced && errs[i] != nil) {
				t.Fatalf("round %d, write %d: %v", round, i, errs[i])
			}
			r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: id})
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.ClaimGet(ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey(id)})
			if err != nil {
				t.Fatal(err)
			}
			if fenced {
				if r.Revision != 1 || !c.ExpiresAt.After(time.Now()) {
					t.Errorf("fenced write %s: revision %d, claim %+v", id, r.Revision, c)
				}
				continue
			}
			if r.Revision != 2 || r.Status != store.RunInterrupted || results[i].Run.Revision != 2 || len(results[i].Ledger) != 1 ||
				results[i].Ledger[0].Revision != 1 || len(results[i].Events) != 1 || results[i].Events[0].Seq != 1 {
				t.Errorf("round %d, write %d: stored revision %d status %s; answered %+v", round, i, r.Revision, r.Status, results[i])
			}
			if c.ExpiresAt.After(time.Now()) {
				t.Errorf("round %d, write %d: claim not released: %+v", round, i, c)
			}
		}
		if c, b := after.Commits-before.Commits, after.Batched-before.Batched; round == 0 && (c != 1 || b != k) {
			t.Errorf("round 0: %d commits, %d batched, want 1 and %d", c, b, k)
		}
	}
}

// TestGroupCommitCreates holds one run creation in flight (its claim's
// insert waits for another session's uncommitted claim under the same
// key) and queues creations behind it: they go in one transaction and
// each gets its answer, a run that exists already among them (which
// stores nothing); then a batch in which one creation fails (a claim
// already under its key) is rolled back and each creation is sent alone,
// with the answer it would have had alone.
func TestGroupCommitCreates(t *testing.T) {
	t.Parallel()
	s := openLeaders(t, 1)
	mustCreateRun(t, s, "t", "there", store.RunRunning)
	create := func(id, holder string) (*store.Run, error) {
		return s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, AgentID: "a", Status: store.RunRunning,
			Checkpoint: []byte(`{}`)}, Holder: holder, TTL: time.Hour, Events: []*store.EventRecord{{Type: "run.started"}}})
	}
	round := func(blocker string, ids []string) ([]*store.Run, []error) {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.Schema()+`.claims (tenant, key, holder, epoch, expires_at, heartbeat_at)
			VALUES ('t', $1, 'x', 1, now(), now())`, store.RunClaimKey(blocker)); err != nil {
			t.Fatal(err)
		}
		held := make(chan error, 1)
		go func() {
			_, err := create(blocker, "w")
			held <- err
		}()
		for {
			var waiting int
			if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND position($1 in query) > 0 AND position('INSERT INTO' in query) > 0`,
				s.Schema()+`".runs`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting > 0 {
				break
			}
			runtime.Gosched()
		}
		runs, errs := make([]*store.Run, len(ids)), make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[i], errs[i] = create(id, "w")
			}()
			for storepg.CreateQueueLen(s) < i+1 {
				runtime.Gosched()
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err := <-held; err != nil {
			t.Fatalf("the held creation: %v", err)
		}
		return runs, errs
	}
	check := func(ids []string, runs []*store.Run, errs []error, exists map[string]string) {
		t.Helper()
		for i, id := range ids {
			if kind, ok := exists[id]; ok {
				var ee *store.ExistsError
				if !errors.As(errs[i], &ee) || ee.Kind != kind {
					t.Errorf("create %s: %v, want a %s that exists", id, errs[i], kind)
				}
				continue
			}
			if errs[i] != nil || runs[i] == nil || runs[i].ID != id || runs[i].Revision != 1 {
				t.Errorf("create %s: %+v, %v", id, runs[i], errs[i])
				continue
			}
			evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: id})
			if err != nil || len(evs) != 1 {
				t.Errorf("run %s: events %v, %v", id, evs, err)
			}
			c, err := s.ClaimGet(ctx, &store.ClaimGetParams{Tenant: "t", Key: store.RunClaimKey(id)})
			if err != nil || c.Holder != "w" {
				t.Errorf("run %s: claim %+v, %v", id, c, err)
			}
		}
	}
	ids := []string{"a1", "a2", "there", "a3"}
	runs, errs := round("b1", ids)
	check(ids, runs, errs, map[string]string{"there": "run"})

	// A claim already under c2's key: c2's create fails in the batch.
	if _, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("c2"), Holder: "y", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ids = []string{"c1", "c2", "c3"}
	runs, errs = round("b2", ids)
	check(ids, runs, errs, map[string]string{"c2": "claim"})
	if _, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "c2"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the run whose claim was taken: %v, want not found", err)
	}
}
