package storesqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/actoviq/actoviq-go/store"
)

// TestLedgerTransitionCompiledOnce counts, through an SQLite authorizer
// (called each time a statement is compiled), how often the statements
// that insert into events are compiled while a run records 30 calls as
// the engine does (each call: its entry, started, committed; a new call
// id each time). Each statement is compiled once per connection; before
// its parameters were numbered, the transition statement was compiled
// again on about every call (SQLite re-prepares a statement whose
// parameters past the 31st were used by the planner), a quarter of the
// write's CPU.
func TestLedgerTransitionCompiledOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "compile.db")
	var compiles atomic.Int64
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, dsn string) error {
		if !strings.Contains(dsn, path) {
			return nil
		}
		r, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the driver has no authorizer")
		}
		return r.RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, table, _, _, _ string) sqlite.AuthorizerReturnCode {
			if action == sqlite.AuthInsert && table == "events" {
				compiles.Add(1)
			}
			return sqlite.AuthorizerOK
		})
	})
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r"), Holder: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}
	call := func(i int) {
		id := fmt.Sprint("call-", i)
		e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: id, Tool: "pay", Effect: "side-effect",
			State: store.LedgerPrepared, IdempotencyKey: "r:" + id, ArgsDigest: "d", Args: json.RawMessage(`{"n":1}`)}
		var rev int64
		for _, st := range []store.LedgerState{store.LedgerPrepared, store.LedgerStarted, store.LedgerCommitted} {
			next := *e
			next.State = st
			res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
				Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: rev,
					Event: &store.EventRecord{Type: "tool." + string(st), Data: json.RawMessage(`{}`)}}}})
			if err != nil {
				t.Fatal(err)
			}
			rev = res.Ledger[0].Revision
		}
	}
	call(0)
	before := compiles.Load()
	if before == 0 {
		t.Fatal("the authorizer saw no compile of an insert into events: the hook is not installed")
	}
	const calls = 30
	for i := 1; i <= calls; i++ {
		call(i)
	}
	// A connection the pool opens meanwhile compiles the statement once
	// more; a compile per call would be 30.
	if n := compiles.Load() - before; n > 4 {
		t.Errorf("%d calls (%d writes) compiled an insert into events %d times, want at most 4", calls, 3*calls, n)
	}
}
