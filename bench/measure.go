package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// floorReps is the number of floor commits averaged into one sample.
const floorReps = 10

// timed runs the interleaved rounds and returns the median of each figure:
// "floor/B", "call/B" (marginal call on backend B), "dbos/B". Each round
// takes perRound samples of every figure. With dbos false the DBOS steps
// are left out (the P1 pass).
func (e *env) timed(ctx context.Context, rounds, perRound int, dbos bool) map[string]time.Duration {
	type m struct {
		key string
		fn  func() (time.Duration, error)
	}
	var ms []m
	for _, b := range e.backs {
		if b.floor != nil {
			ms = append(ms, m{"floor/" + b.name, func() (time.Duration, error) {
				start := time.Now()
				for range floorReps {
					if err := b.floor(ctx); err != nil {
						return 0, err
					}
				}
				return time.Since(start) / floorReps, nil
			}})
		}
		ms = append(ms, m{"call/" + b.name, func() (time.Duration, error) {
			many, err := e.run(ctx, b, e.calls)
			if err != nil {
				return 0, err
			}
			none, err := e.run(ctx, b, 0)
			if err != nil {
				return 0, err
			}
			return (many - none) / time.Duration(e.calls), nil
		}})
	}
	for _, name := range []string{"sqlite", "pg"} {
		if _, ok := e.dbos[name]; !ok || !dbos {
			continue
		}
		ms = append(ms, m{"dbos/" + name, func() (time.Duration, error) {
			many, err := e.runDBOS(name, e.calls)
			if err != nil {
				return 0, err
			}
			none, err := e.runDBOS(name, 0)
			if err != nil {
				return 0, err
			}
			return (many - none) / time.Duration(e.calls), nil
		}})
	}
	// Warm up: prepared statements, pool connections, DBOS registration.
	for _, x := range ms {
		_, err := x.fn()
		check(err)
	}
	samples := map[string][]time.Duration{}
	for r := range rounds {
		// perRound samples of each figure, one of each in turn, the order
		// rotating at every turn: a figure's samples and the floor's sit
		// side by side in time.
		for j := range perRound {
			for i := range ms {
				x := ms[(i+r*perRound+j)%len(ms)]
				d, err := x.fn()
				check(err)
				samples[x.key] = append(samples[x.key], d)
			}
		}
	}
	med := map[string]time.Duration{}
	for k, v := range samples {
		med[k] = median(v)
	}
	e.samples = samples
	return med
}

// cpuPass measures the CPU time of the marginal call on each of our
// stores: this process's CPU (engine, driver, garbage collector), so it
// runs before DBOS starts its background goroutines in the process.
//
// A sample is one pair: a run of e.calls calls less a run of none, per
// call. It takes cpuSamples per round (-cpu-samples), after
// cpuWarmRuns runs on each store. Until session 8 it took one sample per
// round after one warm-up run: with -rounds 5 the row rested on 5
// samples taken while the heap still grew to its first GC goal, where
// every byte allocated is a fresh page (13-18 µs of kernel CPU per page
// fault on the 2-core VM), and one sample alone reads anywhere from 1 to
// 130 µs per call there (rusage, other tenants): 5 medians of 5 such
// samples, same binary, read 29-64 µs.
func (e *env) cpuPass(ctx context.Context, rounds int) map[string]time.Duration {
	perRound := cpuSamples
	samples := map[string][]time.Duration{}
	for _, b := range e.backs {
		for range cpuWarmRuns {
			_, err := e.run(ctx, b, e.calls)
			check(err)
		}
	}
	for range rounds {
		for _, b := range e.backs {
			for range perRound {
				c0 := cpuTime()
				_, err := e.run(ctx, b, e.calls)
				check(err)
				c1 := cpuTime()
				_, err = e.run(ctx, b, 0)
				check(err)
				c2 := cpuTime()
				samples["cpu/"+b.name] = append(samples["cpu/"+b.name], ((c1-c0)-(c2-c1))/time.Duration(e.calls))
			}
			if b.floor != nil {
				c0 := cpuTime()
				for range floorReps {
					check(b.floor(ctx))
				}
				samples["cpufloor/"+b.name] = append(samples["cpufloor/"+b.name], (cpuTime()-c0)/floorReps)
			}
		}
	}
	out := map[string]time.Duration{}
	for k, v := range samples {
		out[k] = median(v)
	}
	return out
}

