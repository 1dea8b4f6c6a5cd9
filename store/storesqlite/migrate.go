package storesqlite

import (
	"context"
	"embed"
	"fmt"

	"github.com/actoviq/actoviq-go/store/internal/migrations"
)

// Migrations are numbered files, NNNN_name.sql, applied in order. A file,
// once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration = migrations.Migration

func loadMigrations() ([]migration, error) {
	return migrations.Load(migrationFS, "migrations")
}

// migrate applies the migrations that are missing, all in one write
// transaction. BEGIN IMMEDIATE makes a second process that opens the same
// new file wait, then find the versions applied and do nothing. A database
// migrated by a newer version of this package is refused.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	// A database at the newest version needs no write lock: the many
	// processes of a fleet that open one store do not queue for it.
	var current int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err == nil && current == migrations.Newest(ms) {
		return nil
	}
	return s.write(ctx, func(q querier) error {
		// Migration files hold many statements: run them unprepared.
		tx := q.(interface{ unprepared() querier }).unprepared()
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if known := migrations.Newest(ms); current > known {
			return fmt.Errorf("database schema version %d is newer than this package knows (%d)", current, known)
		}
		for _, m := range ms {
			if m.Version <= current {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, micros(s.now())); err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
