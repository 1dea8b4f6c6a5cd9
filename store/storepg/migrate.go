package storepg

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store/internal/migrations"
)

// Migrations are numbered files, NNN_name.sql, applied in order, each in
// the transaction that holds the migration lock. {{schema}} in a file is
// replaced by the quoted schema name.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration = migrations.Migration

func loadMigrations() ([]migration, error) {
	ms, err := migrations.Load(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("storepg: %w", err)
	}
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
		known := int64(migrations.Newest(ms))
		for _, v := range applied {
			done[v] = true
			if v > known {
				return fmt.Errorf("schema %s is at version %d, newer than this build knows (%d): upgrade actoviq", s.schema, v, known)
			}
		}
		for _, m := range ms {
			if done[int64(m.Version)] {
				continue
			}
			// Simple protocol: a migration file holds several statements.
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.SQL, "{{schema}}", s.quoted), pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, s.q("INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)"),
				m.Version, m.Name); err != nil {
				return fmt.Errorf("record %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
