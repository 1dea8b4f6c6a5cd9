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

// benchAgents returns agents whose model asks, in one turn, for two calls,
// one call or no call of a no-op side-effect tool, and then ends.
func benchAgents() (twoCalls, oneCall, noCall *actoviq.AgentSpec) {
	noop := tool.Func(tool.Spec{Name: toolName, Effect: tool.SideEffect},
		func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	calls := func(n int) *actoviq.AgentSpec {
		var tc []scripted.ToolCall
		for i := range n {
			tc = append(tc, scripted.ToolCall{ID: fmt.Sprintf("%s-%d", callID, i), Name: toolName, Arguments: json.RawMessage(`{}`)})
		}
		turns := []scripted.Turn{{ToolCalls: tc}, {Text: "done"}}
		if n == 0 {
			turns = turns[1:]
		}
		return &actoviq.AgentSpec{ID: "bench", Model: "scripted-1", Tools: []tool.Tool{noop}, Provider: scripted.New(turns...)}
	}
	return calls(2), calls(1), calls(0)
}

// BenchmarkSideEffectCall measures the durable overhead of one side-effect
// tool call: a run whose model asks for two calls in one turn, minus a run
// whose model asks for one (same turns, same store). The difference is one
// call: its prepared row (which rides on the model response's commit), the
// started and committed writes, and the tool runner. It is set against the
// floor of the two synchronous commits a call needs: two one-row write
// transactions on the same database (x-floor). ns-turn/op is the cost of a
// whole one-turn run without calls, the per-turn overhead (on memory: the
// engine's own work). The runs alternate, so drift hits both.
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
			twoCalls, oneCall, noCall := benchAgents()
			ctx := context.Background()
			run := func(a *actoviq.AgentSpec, id string) time.Duration {
				start := time.Now()
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("go")}})
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
			run(twoCalls, "warm-2")
			run(oneCall, "warm-1")
			run(noCall, "warm-0")

			var two, one, zero, floor time.Duration
			var extraWrites int64
			for i := 0; b.Loop(); i++ {
				w0 := cs.writes.Load()
				two += run(twoCalls, fmt.Sprintf("two-%d", i))
				b.StopTimer()
				w1 := cs.writes.Load()
				one += run(oneCall, fmt.Sprintf("one-%d", i))
				extraWrites += (w1 - w0) - (cs.writes.Load() - w1)
				zero += run(noCall, fmt.Sprintf("zero-%d", i))
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
			overhead := float64(two-one) / n
			b.ReportMetric(float64(zero)/n, "ns-turn/op")
			b.ReportMetric(overhead, "ns-call/op")
			b.ReportMetric(float64(extraWrites)/n, "writes-per-call")
			if bs.floor != nil {
				b.ReportMetric(float64(floor)/n, "ns-floor2/op")
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
