package storesqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"time"
)

// The write connection.
//
// The commit queue runs one write transaction of a Store at a time (its
// single leader, see commit.go), and SQLite has one writer anyway; so the
// Store keeps one connection for its write transactions, with its own
// prepared statements, and begins and ends them with BEGIN IMMEDIATE and
// COMMIT statements rather than a *sql.Tx. A *sql.Tx costs every write a
// goroutine (database/sql watches its context until it ends) and each
// query in it another (sql.Rows watches the transaction's context), and
// rebinds each cached statement to the transaction's connection
// (Tx.StmtContext): on the pure-Go driver about a tenth of a run write's
// CPU, with the wake-ups those goroutines cause (BenchmarkCallWrites).
//
// Nothing else changes: the same statements in the same transaction on a
// connection of the same pool (same DSN, pragmas and busy timeout). When a
// transaction cannot be ended (a ROLLBACK that fails), the connection is
// dropped and the next write opens another, so no write ever starts inside
// a transaction left open.

// writer is the Store's write connection and its prepared statements.
type writer struct {
	mu    sync.Mutex // held by the transaction that uses conn
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// closed is set by close: no connection is opened after it (a write
	// queued behind Store.Close would keep one for good, and succeed).
	closed bool
	// patience is how long begin waits for the write lock
	// (Config.BusyTimeout).
	patience time.Duration
}

// errClosed is the error of a write made once the Store is closed.
var errClosed = errors.New("storesqlite: the store is closed")

// acquire locks the write connection, opening it if needed. release
// unlocks it.
func (s *Store) acquire(ctx context.Context) (*writer, error) {
	w := &s.w
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errClosed
	}
	if w.conn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			w.mu.Unlock()
			return nil, err
		}
		// The wait for the write lock is begin's own (see there): SQLite
		// gives up at once on this connection.
		if _, err := c.ExecContext(context.WithoutCancel(ctx), "PRAGMA busy_timeout = 0"); err != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
			_ = c.Close()
			w.mu.Unlock()
			return nil, err
		}
		w.conn, w.stmts = c, map[string]*sql.Stmt{}
	}
	w.patience = s.busyTimeout
	return w, nil
}

func (w *writer) release() { w.mu.Unlock() }

// drop closes the connection (held, w.mu locked): the pool discards it,
// with whatever transaction SQLite kept open on it.
func (w *writer) drop() {
	if w.conn == nil {
		return
	}
	for _, st := range w.stmts {
		st.Close()
	}
	// ErrBadConn from Raw makes database/sql close the driver connection
	// instead of returning it to the pool.
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = w.conn.Close()
	w.conn, w.stmts = nil, nil
}

// close drops the connection for good (Store.Close).
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.conn == nil {
		return
	}
	for _, st := range w.stmts {
		st.Close()
	}
	// Not back to the pool: its busy_timeout is 0 (acquire).
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = w.conn.Close()
	w.conn, w.stmts = nil, nil
}

func (w *writer) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = st
	return st, nil
}

// begin starts a write transaction on w, waiting for the write lock
// while another connection holds it, until ctx ends or for
// Config.BusyTimeout, on SQLite's schedule. When it fails, no transaction
// is left open.
//
// The wait is begin's, not SQLite's busy handler's (the write connection
// has busy_timeout 0): the driver watches the context of a statement
// that has a Done channel on a goroutine of its own, started and woken
// for every statement, and the engine's writes have deadlines; so BEGIN
// IMMEDIATE runs on a context without one and, when the lock is taken,
// returns SQLITE_BUSY at once, and begin sleeps and tries again, watching
// ctx itself. A BEGIN that took the lock while ctx ended is rolled back,
// as the driver's report of ctx's end was before
// (TestReview9bCanceledBeginLeavesNoTransaction).
func (w *writer) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	nctx := context.WithoutCancel(ctx)
	var (
		waited time.Duration
		timer  *time.Timer
	)
	for n := 0; ; n++ {
		_, err := w.exec(nctx, "BEGIN IMMEDIATE")
		if err == nil {
			if cerr := ctx.Err(); cerr != nil {
				w.rollback(ctx)
				return cerr
			}
			return nil
		}
		w.rollback(ctx)
		if !isBusy(err) || w.conn == nil {
			return err
		}
		d := min(busyDelay(n), w.patience-waited)
		if d <= 0 {
			return err
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		waited += d
	}
}

// busyDelay is the wait before the n-th retry of a busy BEGIN: SQLite's
// own busy handler's schedule (sqliteDefaultBusyCallback).
func busyDelay(n int) time.Duration {
	delays := [...]time.Duration{1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100}
	return delays[min(n, len(delays)-1)] * time.Millisecond
}

// commit ends w's transaction. It is not interrupted by ctx: a COMMIT
// cut short leaves its outcome to be found out.
func (w *writer) commit(ctx context.Context) error {
	_, err := w.exec(context.WithoutCancel(ctx), "COMMIT")
	return err
}

// rollback ends w's transaction, if SQLite has not already; a failure to
// do so drops the connection.
func (w *writer) rollback(ctx context.Context) {
	if _, err := w.exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		w.drop()
	}
}

func (w *writer) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// wtx runs the statements of a transaction on the write connection, as
// cached prepared statements.
type wtx struct {
	w *writer
	// ctx, when set, replaces the context of every statement (see ptx).
	ctx context.Context
}

func (t wtx) c(ctx context.Context) context.Context {
	if t.ctx != nil {
		return t.ctx
	}
	return ctx
}

func (t wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.w.exec(t.c(ctx), query, args...)
}

func (t wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = t.c(ctx)
	st, err := t.w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = t.c(ctx)
	st, err := t.w.stmt(ctx, query)
	if err != nil {
		// Let the driver report the error through a Row.
		return t.w.conn.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// unprepared returns a querier whose statements are not prepared and
// cached (a migration's many statements).
func (t wtx) unprepared() querier { return t.w.conn }
