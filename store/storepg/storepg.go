package storepg

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/groupcommit"
	"github.com/actoviq/actoviq-go/store/internal/journal"
)

// DefaultSchema is the PostgreSQL schema used when [Config.Schema] is empty.
const DefaultSchema = "actoviq"

// Config configures a [Store]. A nil *Config means defaults; the struct is
// copied, so changing it after [Open] or [New] has no effect.
type Config struct {
	// Schema is the PostgreSQL schema that holds every table; it is created
	// if missing. Several installations (or tests) can share a database by
	// using different schemas. It must match ^[a-z_][a-z0-9_]{0,62}$.
	// Empty means [DefaultSchema].
	Schema string
	// Clock gives the current time for timestamps and claim expiry. The
	// time is sent to the server as a parameter (the server's now() is not
	// used), so a fake clock drives expiry in tests. Nil means time.Now.
	Clock store.Clock
	// MaxConns caps the pool that [Open] creates. Zero means pgxpool's
	// default (the larger of 4 and the number of CPUs). [New] ignores it:
	// the caller's pool keeps its own limit.
	MaxConns int32
	// CommitLeaders bounds the group-commit transactions in flight at
	// once (see [Store.RunWrite]): run writes that arrive while that many
	// are in flight queue and go together in the next one. Zero means half
	// the pool's connections, at least 1 and at most 4. One transaction
	// at a time would run the server's work for every write of the process
	// in one backend, one after another. It bounds the transactions of
	// root runs' creations the same way, separately (see [Store.RunCreate]).
	CommitLeaders int
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c *Config) validate() error {
	if !schemaRE.MatchString(c.Schema) {
		return fmt.Errorf("storepg: Config.Schema %q: must match %s", c.Schema, schemaRE)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("storepg: Config.MaxConns %d: must not be negative", c.MaxConns)
	}
	if c.CommitLeaders < 0 {
		return fmt.Errorf("storepg: Config.CommitLeaders %d: must not be negative", c.CommitLeaders)
	}
	return nil
}

func configOrDefault(cfg *Config) Config {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	return c
}

// Store is a [store.Store] on PostgreSQL. It is safe for concurrent use by
// many goroutines, processes and machines sharing one database.
type Store struct {
	pool      *pgxpool.Pool
	ownsPool  bool
	schema    string // validated, unquoted
	quoted    string // quoted identifier
	clock     store.Clock
	queries   sync.Map // query template → text with the schema substituted
	closeOnce sync.Once
	stats     counters
	commits   commitQueue
	creates   groupcommit.Queue[*runCreate] // root runs' creations (creates.go)
	raw       bool                          // run writes take their own wire path (rawwrite.go)
	rows      rowTypes                      // with the run_write of rows when set (rawrows.go)
	listen    listener                      // LISTEN connection of QueueWatch

	// compactor runs the log compactions on goroutines of the store (see
	// compactLater); Close waits for them.
	compactor journal.Compactor
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a PostgreSQL URL or DSN, as
// pgxpool.ParseConfig accepts), applies pending migrations to the
// configured schema and returns a store that owns its pool: [Store.Close]
// closes it. Its connections run without parallel query
// (max_parallel_workers_per_gather = 0) and without JIT compilation (jit =
// off) unless the URL sets them; [New] leaves the caller's pool as it is.
func Open(ctx context.Context, url string, cfg *Config) (*Store, error) {
	c := configOrDefault(cfg)
	if err := c.validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("storepg: parse url: %w", err)
	}
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	rp := pc.ConnConfig.RuntimeParams
	for name, value := range map[string]string{parallelParam: "0", jitParam: "off"} {
		if _, set := rp[name]; !set && !optionSets(rp["options"], name) {
			rp[name] = value
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("storepg: connect: %w", err)
	}
	s, err := newStore(ctx, pool, c)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// parallelParam is the setting [Open] turns off on its connections unless
// the URL sets it: every statement of the store reads a page, a few
// counters or a batch, and with a million finished runs the planner's
// estimates (claims held and expired, released and live: it cannot know
// they are few) put some of them over the parallel threshold. The inbox's
// idle count then took 220-460 ms, starting two workers to read 18
// buffers, against 1-10 ms without (docs/operations.md).
const parallelParam = "max_parallel_workers_per_gather"

// jitParam is the other setting [Open] turns off unless the URL sets it,
// for the same reason: a plan whose cost the planner overestimates is
// JIT-compiled, which costs hundreds of milliseconds for a statement that
// reads a few pages. The inbox's idle count in a generic plan (which does
// not know the time, so it costs every released claim as maybe live) took
// 540 ms to compile and read 5 buffers, in a store of 300,000 runs.
const jitParam = "jit"

// optionSets reports whether options, libpq's options parameter (the
// URL's options=, or PGOPTIONS), sets the setting name ("-c name=value",
// "-cname=value" or "--name=value"). PostgreSQL applies the startup
// packet's own parameters after it, so a default [Open] sent as a
// parameter would override the URL's choice made there.
func optionSets(options, name string) bool {
	f := strings.Fields(options)
	for i := 0; i < len(f); i++ {
		var kv string
		switch {
		case f[i] == "-c" && i+1 < len(f):
			i++
			kv = f[i]
		case strings.HasPrefix(f[i], "--"):
			kv = f[i][2:]
		case strings.HasPrefix(f[i], "-c"):
			kv = f[i][2:]
		default:
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if strings.EqualFold(strings.ReplaceAll(k, "-", "_"), name) {
			return true
		}
	}
	return false
}

// New returns a store on a pool the caller owns, after applying pending
// migrations to the configured schema. [Store.Close] does not close the
// pool. Config.MaxConns is ignored.
func New(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("storepg: New: nil pool")
	}
	c := configOrDefault(cfg)
	if err := c.validate(); err != nil {
		return nil, err
	}
	return newStore(ctx, pool, c)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, c Config) (*Store, error) {
	s := &Store{
		pool:   pool,
		schema: c.Schema,
		quoted: pgx.Identifier{c.Schema}.Sanitize(),
		clock:  c.Clock,
		raw:    rawOK(pool.Config().ConnConfig),
	}
	s.commits = commitQueue{MaxBatch: maxBatch, MaxExtra: maxExtraBatches, MaxLeaders: commitLeaders(pool, c.CommitLeaders), Run: s.sendBatch}
	s.creates = groupcommit.Queue[*runCreate]{MaxBatch: maxBatch, MaxExtra: maxExtraBatches, MaxLeaders: commitLeaders(pool, c.CommitLeaders), Run: s.sendCreates}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if s.raw {
		s.rows = s.loadRowTypes(ctx)
	}
	return s, nil
}

// Schema returns the PostgreSQL schema the store uses.
func (s *Store) Schema() string { return s.schema }

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool if [Open] created it. It is safe to call twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.compactor.Close()
		s.closeListener()
		if s.ownsPool {
			s.pool.Close()
		}
	})
	return nil
}

