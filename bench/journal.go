package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// The write path of issue 22: what a write of a long run carries, what a
// run continuing a long session costs, and a fleet of concurrent runs
// against the same number of concurrent DBOS workflows.

// byteStore counts the bytes each RunWrite hands to the store (checkpoint,
// appended items, ledger arguments, results and errors, event data), and
// on PostgreSQL the WAL written, per turn: a turn starts at each write
// that updates the run (the model response's commit).
type byteStore struct {
	store.Store
	mu    sync.Mutex
	turns []int64 // bytes handed to the store per turn
	wal   []int64 // PostgreSQL WAL bytes per turn
	lsn   func() int64
	last  int64
	alloc []uint64 // the process's heap allocation (bytes) at each turn's start
}

// heapAllocs reads the bytes the process has allocated on the heap so far
// (runtime/metrics: no stop of the world, unlike ReadMemStats).
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (b *byteStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	n := 0
	if u := p.Run; u != nil {
		n += len(u.Checkpoint) + len(u.Meta)
		for _, it := range u.Append {
			n += len(it)
		}
	}
	for _, w := range p.Ledger {
		n += len(w.Entry.Args) + len(w.Entry.Result) + len(w.Entry.Error)
		if w.Event != nil {
			n += len(w.Event.Data)
		}
	}
	for _, ev := range p.Events {
		n += len(ev.Data)
	}
	b.mu.Lock()
	if p.Run != nil {
		if b.lsn != nil {
			now := b.lsn()
			if len(b.turns) > 0 {
				b.wal = append(b.wal, now-b.last)
			}
			b.last = now
		}
		b.turns = append(b.turns, 0)
		b.alloc = append(b.alloc, heapAllocs())
	}
	if len(b.turns) > 0 {
		b.turns[len(b.turns)-1] += int64(n)
	}
	b.mu.Unlock()
	return b.Store.RunWrite(ctx, p)
}

type longResult struct {
	bytes10, bytesN int64 // bytes handed to the store in turn 10 and in turn N
	wal10, walN     int64 // PostgreSQL WAL bytes in turn 10 and turn N
	// allocated per turn (the whole process's heap), median of turns
	// 10-19 and of the last ten turns
	alloc10, allocN uint64
	dur             time.Duration
}

// longAgent is a scripted agent of n turns, one read call each (the same
// content every turn), then an answer.
func longAgent(n int) *actoviq.AgentSpec {
	look := tool.Func(tool.Spec{Name: "look", Effect: tool.Read},
		func(ctx context.Context, in struct{ N int }) (string, error) {
			return "the same answer every turn", nil
		})
	ts := make([]scripted.Turn, 0, n+1)
	for i := range n {
		ts = append(ts, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: fmt.Sprint("c", i), Name: "look", Arguments: json.RawMessage(`{"N":1}`)}}})
	}
	ts = append(ts, scripted.Turn{Text: "done"})
	return &actoviq.AgentSpec{ID: "long", Model: "scripted-1", Tools: []tool.Tool{look}, Provider: scripted.New(ts...),
		Limits: actoviq.Limits{MaxTurns: n + 1}}
}

// longRuns runs one n-turn run on each durable store and reports the bytes
// its turn 10 and its turn n handed to the store.
func (e *env) longRuns(ctx context.Context, n int) map[string]longResult {
	out := map[string]longResult{}
	for _, b := range e.backs {
		if b.floor == nil {
			continue
		}
		bs := &byteStore{Store: b.st}
		if b.name == "pg" {
			bs.lsn = func() int64 {
				var v int64
				check(e.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&v))
				return v
			}
		}
		rt, err := actoviq.New(bs, nil)
		check(err)
		start := time.Now()
		res, err := rt.Run(ctx, longAgent(n), &actoviq.Input{RunID: "long-" + randHex(4), Items: []item.Item{item.UserText("go")}})
		d := time.Since(start)
		check(err)
		rt.Close()
		if res.Status != actoviq.StatusCompleted {
			check(fmt.Errorf("long run on %s: %s", b.name, res.Status))
		}
		// turns[0] is the create-time write (run.started); turn k is turns[k].
		r := longResult{bytes10: bs.turns[10], bytesN: bs.turns[n], dur: d}
		if len(bs.wal) >= n {
			r.wal10, r.walN = bs.wal[10], bs.wal[n-1]
		}
		// turn k allocated alloc[k+1] − alloc[k] (alloc[0]: the create).
		perTurn := func(lo, hi int) uint64 {
			var xs []uint64
			for k := lo; k < hi && k+1 < len(bs.alloc); k++ {
				xs = append(xs, bs.alloc[k+1]-bs.alloc[k])
			}
			return medianU(xs)
		}
		if n >= 30 {
			r.alloc10, r.allocN = perTurn(10, 20), perTurn(n-10, n)
		}
		out[b.name] = r
	}
	return out
}