// cpuWarmRuns is the runs on each store before the CPU pass samples: a
// 10-call run allocates about 90 kB, so 50 take the heap past its first
// GC goal (4 MB).
const cpuWarmRuns = 50

// cpuSamples is the CPU pass's samples per round on each store (-cpu-samples).
var cpuSamples = 20

// cpuTime is the CPU time this process has used (user and system, all
// threads: the engine, the drivers, the garbage collector).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type counts struct {
	rowsPerCall, writesPerCall, commitsPerCall map[string]float64
	tripsPerCall, tripsPerWrite                float64
}

// count runs one run with calls and one without on each store and reads
// the stores' own counters (and, on PostgreSQL, the connection's round
// trips) for the difference.
func (e *env) count(ctx context.Context) counts {
	c := counts{rowsPerCall: map[string]float64{}, writesPerCall: map[string]float64{}, commitsPerCall: map[string]float64{}}
	n := float64(e.calls)
	for _, b := range e.backs {
		if b.rows == nil {
			continue
		}
		w0, r0, c0 := b.rows()
		var t0 int64
		if b.name == "pg" {
			t0 = e.wire.trips.Load()
		}
		_, err := e.run(ctx, b, e.calls)
		check(err)
		w1, r1, c1 := b.rows()
		var t1 int64
		if b.name == "pg" {
			t1 = e.wire.trips.Load()
		}
		_, err = e.run(ctx, b, 0)
		check(err)
		w2, r2, c2 := b.rows()
		c.writesPerCall[b.name] = float64((w1-w0)-(w2-w1)) / n
		c.rowsPerCall[b.name] = float64((r1-r0)-(r2-r1)) / n
		c.commitsPerCall[b.name] = float64((c1-c0)-(c2-c1)) / n
		if b.name == "pg" {
			t2 := e.wire.trips.Load()
			c.tripsPerCall = float64((t1-t0)-(t2-t1)) / n
		}
	}
	if e.pg != nil {
		// Round trips of the run write alone: fenced ledger transitions.
		tr := newTransitions(ctx, e.pg, "rt", 1)
		tr.step(ctx, 0) // prepared statement, connection
		t0 := e.wire.trips.Load()
		const k = 50
		for range k {
			tr.step(ctx, 0)
		}
		c.tripsPerWrite = float64(e.wire.trips.Load()-t0) / k
	}
	return c
}

// transitions are fenced ledger transitions (one ledger CAS and one event
// per write, as a tool call's started and committed writes) on runs of
// their own.
type transitions struct {
	s     store.Store
	runs  []string
	fence []store.Fence
	entry []*store.LedgerEntry
}

func newTransitions(ctx context.Context, s store.Store, prefix string, n int) *transitions {
	t := &transitions{s: s}
	for i := range n {
		id := fmt.Sprintf("%s-%d-%s", prefix, i, randHex(4))
		_, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "bench", ID: id, AgentID: "a",
			Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}})
		check(err)
		cl, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "bench", Key: store.RunClaimKey(id), Holder: "bench", TTL: time.Hour})
		check(err)
		f := store.Fence{Key: cl.Key, Holder: cl.Holder, Epoch: cl.Epoch}
		res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: id, Fence: &f,
			Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{Tenant: "bench", RunID: id, CallID: "c", Tool: "noop",
				Effect: "side-effect", State: store.LedgerPrepared, IdempotencyKey: id + ":c", Args: json.RawMessage(`{}`)},
				Event: &store.EventRecord{Type: "tool.prepared", Data: json.RawMessage(`{"call_id":"c"}`)}}}})
		check(err)
		t.runs, t.fence, t.entry = append(t.runs, id), append(t.fence, f), append(t.entry, res.Ledger[0])
	}
	return t
}

