package storesqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

type bundle struct {
	ctx  context.Context
	path string
	s    *storesqlite.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "actoviq.db")
	return &bundle{ctx: context.Background(), path: path, s: open(t, path, nil)}
}

func createRun(t *testing.T, s store.Store, tenant, id string, status store.RunStatus) *store.Run {
	t.Helper()
	r, err := s.RunCreate(context.Background(), &store.RunCreateParams{Run: &store.Run{
		Tenant: tenant, ID: id, AgentID: "a", Status: status, Checkpoint: json.RawMessage(`{"n":0}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPragmasOnEveryConnection(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	db := bb.s.DB()
	// Hold several connections at once so the pool has to open new ones.
	var conns []*sql.Conn
	for range 3 {
		c, err := db.Conn(bb.ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var mode string
		var syncMode, fk, busy int
		if err := c.QueryRowContext(bb.ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(bb.ctx, `PRAGMA synchronous`).Scan(&syncMode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(bb.ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(bb.ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || syncMode != 2 || fk != 1 || busy != 5000 {
			t.Errorf("conn %d: journal_mode=%s synchronous=%d foreign_keys=%d busy_timeout=%d", i, mode, syncMode, fk, busy)
		}
		c.Close()
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := storesqlite.Open(filepath.Join(dir, "x.db"), &storesqlite.Config{BusyTimeout: -1}); err == nil ||
		!strings.Contains(err.Error(), "BusyTimeout") {
		t.Fatalf("negative BusyTimeout: %v", err)
	}
	if _, err := storesqlite.Open("", nil); err == nil {
		t.Fatal("empty path accepted")
	}
}

func TestMigrationsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.db")
	// Several independent handles open the same new file at once; every
	// Open must succeed and the schema must be applied once.
	const n = 6
	stores := make([]*storesqlite.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = storesqlite.Open(path, nil)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		stores[i].Close()
	}
	s := open(t, path, nil) // and once more, later
	var rows int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(files) {
		t.Fatalf("schema_migrations has %d rows, want one per migration file (%d)", rows, len(files))
	}
	createRun(t, s, "t", "r", store.RunQueued)

	// A database migrated by a newer package version is refused.
	if _, err := s.DB().Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := storesqlite.Open(path, nil); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

// TestOpenOutwaitsALockHeldPastTheBusyTimeout: a new file whose write lock
// another process holds for longer than the busy timeout (six workers
// migrating one new file on a loaded machine) is still opened and
// migrated once the lock is free; Open does not fail with "database is
// locked".
func TestOpenOutwaitsALockHeldPastTheBusyTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.db")
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		s, err := storesqlite.Open(path, &storesqlite.Config{BusyTimeout: 20 * time.Millisecond})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	// The lock is held ten busy timeouts: that is the case under test,
	// not a wait for the goroutine.
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-opened:
		t.Fatalf("Open returned while the lock was held: %v", err)
	default:
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open after the lock was freed: %v", err)
	}
}

// Two handles (separate pools, as two processes would have) race RunWrite
// on the same revision under the same fence: exactly one wins, the other
// gets a ConflictError carrying both revisions.
func TestTwoHandlesRaceRunWrite(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	other := open(t, bb.path, nil)
	createRun(t, bb.s, "t", "r", store.RunRunning)
	c, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r"), Holder: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}
	for round := range 20 {
		cur, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, h := range []*storesqlite.Store{bb.s, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
					Run:    &store.RunUpdate{ExpectedRevision: cur.Revision, Status: store.RunRunning, Checkpoint: json.RawMessage(fmt.Sprintf(`{"h":%d}`, i))},
					Events: []*store.EventRecord{{Type: "write"}}})
			}()
		}
		close(start)
		wg.Wait()
		var wins int
		for _, err := range errs {
			var ce *store.ConflictError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &ce):
				if ce.Kind != "run" || ce.Expected != cur.Revision || ce.Actual != cur.Revision+1 {
					t.Fatalf("round %d: conflict %+v", round, ce)
				}
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners", round, wins)
		}
	}
	r, _ := other.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if r.Revision != 21 || r.EventSeq != 20 {
		t.Fatalf("after 20 rounds: revision %d event_seq %d", r.Revision, r.EventSeq)
	}
}

// A fence is checked inside the write transaction: after a takeover on
// another handle, the old holder's write changes nothing.
func TestFenceAcrossHandles(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	path := filepath.Join(t.TempDir(), "f.db")
	a := open(t, path, &storesqlite.Config{Clock: clock})
	b := open(t, path, &storesqlite.Config{Clock: clock})
	ctx := context.Background()
	createRun(t, a, "t", "r", store.RunRunning)
	key := store.RunClaimKey("r")
	ca, err := a.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "a", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "b", TTL: time.Second}); !errors.Is(err, store.ErrClaimHeld) {
		t.Fatalf("live claim taken over: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	cb, err := b.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "b", TTL: time.Second})
	if err != nil || cb.Epoch != ca.Epoch+1 {
		t.Fatalf("takeover: %+v %v", cb, err)
	}
	_, err = a.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: key, Holder: "a", Epoch: ca.Epoch},
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted}})
	var fe *store.FencedError
	if !errors.As(err, &fe) || fe.CurrentHolder != "b" || fe.CurrentEpoch != cb.Epoch {
		t.Fatalf("stale holder write: %v", err)
	}
	// The previous holder re-acquiring after expiry also moves the epoch.
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	ca2, err := a.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "b", TTL: time.Second})
	if err != nil || ca2.Epoch != cb.Epoch+1 {
		t.Fatalf("same holder after expiry: %+v %v", ca2, err)
	}
}

func TestRunListCorruptRow(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	for _, id := range []string{"a", "b", "c"} {
		createRun(t, bb.s, "t", id, store.RunQueued)
	}
	corrupt(t, bb.path, "run", "t", "b", "")
	_, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t"})
	var de *store.DataError
	if !errors.As(err, &de) || de.Kind != "run" || de.ID != "b" {
		t.Fatalf("list with a corrupt row: %v", err)
	}
	for _, id := range []string{"a", "c"} {
		if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: id}); err != nil {
			t.Fatalf("healthy run %s: %v", id, err)
		}
	}
	// An unknown status is corrupt too.
	if _, err := rawDB(t, bb.path).Exec(`UPDATE runs SET status = 'bogus' WHERE id = 'c'`); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "c"}); !errors.As(err, &de) || de.ID != "c" {
		t.Fatalf("unknown status: %v", err)
	}
}

func TestLedgerDecisionCorrupt(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	createRun(t, bb.s, "t", "r", store.RunRunning)
	e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: "c", Tool: "pay", State: store.LedgerAwaitingApproval}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: e}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, bb.path).Exec(`UPDATE ledger SET approval = '{"at":"not a time"}'`); err != nil {
		t.Fatal(err)
	}
	_, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c"})
	var de *store.DataError
	if !errors.As(err, &de) || de.Kind != "ledger" || de.ID != "c" {
		t.Fatalf("decision that does not decode: %v", err)
	}
}

func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A full database fails the write with a FullError, rolls it back
// cleanly, keeps what was there, and works again once there is room.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "full.db")
	ctx := context.Background()
	s, err := storesqlite.Open(path, &storesqlite.Config{MaxPageCount: 40})
	if err != nil {
		t.Fatal(err)
	}
	createRun(t, s, "t", "r", store.RunRunning)
	big := json.RawMessage(`"` + strings.Repeat("x", 3000) + `"`)
	var full error
	written := 0
	for i := range 1000 {
		_, err := s.OncePut(ctx, &store.OncePutParams{Tenant: "t", Key: fmt.Sprint(i), Value: big})
		if err != nil {
			full = err
			break
		}
		written++
	}
	var fe *store.FullError
	if !errors.Is(full, store.ErrFull) || !errors.As(full, &fe) {
		t.Fatalf("after %d writes: want FullError, got %v", written, full)
	}
	if written == 0 {
		t.Fatal("the cap left no room at all")
	}
	// The failed write left nothing behind, and the handle still works for
	// reads and for writes that need no new page.
	if _, err := s.OnceGet(ctx, &store.OnceGetParams{Tenant: "t", Key: fmt.Sprint(written)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("failed write is visible: %v", err)
	}
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, Checkpoint: json.RawMessage(`{"n":1}`)}}); err != nil {
		t.Fatalf("in-place write on a full database: %v", err)
	}
	// A whole RunWrite that needs room fails as a unit.
	_, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run:    &store.RunUpdate{ExpectedRevision: 2, Status: store.RunRunning, Checkpoint: big},
		Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: "c", Tool: "x", State: store.LedgerPrepared, Args: big}}},
		Events: []*store.EventRecord{{Type: "e", Data: big}, {Type: "e", Data: big}}})
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("large RunWrite on a full database: %v", err)
	}
	if r, _ := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"}); r.Revision != 2 || r.EventSeq != 0 {
		t.Fatalf("failed RunWrite left changes: %+v", r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Make room: reopen without the cap.
	s = open(t, path, nil)
	for i := range written {
		rec, err := s.OnceGet(ctx, &store.OnceGetParams{Tenant: "t", Key: fmt.Sprint(i)})
		if err != nil || string(rec.Value) != string(big) {
			t.Fatalf("record %d written before the disk filled: %v", i, err)
		}
	}
	if _, err := s.OncePut(ctx, &store.OncePutParams{Tenant: "t", Key: fmt.Sprint(written), Value: big}); err != nil {
		t.Fatalf("write after making room: %v", err)
	}
	if res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: 2, Status: store.RunRunning, Checkpoint: big}}); err != nil || res.Run.Revision != 3 {
		t.Fatalf("RunWrite after making room: %v", err)
	}
}

func TestContextErrorsPassThrough(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	createRun(t, bb.s, "t", "r", store.RunRunning)
	ctx, cancel := context.WithCancel(bb.ctx)
	cancel()
	_, err := bb.s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Events: []*store.EventRecord{{Type: "x"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	if _, err := bb.s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	if _, err := bb.s.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled load: %v", err)
	}
	r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if r.EventSeq != 0 {
		t.Fatalf("cancelled write stored events")
	}
}

func TestInvalidParams(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	checks := map[string]error{}
	_, checks["RunGet nil"] = bb.s.RunGet(bb.ctx, nil)
	_, checks["RunGet no id"] = bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t"})
	_, checks["RunList bad status"] = bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t", Status: "x"})
	_, checks["LedgerList no tenant"] = bb.s.LedgerList(bb.ctx, &store.LedgerListParams{RunID: "r"})
	_, checks["EventList negative"] = bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: -1})
	_, checks["SessionLoad no id"] = bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t"})
	_, checks["OnceGet no key"] = bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "t"})
	_, checks["ClaimGet no key"] = bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t"})
	_, checks["RunWrite nothing"] = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r"})
	for name, err := range checks {
		var ie *store.InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%s: want InvalidError, got %v", name, err)
		}
	}
}

func TestSessionLargeAndSnapshot(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	var rev int64
	for i := range 10 {
		items := make([]json.RawMessage, 100)
		for j := range items {
			items[j] = json.RawMessage(fmt.Sprint(i*100 + j))
		}
		var err error
		if rev, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: rev, Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: 900, Data: json.RawMessage(`{"upto":900}`)}); err != nil {
		t.Fatal(err)
	}
	st, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 1000 || st.SnapshotRevision != 900 || len(st.Entries) != 100 || st.Entries[0].Seq != 901 || string(st.Entries[99].Item) != "999" {
		t.Fatalf("load: rev %d snap %d entries %d", st.Revision, st.SnapshotRevision, len(st.Entries))
	}
	// A snapshot of a session that has no journal is refused.
	if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "none", Revision: 1, Data: json.RawMessage(`1`)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("snapshot of an empty session: %v", err)
	}
}

func TestOnceTx(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	db := bb.s.DB()
	if _, err := db.Exec(`CREATE TABLE payments (id TEXT PRIMARY KEY, amount INTEGER)`); err != nil {
		t.Fatal(err)
	}
	pay := func(fail bool) (json.RawMessage, bool, error) {
		tx, err := db.BeginTx(bb.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, ran, err := storesqlite.OnceTx(bb.ctx, tx, "t", "pay:1", func(tx *sql.Tx) (json.RawMessage, error) {
			if _, err := tx.Exec(`INSERT INTO payments (id, amount) VALUES ('p1', 5)`); err != nil {
				return nil, err
			}
			if fail {
				return nil, errors.New("boom")
			}
			return json.RawMessage(`{"payment":"p1"}`), nil
		})
		if err != nil {
			tx.Rollback()
			return nil, ran, err
		}
		return v, ran, tx.Commit()
	}
	count := func() (n int) {
		if err := db.QueryRow(`SELECT COUNT(*) FROM payments`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A failed effect rolls back with its (absent) record.
	if _, _, err := pay(true); err == nil || count() != 0 {
		t.Fatalf("failed effect: err %v, %d payments", err, count())
	}
	if _, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "t", Key: "pay:1"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record of a rolled-back effect: %v", err)
	}
	v, ran, err := pay(false)
	if err != nil || !ran || string(v) != `{"payment":"p1"}` {
		t.Fatalf("first run: %s %v %v", v, ran, err)
	}
	v, ran, err = pay(false)
	if err != nil || ran || string(v) != `{"payment":"p1"}` || count() != 1 {
		t.Fatalf("second run: %s %v %v, %d payments", v, ran, err, count())
	}
	rec, err := bb.s.OnceGet(bb.ctx, &store.OnceGetParams{Tenant: "t", Key: "pay:1"})
	if err != nil || string(rec.Value) != `{"payment":"p1"}` {
		t.Fatalf("record: %+v %v", rec, err)
	}
}

func TestRunWriteMissingRun(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	for name, p := range map[string]*store.RunWriteParams{
		"events": {Tenant: "t", RunID: "nope", Events: []*store.EventRecord{{Type: "x"}}},
		"ledger": {Tenant: "t", RunID: "nope", Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "nope", CallID: "c", Tool: "x", State: store.LedgerPrepared}}}},
	} {
		if _, err := bb.s.RunWrite(bb.ctx, p); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s on a missing run: %v", name, err)
		}
	}
}

// The fence rides on the first write statement of a RunWrite, whichever
// it is: a run update, an event sequence bump, a ledger insert or update.
func TestFenceOnEveryFirstStatement(t *testing.T) {
	t.Parallel()
	bb := setup(t)
	createRun(t, bb.s, "t", "r", store.RunRunning)
	key := store.RunClaimKey("r")
	c, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: key, Holder: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	good := &store.Fence{Key: key, Holder: "w", Epoch: c.Epoch}
	entry := func(state store.LedgerState) *store.LedgerEntry {
		return &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: "c", Tool: "pay", State: state}
	}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: good,
		Ledger: []store.LedgerWrite{{Entry: entry(store.LedgerPrepared)}}}); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*store.Fence{
		"old epoch":     {Key: key, Holder: "w", Epoch: c.Epoch - 1},
		"other holder":  {Key: key, Holder: "x", Epoch: c.Epoch},
		"missing claim": {Key: "run:other", Holder: "w", Epoch: 1},
	} {
		for what, p := range map[string]*store.RunWriteParams{
			"run update":    {Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunCompleted}},
			"events":        {Events: []*store.EventRecord{{Type: "x"}}},
			"ledger insert": {Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: "d", Tool: "x", State: store.LedgerPrepared}}}},
			"ledger update": {Ledger: []store.LedgerWrite{{Entry: entry(store.LedgerStarted), ExpectedRevision: 1}}},
		} {
			p.Tenant, p.RunID, p.Fence = "t", "r", f
			if _, err := bb.s.RunWrite(bb.ctx, p); !errors.Is(err, store.ErrFenced) {
				t.Errorf("%s, %s: want ErrFenced, got %v", name, what, err)
			}
		}
	}
	r, _ := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	l, _ := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if r.Revision != 1 || r.EventSeq != 0 || len(l) != 1 || l[0].Revision != 1 {
		t.Fatalf("fenced writes changed data: run %+v, %d entries", r, len(l))
	}
	// With the fence holding, a stale ledger revision is a conflict, not a fence.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: good,
		Ledger: []store.LedgerWrite{{Entry: entry(store.LedgerStarted), ExpectedRevision: 5}}})
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Kind != "ledger" || ce.Expected != 5 || ce.Actual != 1 {
		t.Fatalf("stale revision under a good fence: %v", err)
	}
}

// TestSessionRowsOfOneItem: journal rows written before appends became one
// row each (one row per item, n left at its default) load as before, and
// an append after them goes on from their revision.
func TestSessionRowsOfOneItem(t *testing.T) {
	b := setup(t)
	db := b.s.DB()
	if _, err := db.Exec(`INSERT INTO sessions (tenant, session_id, revision, created_at, updated_at) VALUES ('t', 'old', 2, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	for i, it := range []string{`{"a":1}`, `"b"`} {
		if _, err := db.Exec(`INSERT INTO session_journal (tenant, session_id, seq, run_id, item) VALUES ('t', 'old', ?, 'r', ?)`, i+1, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.s.SessionAppend(b.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "old", ExpectedRevision: 2, RunID: "q",
		Items: []json.RawMessage{json.RawMessage(`3`), json.RawMessage(`[4]`)}}); err != nil {
		t.Fatal(err)
	}
	st, err := b.s.SessionLoad(b.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range st.Entries {
		got = append(got, fmt.Sprintf("%d:%s:%s", e.Seq, e.RunID, e.Item))
	}
	if want := `1:r:{"a":1} 2:r:"b" 3:q:3 4:q:[4]`; strings.Join(got, " ") != want || st.Revision != 4 {
		t.Fatalf("revision %d entries %s, want 4 and %s", st.Revision, strings.Join(got, " "), want)
	}
}
