package storepg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// Tests of what is specific to PostgreSQL: separate pools racing as
// separate processes would, raw-SQL damage, migrations and OnceTx. The
// shared behaviour is covered by storetest (storetest_test.go).

var ctx = context.Background()

func mustCreateRun(t *testing.T, s store.Store, tenant, id string, status store.RunStatus) *store.Run {
	t.Helper()
	r, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: tenant, ID: id, AgentID: "a",
		Status: status, Checkpoint: json.RawMessage(`{"z":1, "a":[2]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConfig(t *testing.T) {
	testURL(t)
	for _, schema := range []string{"Upper", "1abc", "a-b", `a"b`, "x234567890123456789012345678901234567890123456789012345678901234"} {
		if _, err := storepg.Open(ctx, testURL(t), &storepg.Config{Schema: schema}); err == nil {
			t.Errorf("schema %q accepted", schema)
		}
	}
}

// TestMigrateConcurrent opens one new schema from several pools at once:
// the advisory lock makes them apply each migration once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			s, err := storepg.Open(ctx, testURL(t), &storepg.Config{Schema: schema, MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t, schema, nil)
	var n int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema}.Sanitize()+".schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(files) {
		t.Fatalf("schema_migrations has %d rows, want one per migration file (%d)", n, len(files))
	}
}

// TestCheckpointBytes: JSON is stored as text, byte for byte.
func TestCheckpointBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := mustCreateRun(t, b.s, "t", "r1", store.RunRunning)
	got, err := b.s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Checkpoint) != `{"z":1, "a":[2]}` || string(r.Checkpoint) != string(got.Checkpoint) {
		t.Fatalf("checkpoint = %s", got.Checkpoint)
	}
}

// TestRunWritePools races writers on separate pools at one revision,
// round after round: exactly one wins each round.
func TestRunWritePools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stores := []*storepg.Store{b.s, openStore(t, b.schema, b.clock.Now), openStore(t, b.schema, b.clock.Now)}
	mustCreateRun(t, b.s, "t", "r", store.RunRunning)
	for rev := int64(1); rev <= 20; rev++ {
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			s := stores[i%len(stores)]
			wg.Go(func() {
				_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
					Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: json.RawMessage(fmt.Sprintf(`{"w":%d}`, i))},
					Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: fmt.Sprintf("c%d", rev),
						Tool: "x", State: store.LedgerPrepared}}}})
				var ce *store.ConflictError
				switch {
				case err == nil:
					wins.Add(1)
				case errors.As(err, &ce) && ce.Kind == "run" && ce.Actual == rev+1:
					conflicts.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 5 {
			t.Fatalf("revision %d: %d wins, %d conflicts", rev, wins.Load(), conflicts.Load())
		}
	}
}