// step moves run i's entry once more (started and back, as far as the
// store cares: a CAS on the entry, stored with its event as one record).
func (t *transitions) step(ctx context.Context, i int) {
	next := *t.entry[i]
	next.Attempt++
	res, err := t.s.RunWrite(ctx, &store.RunWriteParams{Tenant: "bench", RunID: t.runs[i], Fence: &t.fence[i],
		Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: next.Revision,
			Event: &store.EventRecord{Type: "tool.started", Data: json.RawMessage(`{"call_id":"c"}`)}}}})
	check(err)
	t.entry[i] = res.Ledger[0]
}

type gcResult struct {
	serial, concurrent float64 // transitions per second
	perCommit          float64 // writes per commit, concurrent phase
	runsSerial         float64 // engine: calls per second, one run at a time
	runsConcurrent     float64 // engine: calls per second, conc runs at once
}

// groupCommit compares n concurrent writers (each on its run) with one
// writer doing the same number of transitions, on SQLite and PostgreSQL;
// then the same with whole runs through the engine.
func (e *env) groupCommit(ctx context.Context, n, per int) map[string]gcResult {
	out := map[string]gcResult{}
	for _, b := range e.backs {
		if b.floor == nil {
			continue
		}
		var r gcResult
		tr := newTransitions(ctx, b.st, "gc", n)
		total := n * per
		start := time.Now()
		for k := range total {
			tr.step(ctx, k%n)
		}
		r.serial = float64(total) / time.Since(start).Seconds()
		_, _, c0 := b.rows()
		var wg sync.WaitGroup
		start = time.Now()
		for i := range n {
			wg.Go(func() {
				for range per {
					tr.step(ctx, i)
				}
			})
		}
		wg.Wait()
		r.concurrent = float64(total) / time.Since(start).Seconds()
		_, _, c1 := b.rows()
		if c1 > c0 {
			r.perCommit = float64(total) / float64(c1-c0)
		}

		// Whole runs: n runs of e.calls calls, one at a time, then at once.
		start = time.Now()
		for range n {
			_, err := e.run(ctx, b, e.calls)
			check(err)
		}
		r.runsSerial = float64(n*e.calls) / time.Since(start).Seconds()
		start = time.Now()
		for range n {
			wg.Go(func() {
				_, err := e.run(ctx, b, e.calls)
				check(err)
			})
		}
		wg.Wait()
		r.runsConcurrent = float64(n*e.calls) / time.Since(start).Seconds()
		out[b.name] = r
	}
	return out
}

type memResult struct {
	allocShort, allocLong float64 // bytes allocated per turn
	turnsShort, turnsLong int
	heapLong              uint64 // live heap after the long run
	cpBytes               int
}

