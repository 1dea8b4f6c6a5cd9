package storepg

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Migrations are numbered files, NNN_name.sql, applied in order, each in
// the transaction that holds the migration lock. {{schema}} in a file is
// replaced by the quoted schema name.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, f := range files {
		base := path.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("storepg: migration %s: name must be NNN_name.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("storepg: migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// lockKey is the advisory lock that serialises migrations of one schema
// across processes. Different schemas migrate independently.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("actoviq-go/storepg migrate " + schema))
	return int64(h.Sum64())
}

// migrate creates the schema if needed and applies pending migrations. The
// transaction first takes pg_advisory_xact_lock, so concurrent processes
// opening the same schema apply each migration once; the losers wait, then
// find nothing left to do. A schema migrated by a newer binary (a version
// this one does not know) is refused, as storesqlite does: this binary
// would write rows in a shape the newer one does not expect.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.inTx(ctx, "migrate schema "+s.schema, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(s.schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.quoted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q(`CREATE TABLE IF NOT EXISTS {{schema}}.schema_migrations (
			version    bigint PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, s.q("SELECT version FROM {{schema}}.schema_migrations"))
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		done := map[int64]bool{}
		known := int64(0)
		if len(ms) > 0 {
			known = int64(ms[len(ms)-1].version)
		}
		for _, v := range applied {
			done[v] = true
			if v > known {
				return fmt.Errorf("schema %s is at version %d, newer than this build knows (%d): upgrade actoviq", s.schema, v, known)
			}
		}
		for _, m := range ms {
			if done[int64(m.version)] {
				continue
			}
			// Simple protocol: a migration file holds several statements.
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.sql, "{{schema}}", s.quoted), pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, s.q("INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)"),
				m.version, m.name); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
		}
		return nil
	})
}
