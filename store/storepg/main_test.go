package storepg_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	benchStore.close()
	// Every pool is closed by now; pgxpool's health-check goroutine exits
	// shortly after Close, which goleak's retries allow for.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const urlEnv = "ACTOVIQ_TEST_PG_URL"

func testURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		tb.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	return u
}

// newSchema returns a fresh schema name and drops the schema at cleanup
// (registered first, so it runs after the stores using it are closed).
func newSchema(tb testing.TB) string {
	tb.Helper()
	url := testURL(tb)
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openStore opens an independent store (its own pool) on schema.
func openStore(tb testing.TB, schema string, clock store.Clock) *storepg.Store {
	tb.Helper()
	s, err := storepg.Open(context.Background(), testURL(tb), &storepg.Config{Schema: schema, Clock: clock, MaxConns: 8})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// fakeClock is a settable clock for claim expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// bundle is what most tests need: one store on a fresh schema.
type bundle struct {
	schema string
	clock  *fakeClock
	s      *storepg.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	schema := newSchema(t)
	clock := newFakeClock()
	return &bundle{schema: schema, clock: clock, s: openStore(t, schema, clock.Now)}
}

// corrupt damages one stored record with raw SQL so that decoding fails.
func corrupt(t *testing.T, s store.Store, what, tenant, id, callID string) {
	t.Helper()
	ps := s.(*storepg.Store)
	q := pgx.Identifier{ps.Schema()}.Sanitize()
	var sql string
	args := []any{tenant, id}
	switch what {
	case "run":
		sql = "UPDATE " + q + ".runs SET checkpoint = '{not json' WHERE tenant = $1 AND id = $2"
	case "ledger":
		sql = "UPDATE " + q + ".ledger SET result = '{not json' WHERE tenant = $1 AND run_id = $2 AND call_id = $3"
		args = append(args, callID)
	case "session":
		sql = "UPDATE " + q + ".session_entries SET item = '{not json' WHERE tenant = $1 AND session_id = $2 AND seq = " +
			"(SELECT max(seq) FROM " + q + ".session_entries WHERE tenant = $1 AND session_id = $2)"
	default:
		t.Fatalf("corrupt: unknown record kind %q", what)
	}
	tag, err := ps.Pool().Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("corrupt %s %s/%s/%s: %d rows", what, tenant, id, callID, tag.RowsAffected())
	}
}