// longRun measures a run of many turns (one call each) on the memory
// store: the allocation per turn of a short and a long run. If the
// engine re-encoded the whole transcript on every write, the long run's
// figure would be about turns/100 times the short one's.
func longRun(ctx context.Context, turns int) memResult {
	short := max(turns/10, 10)
	run := func(n int) (alloc uint64, heap uint64, cp int) {
		st := storemem.New(nil)
		rt, err := actoviq.New(st, nil)
		check(err)
		defer rt.Close()
		noop := tool.Func(tool.Spec{Name: "noop", Effect: tool.SideEffect},
			func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
		ts := make([]scripted.Turn, 0, n+1)
		for i := range n {
			ts = append(ts, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: fmt.Sprint("c", i), Name: "noop", Arguments: json.RawMessage(`{"n":1}`)}}})
		}
		ts = append(ts, scripted.Turn{Text: "done"})
		agent := &actoviq.AgentSpec{ID: "long", Model: "scripted-1", Tools: []tool.Tool{noop}, Provider: scripted.New(ts...),
			Limits: actoviq.Limits{MaxTurns: n + 1}}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "long", Items: []item.Item{item.UserText("go")}})
		check(err)
		if res.Status != actoviq.StatusCompleted {
			check(fmt.Errorf("long run: %s", res.Status))
		}
		runtime.ReadMemStats(&after)
		r, err := st.RunGet(ctx, &store.RunGetParams{Tenant: store.DefaultTenant, ID: "long"})
		check(err)
		runtime.GC()
		var live runtime.MemStats
		runtime.ReadMemStats(&live)
		return after.TotalAlloc - before.TotalAlloc, live.HeapAlloc, len(r.Checkpoint)
	}
	a1, _, _ := run(short)
	a2, heap, cp := run(turns)
	return memResult{allocShort: float64(a1) / float64(short), allocLong: float64(a2) / float64(turns),
		turnsShort: short, turnsLong: turns, heapLong: heap, cpBytes: cp}
}

type sessResult struct {
	load, appendLong, appendShort time.Duration
}

// sessions fills a session with n items on each durable store, then times
// loading it and appending one item to it and to a short session.
func (e *env) sessions(ctx context.Context, n, rounds int) map[string]sessResult {
	out := map[string]sessResult{}
	for _, b := range e.backs {
		if b.floor == nil {
			continue
		}
		fill := func(id string, n int) int64 {
			var rev int64
			for rev < int64(n) {
				k := min(1000, n-int(rev))
				items := make([]json.RawMessage, k)
				for j := range items {
					items[j] = json.RawMessage(fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"text","text":"message %d"}]}`, rev+int64(j)))
				}
				var err error
				rev, err = b.st.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "bench", SessionID: id, ExpectedRevision: rev, Items: items})
				check(err)
			}
			return rev
		}
		long := "long-" + randHex(4)
		short := "short-" + randHex(4)
		revLong := fill(long, n)
		revShort := fill(short, 1000)
		one := []json.RawMessage{json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}`)}
		var loads, appLong, appShort []time.Duration
		for range rounds {
			start := time.Now()
			st, err := b.st.SessionLoad(ctx, &store.SessionLoadParams{Tenant: "bench", SessionID: long})
			loads = append(loads, time.Since(start))
			check(err)
			if len(st.Entries) < n {
				check(fmt.Errorf("session load: %d entries, want %d", len(st.Entries), n))
			}
			start = time.Now()
			revLong, err = b.st.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "bench", SessionID: long, ExpectedRevision: revLong, Items: one})
			appLong = append(appLong, time.Since(start))
			check(err)
			start = time.Now()
			revShort, err = b.st.SessionAppend(ctx, &store.SessionAppendParams{Tenant: "bench", SessionID: short, ExpectedRevision: revShort, Items: one})
			appShort = append(appShort, time.Since(start))
			check(err)
		}
		out[b.name] = sessResult{load: median(loads), appendLong: median(appLong), appendShort: median(appShort)}
	}
	return out
}

