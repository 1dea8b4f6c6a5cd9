package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // DBOS on SQLite
	"github.com/jackc/pgx/v5/pgxpool"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// dbosVersion is the DBOS Transact Go module the comparison uses (bench/go.mod).
const dbosVersion = "v1.8.0"

// backend is one of our stores with a runtime on it.
type backend struct {
	name  string
	st    store.Store
	rt    *actoviq.Runtime
	floor func(ctx context.Context) error // one synchronous one-row commit; nil for memory
	rows  func() (writes, rows, commits int64)
}

type env struct {
	calls    int
	backs    []*backend
	sqlite   *storesqlite.Store
	pg       *storepg.Store
	pool     *pgxpool.Pool
	wire     *wireCounter
	schema   string
	dbos     map[string]dbos.Context // "sqlite", "pg"
	dbosDB   *sql.DB
	agents   map[int]*actoviq.AgentSpec
	seq      atomic.Int64
	pgNotice string
	dir      string
	samples  map[string][]time.Duration // timed's samples, by figure
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func setup(ctx context.Context, dir, pgURL string, calls int) (*env, error) {
	e := &env{calls: calls, dbos: map[string]dbos.Context{}, agents: map[int]*actoviq.AgentSpec{}, dir: dir}
	for _, n := range []int{0, 1, calls} {
		e.agents[n] = agentWithCalls(n)
	}

	// SQLite: WAL, synchronous=FULL (the store's own pragmas).
	sq, err := storesqlite.Open(filepath.Join(dir, "actoviq.db"), nil)
	if err != nil {
		return nil, err
	}
	e.sqlite = sq
	if _, err := sq.DB().Exec(`CREATE TABLE bench_floor (n INTEGER)`); err != nil {
		return nil, err
	}
	// The cheapest durable commit: one INSERT in autocommit, one statement
	// and no *sql.Tx (database/sql starts a goroutine per Tx, which the
	// store's own writes no longer pay: storesqlite/writer.go).
	sqFloor := func(ctx context.Context) error {
		_, err := sq.DB().ExecContext(ctx, `INSERT INTO bench_floor (n) VALUES (1)`)
		return err
	}
	if err := e.addBackend("sqlite", sq, sqFloor, func() (int64, int64, int64) {
		st := sq.Stats()
		return st.RunWrites, st.RowsWritten, st.Commits
	}); err != nil {
		return nil, err
	}

	if pgURL != "" {
		if err := e.setupPG(ctx, pgURL); err != nil {
			return nil, err
		}
	}

	mem := storemem.New(nil)
	if err := e.addBackend("mem", mem, nil, nil); err != nil {
		return nil, err
	}

	return e, nil
}

// pgCommitLeaders is the -commit-leaders flag.
var pgCommitLeaders int

func (e *env) setupPG(ctx context.Context, url string) error {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	e.wire = &wireCounter{}
	dial := pc.ConnConfig.DialFunc
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return e.wire.wrap(c), nil
	}
	if !strings.Contains(url, "pool_max_conns") {
		// DBOS Transact opens its pool with 20 connections unless the URL
		// says otherwise; ours gets the same, so that the fleet pass
		// compares the two on the same footing (pgxpool's own default is
		// max(4, CPUs)).
		pc.MaxConns = 20
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	e.pool = pool
	var fsync, syncCommit, version string
	if err := pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('server_version')`).
		Scan(&fsync, &syncCommit, &version); err != nil {
		return err
	}
	e.pgNotice = fmt.Sprintf("PostgreSQL %s, fsync=%s, synchronous_commit=%s", version, fsync, syncCommit)
	if fsync != "on" || syncCommit != "on" {
		e.pgNotice += " (NOT durable commits: start the server without PG_FAST)"
	}
	e.schema = "bench_" + randHex(6)
	pg, err := storepg.New(ctx, pool, &storepg.Config{Schema: e.schema, CommitLeaders: pgCommitLeaders})
	if err != nil {
		return err
	}
	e.pg = pg
	if _, err := pool.Exec(ctx, `CREATE TABLE "`+e.schema+`".bench_floor (n bigint)`); err != nil {
		return err
	}
	insert := `INSERT INTO "` + e.schema + `".bench_floor (n) VALUES (1)`
	pgFloor := func(ctx context.Context) error {
		_, err := pool.Exec(ctx, insert) // autocommit: one round trip, one synchronous commit
		return err
	}
	if err := e.addBackend("pg", pg, pgFloor, func() (int64, int64, int64) {
		st := pg.Stats()
		return st.RunWrites, st.RowsWritten, st.Commits
	}); err != nil {
		return err
	}
	return nil
}

// setupDBOS launches DBOS on the same PostgreSQL server (its own schema)
// and on a SQLite file next to ours.
func (e *env) setupDBOS(ctx context.Context, pgURL string) error {
	dir := e.dir
	// DBOS on SQLite, with the same durability as ours: WAL and
	// synchronous=FULL. (DBOS opens its own SQLite files with
	// synchronous=NORMAL, which does not sync each commit; we hand it a
	// handle instead, through its public Config.SQLiteSystemDB.)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "dbos.db")+
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return err
	}
	e.dbosDB = db
	var syncMode int
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&syncMode); err != nil || syncMode != 2 {
		return fmt.Errorf("DBOS SQLite handle: synchronous=%d (%v), want 2 (FULL)", syncMode, err)
	}
	if err := e.launchDBOS(ctx, "sqlite", dbos.Config{AppName: "actoviq-bench", SQLiteSystemDB: db}); err != nil {
		return fmt.Errorf("DBOS on SQLite: %w", err)
	}
	if pgURL != "" {
		if err := e.launchDBOS(ctx, "pg", dbos.Config{AppName: "actoviq-bench", DatabaseURL: pgURL, DatabaseSchema: "dbos_" + e.schema}); err != nil {
			return fmt.Errorf("DBOS on PostgreSQL: %w", err)
		}
	}
	return nil
}

func (e *env) addBackend(name string, st store.Store, floor func(context.Context) error, rows func() (int64, int64, int64)) error {
	rt, err := actoviq.New(st, nil)
	if err != nil {
		return err
	}
	e.backs = append(e.backs, &backend{name: name, st: st, rt: rt, floor: floor, rows: rows})
	return nil
}

func (e *env) backend(name string) *backend {
	for _, b := range e.backs {
		if b.name == name {
			return b
		}
	}
	return nil
}

// stepsWorkflow is the DBOS side: a workflow of n no-op steps.
func stepsWorkflow(ctx dbos.Context, n int) (int, error) {
	for range n {
		if _, err := dbos.RunAsStep(ctx, func(context.Context) (string, error) { return "ok", nil }); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (e *env) launchDBOS(ctx context.Context, name string, cfg dbos.Config) error {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	dctx, err := dbos.NewContext(ctx, cfg)
	if err != nil {
		return err
	}
	dbos.RegisterWorkflow(dctx, stepsWorkflow)
	if err := dbos.Launch(dctx); err != nil {
		return err
	}
	e.dbos[name] = dctx
	return nil
}

func (e *env) runDBOS(name string, steps int) (time.Duration, error) {
	dctx := e.dbos[name]
	start := time.Now()
	h, err := dbos.RunWorkflow(dctx, stepsWorkflow, steps)
	if err != nil {
		return 0, err
	}
	n, err := h.GetResult()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if n != steps {
		return 0, fmt.Errorf("DBOS workflow returned %d, want %d", n, steps)
	}
	return d, nil
}

func (e *env) close(ctx context.Context) {
	for _, dctx := range e.dbos {
		dbos.Shutdown(dctx, 5*time.Second)
	}
	for _, b := range e.backs {
		b.rt.Close()
	}
	if e.sqlite != nil {
		e.sqlite.Close()
	}
	if e.dbosDB != nil {
		e.dbosDB.Close()
	}
	if e.pool != nil {
		for _, schema := range []string{e.schema, "dbos_" + e.schema} {
			if _, err := e.pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
				fmt.Println("bench: drop schema", schema, err)
			}
		}
		e.pg.Close()
		e.pool.Close()
	}
}

// agentWithCalls is an agent whose scripted model asks, in one turn, for n
// calls of a no-op side-effect tool, then ends.
func agentWithCalls(n int) *actoviq.AgentSpec {
	noop := tool.Func(tool.Spec{Name: "noop", Effect: tool.SideEffect},
		func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	var tc []scripted.ToolCall
	for i := range n {
		tc = append(tc, scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "noop", Arguments: json.RawMessage(`{}`)})
	}
	turns := []scripted.Turn{{ToolCalls: tc}, {Text: "done"}}
	if n == 0 {
		turns = turns[1:]
	}
	return &actoviq.AgentSpec{ID: "bench", Model: "scripted-1", Tools: []tool.Tool{noop}, Provider: scripted.New(turns...)}
}

// run drives one run of the agent with n calls on b and times it.
func (e *env) run(ctx context.Context, b *backend, n int) (time.Duration, error) {
	id := fmt.Sprintf("r%d-%s", e.seq.Add(1), randHex(4))
	start := time.Now()
	res, err := b.rt.Run(ctx, e.agents[n], &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("go")}})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if res.Status != actoviq.StatusCompleted {
		return 0, fmt.Errorf("run %s on %s: %s", id, b.name, res.Status)
	}
	return d, nil
}

// wireCounter counts round trips on PostgreSQL connections: a read that
// follows a write is one turn of the conversation.
type wireCounter struct {
	trips atomic.Int64
}

func (w *wireCounter) wrap(c net.Conn) net.Conn { return &countedConn{Conn: c, w: w} }

type countedConn struct {
	net.Conn
	w       *wireCounter
	written atomic.Bool
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.written.Store(true)
	return c.Conn.Write(p)
}

func (c *countedConn) Read(p []byte) (int, error) {
	if c.written.Swap(false) {
		c.w.trips.Add(1)
	}
	return c.Conn.Read(p)
}
