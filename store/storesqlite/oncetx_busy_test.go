package storesqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// OnceTx whose record cannot be inserted after fn ran, in a transaction
// that did not take the write lock at its BEGIN (a deferred one: a
// read-only BeginTx, or a handle of the caller's own): another handle
// commits while fn runs, so the transaction's snapshot is stale when the
// record is inserted (SQLITE_BUSY_SNAPSHOT), or holds the write lock past
// the busy timeout (SQLITE_BUSY). fn ran in the caller's transaction, so
// the error must not be a store.ErrBusy, whose contract is "nothing was
// written, call again as is": called again in that transaction fn ran a
// second time, and against a stale snapshot it never succeeds. It is a
// *storesqlite.NotRecordedError (Busy set): the caller rolls back and makes
// the transaction again, where fn runs and its record is inserted. On main
// the error was a *store.BusyError.
func TestOnceTxBusyAfterFnRan(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stale snapshot", "lock held"} {
		t.Run(how, func(t *testing.T) {
			bb := setup(t)
			bb.s.Close()
			s := open(t, bb.path, &storesqlite.Config{BusyTimeout: 30 * time.Millisecond})
			other := open(t, bb.path, &storesqlite.Config{BusyTimeout: 30 * time.Millisecond})
			ctx := context.Background()
			var locked *sql.Tx
			defer func() {
				if locked != nil {
					locked.Rollback()
				}
			}()
			ran := 0
			fn := func(tx *sql.Tx) (json.RawMessage, error) {
				ran++
				var n int
				if err := tx.QueryRow(`SELECT COUNT(*) FROM once_records`).Scan(&n); err != nil {
					return nil, err
				}
				if ran == 1 {
					switch how {
					case "stale snapshot":
						if _, err := other.OncePut(ctx, &store.OncePutParams{Tenant: "t", Key: "elsewhere", Value: json.RawMessage(`1`)}); err != nil {
							return nil, err
						}
					case "lock held":
						var err error
						if locked, err = other.DB().BeginTx(ctx, nil); err != nil { // BEGIN IMMEDIATE
							return nil, err
						}
					}
				}
				return json.RawMessage(`{"seen":1}`), nil
			}
			tx, err := s.DB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // a deferred BEGIN
			if err != nil {
				t.Fatal(err)
			}
			_, didRun, err := storesqlite.OnceTx(ctx, tx, "t", "k", fn)
			if err == nil || !didRun || ran != 1 {
				t.Fatalf("OnceTx: ran=%v (fn %d times) %v, want an error after fn ran", didRun, ran, err)
			}
			if errors.Is(err, store.ErrBusy) {
				t.Fatalf("OnceTx: %v matches store.ErrBusy (call again as is), but fn ran in the caller's transaction", err)
			}
			var nr *storesqlite.NotRecordedError
			if !errors.As(err, &nr) || !nr.Busy || nr.Key != "k" {
				t.Fatalf("OnceTx: %v (%T), want a *storesqlite.NotRecordedError with Busy", err, err)
			}
			t.Logf("%v", err)
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if locked != nil {
				if err := locked.Rollback(); err != nil {
					t.Fatal(err)
				}
				locked = nil
			}
			// The transaction made again: fn runs in it, its record is inserted.
			tx, err = s.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			v, didRun, err := storesqlite.OnceTx(ctx, tx, "t", "k", fn)
			if err != nil || !didRun || string(v) != `{"seen":1}` {
				t.Fatalf("again: %s %v %v", v, didRun, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			rec, err := s.OnceGet(ctx, &store.OnceGetParams{Tenant: "t", Key: "k"})
			if err != nil || string(rec.Value) != `{"seen":1}` || ran != 2 {
				t.Fatalf("record %+v %v, fn ran %d times", rec, err, ran)
			}
		})
	}
}