func printTable(e *env, med map[string]time.Duration, c counts, gc map[string]gcResult, mem memResult, sess map[string]sessResult, rounds, perRound, calls int) {
	w := os.Stdout
	hasPG := e.pg != nil
	fmt.Fprintf(w, "\nactoviq-go bench: %d interleaved rounds × %d samples, medians; marginal call = (run with %d calls − run with 0) / %d; fsync on.\n", rounds, perRound, calls, calls)
	fmt.Fprintf(w, "SQLite: WAL, synchronous=FULL (ours and DBOS's). %s. DBOS Transact Go %s.\n", e.pgNotice, dbosVersion)
	fmt.Fprintf(w, "Shared machine: absolute figures move between runs; compare the ratios of one run.\n\n")
	col := func(f func(name string) string) string {
		s := "| " + f("sqlite") + " | "
		if hasPG {
			s += f("pg")
		} else {
			s += "(no PostgreSQL)"
		}
		return s + " |"
	}
	row := func(label string, f func(name string) string) { fmt.Fprintf(w, "| %s %s\n", label, col(f)) }
	fmt.Fprintln(w, "| | SQLite | PostgreSQL |")
	fmt.Fprintln(w, "|---|---|---|")
	row("floor: one synchronous commit", func(n string) string { return us(med["floor/"+n]) })
	row("actoviq-go: one durable side-effect call", func(n string) string { return us(med["call/"+n]) })
	row("**P1** call / (2 × floor) (goal ≤ 1.3)", func(n string) string { return ratio(med["call/"+n], 2*med["floor/"+n]) })
	row("P1: paired median; bootstrap 90% interval of P1", func(n string) string {
		st := p1Of(e.samples["call/"+n], e.samples["floor/"+n])
		return fmt.Sprintf("%.2f×; %.2f–%.2f×", st.paired, st.lo, st.hi)
	})
	row("DBOS "+dbosVersion+": one durable step", func(n string) string { return us(med["dbos/"+n]) })
	row("**P2** call / DBOS step (goal ≤ 1.0 SQLite, ≤ 0.7 PG)", func(n string) string { return ratio(med["call/"+n], med["dbos/"+n]) })
	row("client CPU per call / per floor commit (this process: engine, driver, syscalls, GC)", func(n string) string {
		return us(med["cpu/"+n]) + " / " + us(med["cpufloor/"+n])
	})
	row("rows written per call (goal ≤ 3)", func(n string) string { return fmt.Sprintf("%.1f", c.rowsPerCall[n]) })
	row("run writes / commits per call", func(n string) string {
		return fmt.Sprintf("%.1f / %.1f", c.writesPerCall[n], c.commitsPerCall[n])
	})
	if hasPG {
		fmt.Fprintf(w, "| PostgreSQL round trips per run write (goal 1) / per call, all statements | | %.2f / %.1f |\n", c.tripsPerWrite, c.tripsPerCall)
	}
	row("**P5** 64 runs' fenced transitions/s: serial → concurrent (goal ≥ 3×)", func(n string) string {
		g := gc[n]
		return fmt.Sprintf("%.0f → %.0f (%.1f×, %.1f writes/commit)", g.serial, g.concurrent, g.concurrent/g.serial, g.perCommit)
	})
	row("64 whole runs through the engine, calls/s: one at a time → at once", func(n string) string {
		g := gc[n]
		return fmt.Sprintf("%.0f → %.0f (%.1f×)", g.runsSerial, g.runsConcurrent, g.runsConcurrent/g.runsSerial)
	})
	row("session: load 100k items (goal ≤ 60 ms)", func(n string) string {
		return fmt.Sprintf("%.1f ms", float64(sess[n].load)/1e6)
	})
	row("session: append 1 item at 100k / at 1k items", func(n string) string {
		return us(sess[n].appendLong) + " / " + us(sess[n].appendShort)
	})
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| memory store (engine CPU) | |\n|---|---|\n")
	fmt.Fprintf(w, "| one side-effect call, CPU time (goal ≤ 30 µs) / wall time | %s / %s |\n", us(med["cpu/mem"]), us(med["call/mem"]))
	fmt.Fprintf(w, "| allocated per turn: %d-turn run / %d-turn run | %.1f kB / %.1f kB |\n", mem.turnsShort, mem.turnsLong, mem.allocShort/1e3, mem.allocLong/1e3)
	fmt.Fprintf(w, "| checkpoint after %d turns / live heap after the run | %.0f kB / %.1f MB |\n", mem.turnsLong, float64(mem.cpBytes)/1e3, float64(mem.heapLong)/1e6)
}
