package storepg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// schemaBefore makes a fresh schema (named prefix and random hex) holding
// the migrations before the first one stop matches, as a version of this
// package that knew only those left it, for a test of the migrations
// after: the test seeds the rows the older version wrote with exec (a
// statement with {{schema}} replaced by the quoted schema; it fails the
// test on an error), then opens url with this package on schema. The
// schema is dropped when the test ends; the test is skipped without
// ACTOVIQ_TEST_PG_URL. It fails the test when stop matches no migration:
// a stop that never matches would apply every migration before the
// seeding, and the test would not test the migration at all.
func schemaBefore(t *testing.T, prefix string, stop func(migration) bool) (url, schema string, exec func(q string, args ...any)) {
	t.Helper()
	url = os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	ctx := context.Background()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema = prefix + hex.EncodeToString(b)
	quoted := pgx.Identifier{schema}.Sanitize()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP SCHEMA `+quoted+` CASCADE`)
		conn.Close(context.Background())
	})
	exec = func(q string, args ...any) {
		t.Helper()
		mode := []any{}
		if len(args) == 0 {
			mode = append(mode, pgx.QueryExecModeSimpleProtocol)
		}
		if _, err := conn.Exec(ctx, strings.ReplaceAll(q, "{{schema}}", quoted), append(mode, args...)...); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	exec(`CREATE SCHEMA ` + quoted)
	exec(`CREATE TABLE {{schema}}.schema_migrations (version bigint PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range ms {
		if stop(m) {
			return url, schema, exec
		}
		exec(m.SQL)
		exec(`INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	}
	t.Fatal("schemaBefore: no migration matches stop")
	return "", "", nil
}
