package storesqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/journal"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Config configures a [Store]. A nil *Config means all defaults.
type Config struct {
	// Clock gives the time used for timestamps and claim expiry.
	// Default (nil): time.Now.
	Clock store.Clock
	// BusyTimeout is how long a connection waits for a lock held by another
	// connection or process before failing with SQLITE_BUSY.
	// Default (0): 5s. Negative is invalid.
	BusyTimeout time.Duration
	// MaxPageCount caps the database size in pages (PRAGMA max_page_count),
	// applied to every connection. Default (0): no cap beyond SQLite's own.
	// It exists mainly to test the behaviour on a full disk.
	MaxPageCount int64
	// Warn receives what Open has to say about the files it opens: a
	// database, WAL or SHM file that other users can read (it holds
	// transcripts and tool arguments). Default (nil): the standard
	// library's log package (log.Print).
	Warn func(msg string)
}

const defaultBusyTimeout = 5 * time.Second

func (c *Config) validate() error {
	if c.BusyTimeout < 0 {
		return fmt.Errorf("storesqlite: invalid Config.BusyTimeout %v: negative", c.BusyTimeout)
	}
	if c.MaxPageCount < 0 {
		return fmt.Errorf("storesqlite: invalid Config.MaxPageCount %d: negative", c.MaxPageCount)
	}
	return nil
}

// Store is the SQLite implementation of [store.Store]. It is safe for
// concurrent use, and several Stores (in one or many processes) may share
// one database file.
type Store struct {
	db    *sql.DB
	clock store.Clock
	// busyTimeout is Config.BusyTimeout: how long a write waits for the
	// write lock (writer.begin).
	busyTimeout time.Duration
	// commits is the commit queue of this handle's write transactions (see
	// write): its own goroutines queue here instead of polling SQLite's
	// busy handler, and the writes queued while one commit is syncing
	// share the next one. Other handles and processes are serialised by
	// BEGIN IMMEDIATE.
	commits commitQueue
	stats   counters
	// stmts caches prepared statements by query text; database/sql
	// prepares each once per pooled connection. Parsing SQL costs more CPU
	// than executing these short statements.
	stmts sync.Map // string -> *sql.Stmt
	// w is the connection of the write transactions (writer.go).
	w writer

	// compactor runs the log compactions on goroutines of the store (see
	// compactLater); Close waits for them.
	compactor journal.Compactor
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it if needed) the database at path and applies the
// embedded migrations. The caller closes the Store.
func Open(path string, cfg *Config) (*Store, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("storesqlite: empty path")
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = defaultBusyTimeout
	}
	if c.Warn == nil {
		c.Warn = func(msg string) { log.Print(msg) }
	}
	if err := private(path, c.Warn); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, &c))
	if err != nil {
		return nil, fmt.Errorf("storesqlite: open %s: %w", path, err)
	}
	s := &Store{db: db, clock: c.Clock, busyTimeout: c.BusyTimeout}
	s.commits = commitQueue{MaxBatch: maxBatch, MaxExtra: maxExtraBatches, Run: s.runBatch}
	if err := s.migrateWaiting(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("storesqlite: open %s: %w", path, err)
	}
	return s, nil
}

// openPatience bounds how long Open waits for other handles that hold the
// database's write lock while it migrates.
const openPatience = time.Minute

// migrateWaiting migrates, trying again while the database is busy. Several
// processes that open one new file at once queue on the migration's write
// lock, and on a loaded machine that queue can outlast one busy timeout;
// the migration is idempotent, so a busy try is simply made again, until
// openPatience has passed.
func (s *Store) migrateWaiting(ctx context.Context) error {
	deadline := time.Now().Add(openPatience)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// isBusy reports SQLite's "database is locked" (SQLITE_BUSY or
// SQLITE_LOCKED, any extended code): another connection holds a lock
// longer than the busy timeout.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// private creates the database file readable and writable by its owner
// only (0600), before SQLite opens it, so that no other user can read it
// even for an instant; SQLite gives the WAL and SHM files it creates
// beside it the database file's mode. A file that exists already is left
// as it is, and a warning names each of the three that other users can
// read or write.
func private(path string, warn func(string)) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return fmt.Errorf("storesqlite: create %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrExist):
	default:
		// Let SQLite say what is wrong with the path (a directory that
		// does not exist, no permission), as before.
		return nil
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			warn(fmt.Sprintf("storesqlite: warning: %s can be read or written by other users (mode %v); it holds transcripts and tool arguments: chmod 600 it", p, perm))
		}
	}
	return nil
}

