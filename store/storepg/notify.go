package storepg

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// notifyChannel is the LISTEN/NOTIFY channel of every actoviq schema; the
// payload is "<schema>/<tenant>", so stores on different schemas of one
// database ignore each other's notifications.
const notifyChannel = "actoviq_queue"

// notifyQueued wakes the listeners of tenant after a write that made a run
// queued has committed. A lost notification only delays a worker until its
// next poll, so errors are ignored.
func (s *Store) notifyQueued(ctx context.Context, tenant string) {
	_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, s.schema+"/"+tenant)
}

// listener holds one dedicated connection (outside the pool) that LISTENs
// for queued runs, started by the first QueueWatch. When the connection
// fails, every waiter is woken (a spurious wake: it polls) and the next
// QueueWatch connects again.
type listener struct {
	mu      sync.Mutex
	conn    *pgx.Conn
	stop    context.CancelFunc
	done    chan struct{}
	closed  bool
	waiters map[string]chan struct{} // tenant → closed at its next notification
}

var _ store.QueueNotifier = (*Store)(nil)

// QueueWatch implements [store.QueueNotifier] with LISTEN/NOTIFY: RunCreate
// of a queued run and RunWrite to status queued send a notification with
// the transaction that makes the run queued.
func (s *Store) QueueWatch(ctx context.Context, tenant string) (<-chan struct{}, error) {
	if tenant == "" {
		return nil, &store.InvalidError{Field: "tenant", Reason: "empty"}
	}
	l := &s.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("storepg: store is closed")
	}
	if l.conn == nil {
		cfg := s.pool.Config().ConnConfig.Copy()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, mapErr("listen for queued runs", err)
		}
		if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, mapErr("listen for queued runs", err)
		}
		lctx, stop := context.WithCancel(context.Background())
		l.conn, l.stop, l.done = conn, stop, make(chan struct{})
		go s.listenLoop(lctx, conn, l.done)
	}
	if l.waiters == nil {
		l.waiters = map[string]chan struct{}{}
	}
	ch, ok := l.waiters[tenant]
	if !ok {
		ch = make(chan struct{})
		l.waiters[tenant] = ch
	}
	return ch, nil
}

func (s *Store) listenLoop(ctx context.Context, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	l := &s.listen
	prefix := s.schema + "/"
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			l.mu.Lock()
			for t, ch := range l.waiters {
				close(ch)
				delete(l.waiters, t)
			}
			if l.conn == conn {
				l.conn = nil
			}
			l.mu.Unlock()
			_ = conn.Close(context.Background())
			return
		}
		tenant, ok := strings.CutPrefix(n.Payload, prefix)
		if !ok {
			continue
		}
		l.mu.Lock()
		if ch, ok := l.waiters[tenant]; ok {
			close(ch)
			delete(l.waiters, tenant)
		}
		l.mu.Unlock()
	}
}

// closeListener stops the listening connection, if any.
func (s *Store) closeListener() {
	l := &s.listen
	l.mu.Lock()
	l.closed = true
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
