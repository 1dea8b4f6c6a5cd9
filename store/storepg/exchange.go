package storepg

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/actoviq/actoviq-go/store"
)

// The single run write's exchange with the server.
//
// pgconn's ExecStatement arms a runtime timer around every send (a 15 ms
// "slow write" timer that starts a background reader should the send
// block) and registers the query's context with a watcher. Adding a
// runtime timer wakes a second scheduler thread (runtime.wakep: a futex
// wake, and that thread spins looking for work) on every write, which on
// a small machine costs about as much client CPU as the rest of the write
// and takes a core from the server meanwhile. The write is one Bind,
// Execute and Sync of the prepared run_write and one answer, so it is
// sent and read here on the connection's own protocol frontend, with no
// timer: nothing can block the send, since the server reads the whole
// request before it answers (its answer is one row), and the caller's
// context is watched with context.AfterFunc (the engine's write context
// keeps no timer per write either), which interrupts the exchange by
// setting the connection's deadline, as pgconn's default handler does.
//
// What pgconn does with what the server sends is kept: an error with its
// OnPgError (by default a FATAL one closes the connection), notices and
// notifications to their handlers. A connection is not given back to the
// pool after anything that leaves its state unknown to pgconn (an I/O
// error, an interrupted exchange, a parameter status, a transaction
// status other than idle): it is closed.

// exchange sends conn's prepared statement sd with the parameters vals
// (binary, answer in binary) and reads its answer into c. conn is idle
// (just acquired) and stays the caller's to release.
func exchange(ctx context.Context, conn *pgx.Conn, sd *pgconn.StatementDescription, vals [][]byte, c *call) (*store.RunWriteResult, error) {
	pc := conn.PgConn()
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent
	}
	var (
		stop  func() bool
		fired chan struct{}
	)
	if ctx.Done() != nil {
		fired = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			_ = pc.Conn().SetDeadline(time.Now()) // the send or the read returns at once
			close(fired)
		})
	}
	rows, derr, perr, reuse, err := roundTrip(conn, pc, sd, vals, c)
	if stop != nil && !stop() {
		<-fired
		reuse = false // its deadline is set
		if err != nil && isTimeout(err) {
			err = &interrupted{ctx: ctx.Err(), io: err}
		}
	}
	if err != nil || !reuse {
		_ = pc.Conn().SetDeadline(time.Now()) // Close's goodbye does not wait
		_ = pc.Close(context.Background())
	}
	if err != nil {
		return nil, err
	}
	if perr != nil {
		if reuse {
			forgetStatement(ctx, conn, sd, perr)
		}
		return nil, perr
	}
	return c.answered(rows, derr)
}

// roundTrip is exchange's send and read. err is an I/O error (the outcome
// is not known); perr the server's error for the statement; reuse says
// pgconn's view of the connection is still right.
func roundTrip(conn *pgx.Conn, pc *pgconn.PgConn, sd *pgconn.StatementDescription, vals [][]byte, c *call) (rows int, derr, perr error, reuse bool, err error) {
	fe := pc.Frontend()
	fe.SendBind(&pgproto3.Bind{PreparedStatement: sd.Name, ParameterFormatCodes: binaryFormat, Parameters: vals, ResultFormatCodes: binaryFormat})
	fe.SendExecute(&pgproto3.Execute{})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		return 0, nil, nil, false, err
	}
	reuse = true
	for {
		msg, err := fe.Receive()
		if err != nil {
			return 0, nil, nil, false, err
		}
		switch m := msg.(type) {
		case *pgproto3.BindComplete, *pgproto3.CommandComplete:
		case *pgproto3.DataRow:
			rows++
			if rows == 1 {
				derr = c.decodeRaw(m.Values)
			}
		case *pgproto3.ErrorResponse:
			pe := pgconn.ErrorResponseToPgError(m)
			if perr == nil {
				perr = pe
			}
			if h := conn.Config().OnPgError; h != nil && !h(pc, pe) {
				// As pgconn: the handler wants the connection closed (by
				// default for a FATAL error); the server ends it.
				return rows, derr, perr, false, nil
			}
		case *pgproto3.NoticeResponse:
			if h := conn.Config().OnNotice; h != nil {
				h(pc, (*pgconn.Notice)(pgconn.ErrorResponseToPgError((*pgproto3.ErrorResponse)(m))))
			}
		case *pgproto3.NotificationResponse:
			if h := conn.Config().OnNotification; h != nil {
				h(pc, &pgconn.Notification{PID: m.PID, Channel: m.Channel, Payload: m.Payload})
			}
		case *pgproto3.ReadyForQuery:
			return rows, derr, perr, reuse && m.TxStatus == 'I', nil
		default: // a parameter status (pgconn keeps them), anything unexpected
			reuse = false
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// interrupted is the error of an exchange the context ended: it matches
// the context's error (as pgconn's does); whether the statement committed
// is not known.
type interrupted struct {
	ctx, io error
}

func (e *interrupted) Error() string {
	return "run write interrupted: " + e.ctx.Error() + " (" + e.io.Error() + ")"
}
func (e *interrupted) Unwrap() error { return e.ctx }
