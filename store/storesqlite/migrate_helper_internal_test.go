package storesqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// fileBefore makes a SQLite file holding the migrations before the first
// one stop matches, as a version of this package that knew only those
// left it, for a test of the migrations after (a test that seeds the
// rows the older version wrote, closes db and opens path with this
// package). exec runs a statement on it and fails the test on an error.
// It fails the test when stop matches no migration: a stop that never
// matches would apply every migration before the seeding, and the test
// would not test the migration at all.
func fileBefore(t *testing.T, stop func(migration) bool) (path string, db *sql.DB, exec func(q string, args ...any)) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "old.db")
	c := Config{BusyTimeout: defaultBusyTimeout}
	db, err := sql.Open("sqlite", dsn(path, &c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
	for _, m := range ms {
		if stop(m) {
			return path, db, exec
		}
		exec(m.SQL)
		exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`, m.Version, m.Name)
	}
	t.Fatal("fileBefore: no migration matches stop")
	return "", nil, nil
}