// TestFenceBlocksTakeover holds a fenced write's share lock open (by
// holding the claim row lock the same way, in a raw transaction) and checks
// that a takeover waits for it.
func TestFenceBlocksTakeover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mustCreateRun(t, b.s, "t", "r", store.RunRunning)
	c, err := b.s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: "run:r", Holder: "a", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Second)
	tx, err := b.s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{b.schema}.Sanitize()+".claims WHERE tenant = 't' AND key = 'run:r' FOR SHARE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *store.Claim, 1)
	go func() {
		c2, err := b.s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: "run:r", Holder: "b", TTL: time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- c2
	}()
	// The takeover must be waiting on our lock: pg_locks shows it.
	waitFor(t, func() bool {
		var waiting int
		err := b.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`, b.schema).Scan(&waiting)
		return err == nil && waiting > 0
	})
	select {
	case <-done:
		t.Fatal("takeover did not wait for the share lock")
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := <-done
	if c2 == nil || c2.Epoch != c.Epoch+1 || c2.Holder != "b" {
		t.Fatalf("takeover = %+v", c2)
	}
	_, err = b.s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "a", Epoch: c.Epoch},
		Events: []*store.EventRecord{{Type: "x"}}})
	var fe *store.FencedError
	if !errors.As(err, &fe) || fe.CurrentHolder != "b" || fe.CurrentEpoch != c2.Epoch {
		t.Fatalf("write with the old fence: %v", err)
	}
}

// waitFor polls cond; the state it waits on lives in another process (the
// server), so there is no signal to wait on.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunClaimNextPools: workers on separate pools drain a queue; no run is
// handed out twice.
func TestRunClaimNextPools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const runs, workers = 60, 8
	for i := range runs {
		mustCreateRun(t, b.s, "t", fmt.Sprintf("r%03d", i), store.RunQueued)
		b.clock.Advance(time.Millisecond)
	}
	mustCreateRun(t, b.s, "other", "x", store.RunQueued)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		s := openStore(t, b.schema, b.clock.Now)
		wg.Go(func() {
			for {
				r, c, err := s.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "t", Holder: fmt.Sprintf("w%d", w), TTL: time.Minute})
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if r.Status != store.RunRunning || c.Key != store.RunClaimKey(r.ID) || c.Epoch != 1 || r.Revision != 2 {
					t.Errorf("claimed %+v with %+v", r, c)
				}
				mu.Lock()
				got[r.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != runs {
		t.Fatalf("claimed %d distinct runs, want %d", len(got), runs)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("run %s handed out %d times", id, n)
		}
	}
}

// TestCorruptRows: damage that only raw SQL can make decodes to DataError.
func TestCorruptRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := pgx.Identifier{b.schema}.Sanitize()
	mustCreateRun(t, b.s, "t", "r1", store.RunRunning)
	mustCreateRun(t, b.s, "t", "r2", store.RunRunning)
	if _, err := b.s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r1",
		Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r1", CallID: "c", Tool: "x", State: store.LedgerStarted}}}}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"UPDATE " + q + ".runs SET status = 'zombie' WHERE id = 'r1'",
		"UPDATE " + q + ".ledger SET state = 'lost', approval = '{bad' WHERE call_id = 'c'",
	} {
		if _, err := b.s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var de *store.DataError
	if _, err := b.s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r1"}); !errors.As(err, &de) || de.Kind != "run" || de.ID != "r1" {
		t.Fatalf("RunGet: %v", err)
	}
	if _, err := b.s.RunList(ctx, &store.RunListParams{Tenant: "t"}); !errors.Is(err, store.ErrData) {
		t.Fatalf("RunList: %v", err)
	}
	if _, err := b.s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r2"}); err != nil {
		t.Fatalf("an intact run: %v", err)
	}
	if _, err := b.s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r1", CallID: "c"}); !errors.As(err, &de) || de.Kind != "ledger" || de.ID != "r1/c" {
		t.Fatalf("LedgerGet: %v", err)
	}
	corrupt(t, b.s, "run", "t", "r2", "")
	if _, err := b.s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r2"}); !errors.As(err, &de) || de.ID != "r2" {
		t.Fatalf("RunGet after corrupt: %v", err)
	}
}

// TestOnceTx: concurrent transactions with one key run fn once; its write
// and the record commit together; a rolled-back attempt leaves no record.
func TestOnceTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := pgx.Identifier{b.schema}.Sanitize()
	if _, err := b.s.Pool().Exec(ctx, "CREATE TABLE "+q+".effects (n int)"); err != nil {
		t.Fatal(err)
	}
	// A failed fn rolled back: no record, no effect.
	tx, err := b.s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, _, err := b.s.OnceTx(ctx, tx, "t", "k", func(tx pgx.Tx) (json.RawMessage, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	tx.Rollback(ctx)

	var ran atomic.Int32
	var wg sync.WaitGroup
	vals := make(chan string, 8)
	for i := range 8 {
		s := b.s
		if i%2 == 1 {
			s = openStore(t, b.schema, b.clock.Now)
		}
		wg.Go(func() {
			err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
				v, _, err := s.OnceTx(ctx, tx, "t", "k", func(tx pgx.Tx) (json.RawMessage, error) {
					ran.Add(1)
					_, err := tx.Exec(ctx, "INSERT INTO "+q+".effects VALUES (1)")
					return json.RawMessage(fmt.Sprintf(`{"by":%d}`, i)), err
				})
				vals <- string(v)
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(vals)
	var first string
	for v := range vals {
		if first == "" {
			first = v
		}
		if v != first {
			t.Fatalf("values differ: %s vs %s", v, first)
		}
	}
	var n int
	if err := b.s.Pool().QueryRow(ctx, "SELECT count(*) FROM "+q+".effects").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 || n != 1 {
		t.Fatalf("fn ran %d times, %d effects", ran.Load(), n)
	}
	rec, err := b.s.OnceGet(ctx, &store.OnceGetParams{Tenant: "t", Key: "k"})
	if err != nil || string(rec.Value) != first {
		t.Fatalf("OnceGet = %v, %v", rec, err)
	}
	if _, err := b.s.OncePut(ctx, &store.OncePutParams{Tenant: "t", Key: "k", Value: json.RawMessage(`1`)}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("OncePut over OnceTx: %v", err)
	}
}

// TestSessionLoadAfterSnapshot loads a long session from a snapshot.
func TestSessionLoadAfterSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	items := make([]json.RawMessage, 500)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	}
	rev, err := b.s.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", Items: items, RunID: "r"})
	if err != nil || rev != 500 {
		t.Fatal(rev, err)
	}
	if err := b.s.SessionSnapshotPut(ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 450, Data: json.RawMessage(`"snap"`)}); err != nil {
		t.Fatal(err)
	}
	st, err := b.s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 500 || st.SnapshotRevision != 450 || string(st.Snapshot) != `"snap"` || len(st.Entries) != 50 ||
		st.Entries[0].Seq != 451 || string(st.Entries[49].Item) != `{"i":499}` || st.Entries[0].RunID != "r" {
		t.Fatalf("loaded %+v", st)
	}
}

// A schema migrated by a newer build is refused, not written in an older
// shape.
func TestNewerSchemaRefused(t *testing.T) {
	url := testURL(t)
	ctx := context.Background()
	s := openStore(t, newSchema(t), nil)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO "`+s.Schema()+`".schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
		t.Fatal(err)
	}
	again, err := storepg.Open(ctx, url, &storepg.Config{Schema: s.Schema()})
	if err == nil {
		again.Close()
		t.Fatal("opened a schema migrated by a newer build")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Fatalf("error does not say why: %v", err)
	}
}

// TestOpenWithoutParallelQuery: Open's connections run without parallel
// query unless the URL sets max_parallel_workers_per_gather.
func TestOpenWithoutParallelQuery(t *testing.T) {
	schema := newSchema(t)
	show := func(url string) string {
		t.Helper()
		s, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var v string
		if err := s.Pool().QueryRow(ctx, `SHOW max_parallel_workers_per_gather`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show(testURL(t)); v != "0" {
		t.Errorf("max_parallel_workers_per_gather = %s, want 0", v)
	}
	url := testURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	if v := show(url + sep + "max_parallel_workers_per_gather=3"); v != "3" {
		t.Errorf("max_parallel_workers_per_gather = %s with the URL's 3", v)
	}
}