// q substitutes the schema into a query template. The result is cached so
// that the hot path does not allocate, and so that pgx's per-connection
// statement cache sees one text per query.
func (s *Store) q(tmpl string) string {
	if v, ok := s.queries.Load(tmpl); ok {
		return v.(string)
	}
	v, _ := s.queries.LoadOrStore(tmpl, strings.ReplaceAll(tmpl, "{{schema}}", s.quoted))
	return v.(string)
}

// SQLSTATE codes the store acts on.
const (
	codeSerialization = "40001"
	codeDeadlock      = "40P01"
	codeLockNotAvail  = "55P03" // lock_not_available: a lock_timeout or NOWAIT
	codeDiskFull      = "53100"
	codeNotUTF8       = "22021" // character_not_in_repertoire: invalid byte sequence for encoding UTF8
)

func sqlState(err error) string {
	if err == nil {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var storeErrors = []error{store.ErrConflict, store.ErrNotFound, store.ErrExists, store.ErrFenced,
	store.ErrClaimHeld, store.ErrData, store.ErrInvalid, store.ErrFull, store.ErrBusy}

// mapErr turns a driver error into the store vocabulary where one applies
// and adds context.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range storeErrors {
		if errors.Is(err, sentinel) {
			return err // already typed; its message names the record
		}
	}
	switch sqlState(err) {
	case codeDiskFull:
		return &store.FullError{Err: fmt.Errorf("storepg: %s: %w", op, err)}
	case codeSerialization, codeDeadlock, codeLockNotAvail:
		// The server aborted the transaction (after inTx's retries, for
		// the first two): nothing of it was written.
		return &store.BusyError{Err: fmt.Errorf("storepg: %s: %w", op, err)}
	case codeNotUTF8:
		// Text that is not UTF-8 in a field the shared validation does not
		// check: refused as every backend refuses it where it does.
		return &store.InvalidError{Field: op, Reason: "text that is not UTF-8 (a store keeps text in UTF-8 only): " + err.Error()}
	}
	return fmt.Errorf("storepg: %s: %w", op, err)
}

// maxAttempts bounds how often a write transaction is retried after the
// server aborted it as a serialization failure or deadlock victim.
const maxAttempts = 5

// inTx runs fn in a read-committed transaction and commits it.
//
// Retry rule: when a statement inside fn, or COMMIT itself, fails with
// SQLSTATE 40001 (serialization failure) or 40P01 (deadlock detected), the
// server has rolled the whole transaction back, so nothing fn did is
// visible and running it again from the start is safe; we do so a bounded
// number of times. Any other failure, in particular a lost connection
// during COMMIT (the outcome is then unknown), is returned as is and never
// retried.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return mapErr(op, retryable(ctx, func() error { return s.txOnce(ctx, fn) }))
}

func (s *Store) txOnce(ctx context.Context, fn func(tx pgx.Tx) error) (err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The rollback's own error adds nothing: either the transaction is
			// already aborted or the connection is gone and the server rolls back.
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// retryable runs fn (a whole transaction, or a single autocommit statement,
// which is its own transaction) again while it fails with a serialization
// failure or deadlock; see inTx.
func retryable(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		err = fn()
		if c := sqlState(err); (c != codeSerialization && c != codeDeadlock) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// jsonArg is a JSON value as a text parameter: nil stays NULL.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// timeArg is a timestamp parameter: the zero time is NULL.
func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return store.Time(t)
}