type sessRun struct {
	nShort, nLong, window int
	// Medians over the rounds of a one-turn run continuing the session,
	// one per sessModes: short and long.
	short, long           [3]time.Duration
	allocShort, allocLong [3]uint64
	logShort, logLong     [3]int // items stored with the run (its log)
}

// sessModes are the session windows the runs continuing sessions take:
// the default (AgentSpec.SessionWindow 0: actoviq.DefaultSessionWindow),
// an explicit window (-session-window), and the whole session.
var sessModes = [3]string{"default window", "SessionWindow %d", "whole session (WholeSession)"}

// sessionRuns times a one-turn run that continues a session of 1,000 items
// and one that continues a session of n items, on each durable store: with
// the default session window, with AgentSpec.SessionWindow = window, and
// with the whole session sent to the model. The six cases are
// interleaved, rounds times; medians.
func (e *env) sessionRuns(ctx context.Context, n, window, rounds int) map[string]sessRun {
	out := map[string]sessRun{}
	for _, b := range e.backs {
		if b.floor == nil {
			continue
		}
		fill := func(id string, n int) {
			var rev int64
			for rev < int64(n) {
				k := min(1000, n-int(rev))
				items := make([]json.RawMessage, k)
				for j := range items {
					items[j] = json.RawMessage(fmt.Sprintf(`{"type":"text","role":"user","text":"message %d"}`, rev+int64(j)))
				}
				var err error
				rev, err = b.st.SessionAppend(ctx, &store.SessionAppendParams{Tenant: b.rt.Tenant(), SessionID: id, ExpectedRevision: rev, Items: items})
				check(err)
			}
		}
		one := func(session string, w int) (time.Duration, uint64, int) {
			// The scripted model picks its turn by the answers the
			// transcript holds: earlier rounds' runs added theirs.
			turns := make([]scripted.Turn, 6*rounds+1)
			for i := range turns {
				turns[i] = scripted.Turn{Text: "ok"}
			}
			agent := &actoviq.AgentSpec{ID: "sess", Model: "scripted-1", Provider: scripted.New(turns...), SessionWindow: w}
			id := "s-" + randHex(4)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			res, err := b.rt.Run(ctx, agent, &actoviq.Input{RunID: id, SessionID: session, Items: []item.Item{item.UserText("go on")}})
			d := time.Since(start)
			runtime.ReadMemStats(&after)
			check(err)
			if res.Status != actoviq.StatusCompleted {
				check(fmt.Errorf("session run on %s: %s %v", b.name, res.Status, res.Error))
			}
			run, err := b.st.RunGet(ctx, &store.RunGetParams{Tenant: b.rt.Tenant(), ID: id})
			check(err)
			return d, after.TotalAlloc - before.TotalAlloc, run.LogLen
		}
		short, long := "short-"+randHex(4), "long-"+randHex(4)
		fill(short, 1000)
		fill(long, n)
		r := sessRun{nShort: 1000, nLong: n, window: window}
		var ds [6][]time.Duration
		var as [6][]uint64
		for round := range rounds {
			for k := range 6 {
				k = (k + round) % 6 // rotate the order
				w := [3]int{0, window, actoviq.WholeSession}[k/2]
				session := short
				if k%2 == 1 {
					session = long
				}
				d, a, l := one(session, w)
				ds[k], as[k] = append(ds[k], d), append(as[k], a)
				if k%2 == 0 {
					r.logShort[k/2] = l
				} else {
					r.logLong[k/2] = l
				}
			}
		}
		for k := range 6 {
			if k%2 == 0 {
				r.short[k/2], r.allocShort[k/2] = median(ds[k]), medianU(as[k])
			} else {
				r.long[k/2], r.allocLong[k/2] = median(ds[k]), medianU(as[k])
			}
		}
		out[b.name] = r
	}
	return out
}