// dsn builds the driver DSN. The pragmas are DSN parameters so that every
// pooled connection gets them, not just the first. _txlock=immediate makes
// every read-write transaction begin with BEGIN IMMEDIATE, which takes the
// write lock at once: checks made inside a write transaction cannot be
// invalidated by another writer before it commits.
func dsn(path string, c *Config) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(c.BusyTimeout.Milliseconds(), 10) + ")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)",
		"_pragma=foreign_keys(1)",
		"_txlock=immediate",
	}
	if c.MaxPageCount > 0 {
		q = append(q, "_pragma=max_page_count("+strconv.FormatInt(c.MaxPageCount, 10)+")")
	}
	return "file:" + esc + "?" + strings.Join(q, "&")
}

// DB returns the underlying database, for [OnceTx] and for callers that
// keep their own tables in the same file. Transactions begun on it with
// default options start with BEGIN IMMEDIATE. The Store owns it: do not
// close it.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error {
	s.compactor.Close()
	s.w.close()
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	return s.db.Close()
}

// querier is what the statements of one transaction run on: a [*sql.Tx],
// or a [ptx] that runs them as cached prepared statements.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ptx runs a transaction's statements through the Store's prepared
// statement cache.
type ptx struct {
	s  *Store
	tx *sql.Tx
	// ctx, when set, replaces the context of every statement: a write that
	// shares its transaction with others must not be interrupted half-way
	// by its own caller's context, because SQLite rolls back the whole
	// transaction when a statement of it is interrupted.
	ctx context.Context
}

// unprepared returns a querier whose statements are not prepared and
// cached (a migration's many statements).
func (t ptx) unprepared() querier { return t.tx }

func (t ptx) c(ctx context.Context) context.Context {
	if t.ctx != nil {
		return t.ctx
	}
	return ctx
}

func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if v, ok := s.stmts.Load(query); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if v, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

func (t ptx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = t.c(ctx)
	st, err := t.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

func (t ptx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = t.c(ctx)
	st, err := t.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

func (t ptx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = t.c(ctx)
	st, err := t.s.stmt(ctx, query)
	if err != nil {
		// Let the driver report the error through a Row.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

func (s *Store) now() time.Time { return s.clock.Now() }

// read runs fn in one read transaction, so that its statements see one
// snapshot of the database (WAL readers do not block the writer).
func (s *Store) read(ctx context.Context, fn func(tx querier) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(ctx, err)
	}
	defer tx.Rollback()
	if err := fn(ptx{s: s, tx: tx}); err != nil {
		return mapErr(ctx, err)
	}
	return nil
}

// mapErr turns driver errors into the store vocabulary: a full database
// becomes a [*store.FullError]; a lock not taken within the busy timeout a
// [*store.BusyError]; an interruption caused by ctx carries the
// context error. Errors of the store package pass unchanged.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return &store.FullError{Err: err}
		case sqlite3.SQLITE_IOERR:
			if errors.Is(err, syscall.ENOSPC) || strings.Contains(se.Error(), "disk is full") {
				return &store.FullError{Err: err}
			}
		case sqlite3.SQLITE_INTERRUPT:
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("%w (%w)", cerr, err)
			}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			// The lock was not taken within the busy timeout: the
			// statement, or BEGIN IMMEDIATE, failed, and the transaction
			// is rolled back (a COMMIT that fails so is too: see
			// writeOne), so nothing of it was written.
			return &store.BusyError{Err: err}
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return &store.FullError{Err: err}
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) && !isStoreErr(err) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

func isStoreErr(err error) bool {
	for _, target := range []error{store.ErrConflict, store.ErrNotFound, store.ErrExists,
		store.ErrFenced, store.ErrClaimHeld, store.ErrData, store.ErrFull, store.ErrInvalid, store.ErrBusy} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// wrap adds the operation to a driver error; store errors pass unchanged
// because they already name their record.
func wrap(op string, err error) error {
	if err == nil || isStoreErr(err) {
		return err
	}
	return fmt.Errorf("storesqlite: %s: %w", op, err)
}

// isForeignKey reports a foreign key violation: a child row (ledger entry,
// event) written for a run that does not exist.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}
