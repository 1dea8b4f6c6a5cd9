package storesqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/store/storetest"
)

// TestLoad: 32 writers × 100 CAS updates (ACTOVIQ_TEST_LOAD_UPDATES: more) on 4 runs of one file, through
// 4 handles (as 4 processes would). Run with -v for the throughput. The
// busy timeout is 30 s: SQLite's lock waits are not fair, and with eight
// writers per handle one of them can wait past the default 5 s (it then
// gets SQLITE_BUSY, which is not a conflict).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the load test makes 3,200 synchronous commits or more")
	}
	storetest.Load(t, storetest.Backend{Name: "sqlite",
		NewDatabase: func(t *testing.T) func(*testing.T, store.Clock) store.Store {
			path := filepath.Join(t.TempDir(), "actoviq.db")
			return func(t *testing.T, clock store.Clock) store.Store {
				return open(t, path, &storesqlite.Config{Clock: clock, BusyTimeout: 30 * time.Second})
			}
		}}, storetest.LoadOptions{MaxTime: time.Minute})
}