func medianU(xs []uint64) uint64 {
	s := append([]uint64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

type fleetResult struct {
	ours, dbos float64 // calls per second, steps per second (medians)
	// CPU per call (ours) and per step (DBOS), medians over the rounds:
	// this process's (engine or DBOS, driver, garbage collector; on SQLite
	// the database's work too) and, with -pg-data on PostgreSQL, the
	// server's. Unlike the throughput, CPU time does not grow when other
	// work on the machine takes the cores.
	oursCPU, dbosCPU, oursServer, dbosServer time.Duration
	server                                   bool // the server's CPU was read
	// WAL bytes per call and per step on PostgreSQL (medians), from
	// pg_current_wal_lsn before and after each side's round.
	oursWAL, dbosWAL float64
}

// fleet runs, rounds times, n concurrent runs of e.calls side-effect calls
// each, and n concurrent DBOS workflows of e.calls steps each, on the same
// backend, alternating; it reports the median throughputs. A non-empty
// only names the one backend to run.
func (e *env) fleet(ctx context.Context, n, rounds int, only string) map[string]fleetResult {
	out := map[string]fleetResult{}
	for _, b := range e.backs {
		if b.floor == nil || e.dbos[b.name] == nil || (only != "" && b.name != only) {
			continue
		}
		var ours, theirs, oursCPU, theirCPU, oursSrv, theirSrv []time.Duration
		var oursWAL, theirWAL []float64
		server := b.name == "pg" && pgDataDir != ""
		lsn := func() (string, bool) {
			if b.name != "pg" {
				return "", false
			}
			var l string
			return l, e.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&l) == nil
		}
		for round := range rounds {
			// measure runs f n times at once; it returns the wall time and
			// the CPU time (this process's, the server's) per call.
			measure := func(f func() error, wall, cpu, srv *[]time.Duration, wal *[]float64) {
				var wg sync.WaitGroup
				l0, lok := lsn()
				s0, sok := time.Duration(0), false
				if server {
					s0, sok = serverCPU(pgDataDir)
				}
				c0 := cpuTime()
				start := time.Now()
				for range n {
					wg.Go(func() { check(f()) })
				}
				wg.Wait()
				*wall = append(*wall, time.Since(start))
				per := time.Duration(n * e.calls)
				*cpu = append(*cpu, (cpuTime()-c0)/per)
				if s1, ok := serverCPU(pgDataDir); server && sok && ok {
					*srv = append(*srv, (s1-s0)/per)
				}
				if l1, ok := lsn(); lok && ok {
					var bytes float64
					if e.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8`, l1, l0).Scan(&bytes) == nil {
						*wal = append(*wal, bytes/float64(per))
					}
				}
			}
			a := func() error { _, err := e.run(ctx, b, e.calls); return err }
			d := func() error { _, err := e.runDBOS(b.name, e.calls); return err }
			if round%2 == 0 {
				measure(a, &ours, &oursCPU, &oursSrv, &oursWAL)
				measure(d, &theirs, &theirCPU, &theirSrv, &theirWAL)
			} else {
				measure(d, &theirs, &theirCPU, &theirSrv, &theirWAL)
				measure(a, &ours, &oursCPU, &oursSrv, &oursWAL)
			}
		}
		total := float64(n * e.calls)
		out[b.name] = fleetResult{ours: total / median(ours).Seconds(), dbos: total / median(theirs).Seconds(),
			oursCPU: median(oursCPU), dbosCPU: median(theirCPU), oursServer: median(oursSrv), dbosServer: median(theirSrv),
			server: len(oursSrv) == rounds && len(theirSrv) == rounds, oursWAL: medianF(oursWAL), dbosWAL: medianF(theirWAL)}
	}
	return out
}

func printJournal(e *env, long map[string]longResult, sess map[string]sessRun, fl map[string]fleetResult, turns, n, fleetN int) {
	w := os.Stdout
	fmt.Fprintf(w, "\n| write path (issue 22) | SQLite | PostgreSQL |\n|---|---|---|\n")
	row := func(label string, f func(name string) string) {
		pg := "(no PostgreSQL)"
		if e.pg != nil {
			pg = f("pg")
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", label, f("sqlite"), pg)
	}
	row(fmt.Sprintf("%d-turn run: bytes handed to the store in turn 10 → turn %d (goal ≤ 1.5×)", turns, turns), func(k string) string {
		r := long[k]
		return fmt.Sprintf("%d B → %d B (%.2f×)", r.bytes10, r.bytesN, float64(r.bytesN)/float64(max(r.bytes10, 1)))
	})
	if e.pg != nil {
		fmt.Fprintf(w, "| %d-turn run: PostgreSQL WAL in turn 10 → turn %d | | %d B → %d B (%.2f×) |\n", turns, turns,
			long["pg"].wal10, long["pg"].walN, float64(long["pg"].walN)/float64(max(long["pg"].wal10, 1)))
	}
	row(fmt.Sprintf("%d-turn run: allocated per turn (this process), turns 10–19 → the last ten, medians (goal ≤ 1.5×)", turns), func(k string) string {
		r := long[k]
		return fmt.Sprintf("%.1f kB → %.1f kB (%.2f×)", float64(r.alloc10)/1e3, float64(r.allocN)/1e3, float64(r.allocN)/float64(max(r.alloc10, 1)))
	})
	row(fmt.Sprintf("%d-turn run: wall time", turns), func(k string) string { return fmt.Sprintf("%.1f s", long[k].dur.Seconds()) })
	sessionRows(row, sess, n)
	row(fmt.Sprintf("fleet: %d concurrent runs × %d side-effect calls, calls/s vs %d DBOS workflows × %d steps, steps/s (goal ≥ 1.0×)",
		fleetN, e.calls, fleetN, e.calls), func(k string) string {
		r := fl[k]
		return fmt.Sprintf("%.0f vs %.0f (%.2f×)", r.ours, r.dbos, r.ours/r.dbos)
	})
	row("fleet: CPU per call vs per DBOS step (this process; + the server's with -pg-data)", func(k string) string {
		r := fl[k]
		return fmt.Sprintf("%s%s vs %s%s", us(r.oursCPU), serverPart(r, r.oursServer), us(r.dbosCPU), serverPart(r, r.dbosServer))
	})
	if e.pg != nil {
		fmt.Fprintf(w, "| fleet: PostgreSQL WAL per call vs per DBOS step | | %.0f B vs %.0f B |\n", fl["pg"].oursWAL, fl["pg"].dbosWAL)
	}
}

// sessionRows prints the rows of the runs continuing sessions.
func sessionRows(row func(string, func(string) string), sess map[string]sessRun, n int) {
	for i, what := range sessModes {
		if i == 1 {
			what = fmt.Sprintf(what, sess["sqlite"].window)
		}
		goal := ""
		if i < 2 {
			goal = " (goal ≤ 2×)"
		}
		row(fmt.Sprintf("run continuing a session of 1k → %dk items, %s: time%s", n/1000, what, goal), func(k string) string {
			r := sess[k]
			return fmt.Sprintf("%.1f ms → %.1f ms (%.1f×)", float64(r.short[i])/1e6, float64(r.long[i])/1e6, float64(r.long[i])/float64(r.short[i]))
		})
		row(fmt.Sprintf("run continuing a session of 1k → %dk items, %s: allocated%s", n/1000, what, goal), func(k string) string {
			r := sess[k]
			return fmt.Sprintf("%.1f MB → %.1f MB (%.1f×)", float64(r.allocShort[i])/1e6, float64(r.allocLong[i])/1e6, float64(r.allocLong[i])/float64(r.allocShort[i]))
		})
		row(fmt.Sprintf("run continuing a session of 1k → %dk items, %s: items stored with the run", n/1000, what), func(k string) string {
			r := sess[k]
			return fmt.Sprintf("%d → %d", r.logShort[i], r.logLong[i])
		})
	}
}

// printSessions prints the session rows alone (-session-only).
func printSessions(e *env, sess map[string]sessRun, n int) {
	w := os.Stdout
	fmt.Fprintf(w, "\n| runs continuing sessions (issue 22) | SQLite | PostgreSQL |\n|---|---|---|\n")
	sessionRows(func(label string, f func(string) string) {
		pg := "(no PostgreSQL)"
		if e.pg != nil {
			pg = f("pg")
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", label, f("sqlite"), pg)
	}, sess, n)
}

// medianF is the median of xs, 0 when there are none.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
