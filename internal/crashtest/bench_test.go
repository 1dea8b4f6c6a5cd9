package crashtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// benchStore is a store under benchmark and its floor: one minimal durable
// write transaction on the same database (nil for the in-memory store).
type benchStore struct {
	s     store.Store
	floor func(ctx context.Context) error
}

// The floor writes one row, not nothing: neither SQLite nor PostgreSQL
// syncs anything when an empty transaction commits, and the figure we
// compare with is the cost of a commit that is durable.

func openBenchSQLite(b *testing.B) *benchStore {
	s, err := storesqlite.Open(filepath.Join(b.TempDir(), "bench.db"), nil) // WAL, synchronous=FULL
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	db := s.DB() // the store's own handle: same file, same pragmas
	if _, err := db.Exec(`CREATE TABLE crashtest_floor (n INTEGER)`); err != nil {
		b.Fatal(err)
	}
	return &benchStore{s: s, floor: func(ctx context.Context) error {
		return sqlWrite(ctx, db, `INSERT INTO crashtest_floor (n) VALUES (1)`)
	}}
}

func sqlWrite(ctx context.Context, db *sql.DB, q string) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, as the store's writes
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func openBenchPG(b *testing.B) *benchStore {
	url := os.Getenv(pgURLEnv)
	if url == "" {
		b.Skip(pgURLEnv + " not set: the PostgreSQL benchmark needs a server started without PG_FAST (scripts/pg start DIR)")
	}
	ctx := context.Background()
	schema := "bench_" + randHex(8)
	s, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		defer s.Close()
		if _, err := s.Pool().Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	var fsync, syncCommit string
	if err := s.Pool().QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&fsync, &syncCommit); err != nil {
		b.Fatal(err)
	}
	if fsync != "on" || syncCommit != "on" {
		b.Logf("warning: the server runs with fsync=%s synchronous_commit=%s: these figures are not durable commits", fsync, syncCommit)
	}
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE "`+schema+`".crashtest_floor (n bigint)`); err != nil {
		b.Fatal(err)
	}
	insert := `INSERT INTO "` + schema + `".crashtest_floor (n) VALUES (1)`
	return &benchStore{s: s, floor: func(ctx context.Context) error {
		_, err := s.Pool().Exec(ctx, insert) // one implicit transaction, one synchronous commit
		return err
	}}
}

func openBenchMem(b *testing.B) *benchStore {
	s := storemem.New(nil)
	b.Cleanup(func() { s.Close() })
	return &benchStore{s: s}
}

// benchAgents returns an agent whose model asks for one call of a no-op
// side-effect tool and then ends, and one whose model ends at once.
func benchAgents() (withCall, noCall *actoviq.AgentSpec) {
	noop := tool.Func(tool.Spec{Name: toolName, Effect: tool.SideEffect},
		func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	withCall = &actoviq.AgentSpec{ID: "bench-call", Model: "scripted-1", Tools: []tool.Tool{noop},
		Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: callID, Name: toolName, Arguments: json.RawMessage(`{}`)}}},
			scripted.Turn{Text: "done"},
		)}
	noCall = &actoviq.AgentSpec{ID: "bench-nocall", Model: "scripted-1", Tools: []tool.Tool{noop},
		Provider: scripted.New(scripted.Turn{Text: "done"})}
	return withCall, noCall
}

// BenchmarkSideEffectCall measures the durable overhead of one side-effect
// tool call: a full run whose model asks for one call (ns/op), minus a full
// run whose model answers at once, on the same store. That difference is
// one extra model turn, the started and committed writes and the tool
// runner; it is set against the floor of two one-row write transactions on
// the same database (x-floor). The runs alternate, so drift hits both.
//
// The call costs three run writes more than no call (extra-writes/op): the
// model response with the prepared entry, started, committed. The first
// comes with the extra model turn any call implies, so 1.5 x-floor is the
// least this design can reach; the rest is the work inside each write.
func BenchmarkSideEffectCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) *benchStore
	}{{"sqlite", openBenchSQLite}, {"pg", openBenchPG}, {"mem", openBenchMem}} {
		b.Run(bc.name, func(b *testing.B) {
			bs := bc.open(b)
			cs := &countingStore{Store: bs.s}
			rt, err := actoviq.New(cs, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			withCall, noCall := benchAgents()
			ctx := context.Background()
			in := func(id string) *actoviq.Input {
				return &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("go")}}
			}
			run := func(a *actoviq.AgentSpec, id string) time.Duration {
				start := time.Now()
				res, err := rt.Run(ctx, a, in(id))
				d := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if res.Status != actoviq.StatusCompleted {
					b.Fatalf("run %s: %s", id, res.Status)
				}
				return d
			}
			// Warm up: migrations, prepared statements, pool connections.
			run(noCall, "warm-nocall")
			run(withCall, "warm-call")

			var call, nocall, floor time.Duration
			var extraWrites int64
			for i := 0; b.Loop(); i++ {
				w0 := cs.writes.Load()
				call += run(withCall, fmt.Sprintf("call-%d", i))
				b.StopTimer()
				w1 := cs.writes.Load()
				nocall += run(noCall, fmt.Sprintf("nocall-%d", i))
				extraWrites += (w1 - w0) - (cs.writes.Load() - w1)
				if bs.floor != nil {
					start := time.Now()
					for range 2 {
						if err := bs.floor(ctx); err != nil {
							b.Fatal(err)
						}
					}
					floor += time.Since(start)
				}
				b.StartTimer()
			}
			n := float64(b.N)
			overhead := float64(call-nocall) / n
			b.ReportMetric(float64(nocall)/n, "ns-nocall-run/op")
			b.ReportMetric(overhead, "ns-call-overhead/op")
			b.ReportMetric(float64(extraWrites)/n, "extra-writes/op")
			if bs.floor != nil {
				b.ReportMetric(float64(floor)/n, "ns-floor/op")
				b.ReportMetric(overhead/(float64(floor)/n), "x-floor")
			}
		})
	}
}

// countingStore counts run writes (each one transaction).
type countingStore struct {
	store.Store
	writes atomic.Int64
}

func (c *countingStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	c.writes.Add(1)
	return c.Store.RunWrite(ctx, p)
}
