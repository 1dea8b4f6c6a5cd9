package crashtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// The stores written by earlier versions, under testdata/<dir>: sqlite.db,
// and pg.sql (pg_dump --inserts of its schema, the schema name replaced by
// {{schema}}), each made by the dir's mkfixture.go.txt. This version opens
// a copy, and its migrations take it forward in place.

// fixtureSQLite opens a copy of testdata/<dir>/sqlite.db; it is closed at
// the end of the test.
func fixtureSQLite(t *testing.T, dir string) *storesqlite.Store {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, "sqlite.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := storesqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fixturePG loads testdata/<dir>/pg.sql into a new schema of the test
// server and opens it; the store is closed and the schema dropped at the
// end of the test.
func fixturePG(t *testing.T, dir string) *storepg.Store {
	t.Helper()
	pgAvailable(t)
	ctx := context.Background()
	url := os.Getenv(pgURLEnv)
	script, err := os.ReadFile(filepath.Join("testdata", dir, "pg.sql"))
	if err != nil {
		t.Fatal(err)
	}
	schema := "old_" + randHex(6)
	// A scratch store lends its pool to load the dump (a script without
	// parameters runs as one simple-protocol exchange).
	scratch := newPGTarget(t)
	admin, err := storepg.Open(ctx, url, &storepg.Config{Schema: scratch.Schema, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Pool().Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
		admin.Close()
	})
	if _, err := admin.Pool().Exec(ctx, strings.ReplaceAll(string(script), "{{schema}}", `"`+schema+`"`)); err != nil {
		t.Fatalf("load the old store: %v", err)
	}
	st, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
