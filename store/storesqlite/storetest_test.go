package storesqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Name: "sqlite",
		// One file per test; every handle is its own *sql.DB with its own
		// connections, as a second process would have.
		NewDatabase: func(t *testing.T) func(*testing.T, store.Clock) store.Store {
			path := filepath.Join(t.TempDir(), "actoviq.db")
			return func(t *testing.T, clock store.Clock) store.Store {
				return open(t, path, &storesqlite.Config{Clock: clock})
			}
		},
		Corrupt: func(t *testing.T, s store.Store, what, tenant, id, callID string) {
			corrupt(t, dbPath(t, s.(*storesqlite.Store).DB()), what, tenant, id, callID)
		},
	})
}

// open opens a store and closes it at the end of the test.
func open(t testing.TB, path string, cfg *storesqlite.Config) *storesqlite.Store {
	t.Helper()
	s, err := storesqlite.Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// dbPath asks SQLite for the file a database handle uses.
func dbPath(t testing.TB, db *sql.DB) string {
	t.Helper()
	var seq int
	var name, file string
	if err := db.QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

// corrupt damages one stored row with raw SQL through a second, unrelated
// *sql.DB on the same file, the way a bad disk or a careless operator
// would: the JSON column no longer decodes.
func corrupt(t testing.TB, path, what, tenant, id, callID string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res sql.Result
	switch what {
	case "run":
		res, err = db.Exec(`UPDATE runs SET checkpoint = '{not json' WHERE tenant = ? AND id = ?`, tenant, id)
	case "ledger":
		res, err = db.Exec(`UPDATE ledger SET result = '{not json' WHERE tenant = ? AND run_id = ? AND call_id = ?`, tenant, id, callID)
	case "session":
		res, err = db.Exec(`UPDATE session_journal SET item = '{not json' WHERE tenant = ? AND session_id = ?
			AND seq = (SELECT MAX(seq) FROM session_journal WHERE tenant = ? AND session_id = ?)`, tenant, id, tenant, id)
	default:
		t.Fatalf("corrupt: unknown record kind %q", what)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupt %s %s %s: %d rows changed", what, id, callID, n)
	}
}
