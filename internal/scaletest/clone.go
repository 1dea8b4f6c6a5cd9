package scaletest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Clone says how to copy one finished run, written by the real code (a
// template: its run row, its released claim, its run log, its events and
// ledger rows), into many: a store whose history is what the code writes,
// made in a few statements. Copy n (from 1) is named Prefix + "h" + n
// zero-padded to 8 digits; its times are the template's moved so that it
// was created at Base + n seconds; the template's id in idempotency keys
// and event data becomes the copy's id; event ids are new random ones.
type Clone struct {
	Tenant   string
	Template string
	// N copies of the run row, its claim and its run log (the
	// transcript: a run without it does not read back).
	N int
	// History is how many of the copies (the first ones) also get the
	// template's events and ledger rows (0: none; N: all): the bulk of
	// the bytes.
	History int
	Base    time.Time
	Prefix  string
}

// HistoryID names the n-th copy.
func HistoryID(prefix string, n int) string { return fmt.Sprintf("%sh%08d", prefix, n) }

// sqliteTimes are the columns of microseconds since the epoch.
var sqliteTimes = map[string]bool{"created_at": true, "updated_at": true, "deadline": true, "expires_at": true,
	"heartbeat_at": true, "time": true, "entry_created": true, "entry_updated": true, "started_at": true, "committed_at": true}

// CloneSQLite copies the template c.Template in a storesqlite database.
func CloneSQLite(ctx context.Context, db *sql.DB, c Clone) error {
	var t0 int64
	if err := db.QueryRowContext(ctx, `SELECT created_at FROM runs WHERE tenant = ? AND id = ?`, c.Tenant, c.Template).Scan(&t0); err != nil {
		return fmt.Errorf("scaletest: template %q: %w", c.Template, err)
	}
	shift := fmt.Sprintf("(%d - %d + gi * 1000000)", c.Base.UnixMicro(), t0)
	newID := `(?3 || printf('h%08d', gi))`
	tables := []struct {
		name, runCol string
		n            int
	}{
		{"runs", "id", c.N}, {"claims", "key", c.N}, {"run_log", "run_id", c.N}, {"events", "run_id", c.History}, {"ledger", "run_id", c.History},
		// The calls of the events rows of several records, indexed by call
		// (storesqlite migration 0017): copied with the rows.
		{"event_calls", "run_id", c.History},
	}
	for _, tb := range tables {
		if tb.n == 0 {
			continue
		}
		rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, tb.name)
		if err != nil {
			return err
		}
		var cols, exprs []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			e := "t." + name
			switch {
			case name == tb.runCol && name == "key":
				e = "'run:' || " + newID
			case name == tb.runCol:
				e = newID
			case tb.name == "events" && name == "id":
				e = "lower(hex(randomblob(16)))"
			case sqliteTimes[name]:
				e = "t." + name + " + " + shift
			case name == "idempotency_key" || name == "data":
				e = "replace(t." + name + ", ?2, " + newID + ")"
			}
			cols = append(cols, name)
			exprs = append(exprs, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		where := "t.run_id = ?2"
		switch tb.name {
		case "runs":
			where = "t.id = ?2"
		case "claims":
			where = "t.key = 'run:' || ?2"
		}
		q := `WITH RECURSIVE g(gi) AS (SELECT 1 WHERE ?4 > 0 UNION ALL SELECT gi + 1 FROM g WHERE gi < ?4)
			INSERT INTO ` + tb.name + ` (` + strings.Join(cols, ", ") + `)
			SELECT ` + strings.Join(exprs, ", ") + ` FROM g, ` + tb.name + ` t
			WHERE t.tenant = ?1 AND ` + where
		if _, err := db.ExecContext(ctx, q, c.Tenant, c.Template, c.Prefix, tb.n); err != nil {
			return fmt.Errorf("scaletest: clone %s: %w", tb.name, err)
		}
	}
	return nil
}

// ClonePostgreSQL copies the template c.Template in a storepg schema
// (quoted), then vacuums and analyzes the tables.
func ClonePostgreSQL(ctx context.Context, db PGQuery, quoted string, c Clone) error {
	tables := []struct {
		name, runCol string
		n            int
	}{
		{"runs", "id", c.N}, {"claims", "key", c.N}, {"run_log", "run_id", c.N}, {"events", "run_id", c.History}, {"ledger", "run_id", c.History},
	}
	for _, tb := range tables {
		if tb.n == 0 {
			continue
		}
		schema := strings.Trim(quoted, `"`)
		names, err := db.Columns(ctx, schema, tb.name)
		if err != nil {
			return err
		}
		var exprs []string
		for _, col := range names {
			name, typ := col[0], col[1]
			e := "t." + name
			switch {
			case name == tb.runCol && name == "key":
				e = "'run:' || " + `($3::text || 'h' || lpad(gi::text, 8, '0'))`
			case name == tb.runCol:
				e = `($3::text || 'h' || lpad(gi::text, 8, '0'))`
			case tb.name == "events" && name == "id":
				e = "md5(random()::text || gi::text)"
			case typ == "timestamp with time zone":
				e = "t." + name + " + (t0.b - t0.c) + gi * interval '1 second'"
			case name == "idempotency_key" || name == "data":
				e = "replace(t." + name + ", $2, ($3::text || 'h' || lpad(gi::text, 8, '0')))"
			}
			exprs = append(exprs, e)
		}
		where := "t.run_id = $2"
		switch tb.name {
		case "runs":
			where = "t.id = $2"
		case "claims":
			where = "t.key = 'run:' || $2"
		}
		q := `INSERT INTO ` + quoted + `.` + tb.name + ` (` + joinFirst(names) + `)
			SELECT ` + strings.Join(exprs, ", ") + `
			FROM generate_series(1, $5::int) gi, ` + quoted + `.` + tb.name + ` t,
				(SELECT created_at AS c, $4::timestamptz AS b FROM ` + quoted + `.runs WHERE tenant = $1 AND id = $2) t0
			WHERE t.tenant = $1 AND ` + where + `
			ON CONFLICT DO NOTHING`
		if err := db.Exec(ctx, q, c.Tenant, c.Template, c.Prefix, c.Base, tb.n); err != nil {
			return fmt.Errorf("scaletest: clone %s: %w", tb.name, err)
		}
	}
	for _, tb := range []string{"runs", "claims", "events", "run_log", "ledger", "run_counts", "held_counts"} {
		if err := db.Exec(ctx, `VACUUM ANALYZE `+quoted+`.`+tb); err != nil {
			return err
		}
	}
	return nil
}

// PGPool is the PGQuery of a pool (a storepg store's Pool()); its Exec
// method is an [Exec] for PostgreSQL.
type PGPool struct{ Pool *pgxpool.Pool }

// Exec runs q.
func (p PGPool) Exec(ctx context.Context, q string, args ...any) error {
	_, err := p.Pool.Exec(ctx, q, args...)
	return err
}

// Columns implements [PGQuery].
func (p PGPool) Columns(ctx context.Context, schema, table string) ([][2]string, error) {
	rows, err := p.Pool.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var c [2]string
		err := row.Scan(&c[0], &c[1])
		return c, err
	})
}

// PGQuery is what ClonePostgreSQL needs of a connection.
type PGQuery interface {
	Exec(ctx context.Context, q string, args ...any) error
	// Columns returns the name and data type of each column of the
	// table, in order.
	Columns(ctx context.Context, schema, table string) ([][2]string, error)
}

func joinFirst(cols [][2]string) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = c[0]
	}
	return strings.Join(s, ", ")
}
