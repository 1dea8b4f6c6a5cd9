package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// The P1 pass: a durable side-effect call against two bare commits.
//
// A sample of the call is the marginal call of one pair of runs, (a run
// with -calls calls − a run with none) / -calls; a sample of the floor is
// the mean of floorReps bare commits. Both are noisy on a shared machine
// (an fsync's latency moves with everyone's I/O), so a median over a few
// rounds of one sample each moves a lot: session 6 read 1.08× to 2.0× for
// one binary in 5-round runs. The pass takes -samples samples of each per
// round, every call sample next to a floor sample in time, and reports,
// besides the ratio of the medians, the median of the paired ratios
// (each call sample over the floor sample taken beside it, which cancels
// drift slower than a pair) and a bootstrap interval of the ratio of the
// medians (how far it could move from the sampling alone).

// p1Stats are the P1 figures of one backend.
type p1Stats struct {
	n                 int
	floor, call       time.Duration // medians
	ratio             float64       // call / (2 × floor), medians
	paired            float64       // median of call_k / (2 × floor_k)
	lo, hi            float64       // bootstrap 5th and 95th percentiles of ratio
	floorIQR, callIQR [2]time.Duration
}

func p1Of(calls, floors []time.Duration) p1Stats {
	n := min(len(calls), len(floors))
	st := p1Stats{n: n}
	if n == 0 {
		return st
	}
	calls, floors = calls[:n], floors[:n]
	st.floor, st.call = median(floors), median(calls)
	st.ratio = float64(st.call) / float64(2*st.floor)
	pr := make([]float64, n)
	for k := range n {
		pr[k] = float64(calls[k]) / float64(2*floors[k])
	}
	st.paired = medianF(pr)
	st.floorIQR = quartiles(floors)
	st.callIQR = quartiles(calls)
	// Bootstrap: resample each side with replacement.
	rng := rand.New(rand.NewPCG(1, 2))
	const boots = 2000
	rs := make([]float64, boots)
	c, f := make([]time.Duration, n), make([]time.Duration, n)
	for b := range boots {
		for k := range n {
			c[k], f[k] = calls[rng.IntN(n)], floors[rng.IntN(n)]
		}
		rs[b] = float64(median(c)) / float64(2*median(f))
	}
	sort.Float64s(rs)
	st.lo, st.hi = rs[boots*5/100], rs[boots*95/100]
	return st
}

// quartiles returns the 25th and 75th percentiles of ds.
func quartiles(ds []time.Duration) [2]time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return [2]time.Duration{s[len(s)/4], s[len(s)*3/4]}
}

// p1Pass runs the timed rounds without DBOS, then counts what a call
// writes, and prints the P1 table.
func (e *env) p1Pass(ctx context.Context, rounds, perRound int) {
	fmt.Fprintf(os.Stderr, "bench: P1: %d rounds × %d samples of %d calls...\n", rounds, perRound, e.calls)
	cpu := e.cpuPass(ctx, rounds)
	e.timed(ctx, rounds, perRound, false)
	c := e.count(ctx)
	w := os.Stdout
	fmt.Fprintf(w, "\nP1: %d rounds × %d samples; marginal call = (run with %d calls − run with 0) / %d; floor = mean of %d bare commits; fsync on.\n",
		rounds, perRound, e.calls, e.calls, floorReps)
	fmt.Fprintf(w, "SQLite: WAL, synchronous=FULL. %s.\n\n", e.pgNotice)
	fmt.Fprintln(w, "| backend | samples | floor (IQR) | call (IQR) | P1 = call / (2 × floor) | paired median | bootstrap 90% | writes / commits / rows per call | client CPU per call / per floor commit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, b := range e.backs {
		if b.floor == nil {
			continue
		}
		st := p1Of(e.samples["call/"+b.name], e.samples["floor/"+b.name])
		fmt.Fprintf(w, "| %s | %d | %s (%s–%s) | %s (%s–%s) | **%.2f×** | %.2f× | %.2f–%.2f× | %.1f / %.1f / %.1f | %s / %s |\n",
			b.name, st.n, us(st.floor), us(st.floorIQR[0]), us(st.floorIQR[1]), us(st.call), us(st.callIQR[0]), us(st.callIQR[1]),
			st.ratio, st.paired, st.lo, st.hi, c.writesPerCall[b.name], c.commitsPerCall[b.name], c.rowsPerCall[b.name],
			us(cpu["cpu/"+b.name]), us(cpu["cpufloor/"+b.name]))
	}
	e.printWritten(ctx)
}

// printWritten prints what a call and a floor commit write: SQLite WAL
// frames (a frame is one page, 4 kB, plus its 24-byte header) and
// PostgreSQL WAL bytes. Medians of five measurements each.
func (e *env) printWritten(ctx context.Context) {
	w := os.Stdout
	const reps = 5
	n := float64(e.calls)
	if sq := e.sqlite; sq != nil {
		db := sq.DB()
		frames := func(fn func()) float64 {
			_, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
			check(err)
			fn()
			var busy, log, done int64
			check(db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done))
			return float64(log)
		}
		b := e.backend("sqlite")
		var floor, call, perCommit []float64
		for range reps {
			floor = append(floor, frames(func() {
				for range floorReps {
					check(b.floor(ctx))
				}
			})/floorReps)
			_, _, c0 := b.rows()
			many := frames(func() { _, err := e.run(ctx, b, e.calls); check(err) })
			_, _, c1 := b.rows()
			none := frames(func() { _, err := e.run(ctx, b, 0); check(err) })
			_, _, c2 := b.rows()
			call = append(call, (many-none)/n)
			if dc := float64((c1 - c0) - (c2 - c1)); dc > 0 {
				perCommit = append(perCommit, (many-none)/dc)
			}
		}
		fmt.Fprintf(w, "\nSQLite WAL frames (4 kB pages): per floor commit %.1f; per call %.1f; per commit of a call %.1f\n",
			medianF(floor), medianF(call), medianF(perCommit))
	}
	if e.pool != nil {
		lsn := func() int64 {
			var v int64
			check(e.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint`).Scan(&v))
			return v
		}
		b := e.backend("pg")
		var floor, call []float64
		for range reps {
			l0 := lsn()
			for range floorReps {
				check(b.floor(ctx))
			}
			l1 := lsn()
			_, err := e.run(ctx, b, e.calls)
			check(err)
			l2 := lsn()
			_, err = e.run(ctx, b, 0)
			check(err)
			l3 := lsn()
			floor = append(floor, float64(l1-l0)/floorReps)
			call = append(call, float64((l2-l1)-(l3-l2))/n)
		}
		fmt.Fprintf(w, "PostgreSQL WAL bytes: per floor commit %.0f; per call %.0f\n", medianF(floor), medianF(call))
		// The WAL of ten more runs, for pg_waldump.
		var from, to string
		check(e.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&from))
		for range 10 {
			_, err := e.run(ctx, b, e.calls)
			check(err)
		}
		check(e.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&to))
		fmt.Fprintf(w, "PostgreSQL: ten runs of %d calls wrote their WAL from %s to %s (pg_waldump -s %s -e %s)\n", e.calls, from, to, from, to)
	}
}

// sqliteWALPages runs one run with -calls calls on SQLite and prints, for
// each commit it made, the pages written to the WAL by b-tree (table or
// index) and page type, from the WAL file's frame headers and dbstat.
func (e *env) sqliteWALPages(ctx context.Context) {
	sq := e.sqlite
	db := sq.DB()
	b := e.backend("sqlite")
	_, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	check(err)
	runID := fmt.Sprintf("r%d-", e.seq.Load()+1)
	_, err = e.run(ctx, b, e.calls)
	check(err)
	defer e.printEventRows(ctx, runID)
	wal, err := os.ReadFile(filepath.Join(e.dir, "actoviq.db-wal"))
	check(err)
	type page struct{ name, kind string }
	pages := map[uint32]page{}
	rows, err := db.QueryContext(ctx, `SELECT name, pageno, pagetype FROM dbstat`)
	check(err)
	for rows.Next() {
		var p page
		var no uint32
		check(rows.Scan(&p.name, &no, &p.kind))
		pages[no] = p
	}
	check(rows.Err())
	rows.Close()
	const pageSize = 4096
	be := func(b []byte) uint32 { return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) }
	if len(wal) < 32 || be(wal[8:12]) != pageSize {
		check(fmt.Errorf("WAL of %d bytes, page size %d: not read", len(wal), be(wal[8:12])))
	}
	counts := map[string]int{}
	var commit []string
	nCommits := 0
	for off := 32; off+24+pageSize <= len(wal); off += 24 + pageSize {
		no, size := be(wal[off:off+4]), be(wal[off+4:off+8])
		p, ok := pages[no]
		name := p.name + "/" + p.kind
		if !ok {
			name = fmt.Sprintf("page %d (free now)", no)
		}
		commit = append(commit, name)
		counts[name]++
		if size != 0 { // a commit frame
			nCommits++
			fmt.Fprintf(os.Stdout, "  commit %d: %d pages: %v\n", nCommits, len(commit), commit)
			commit = nil
		}
	}
	fmt.Fprintf(os.Stdout, "SQLite: one run of %d calls, %d commits; pages by b-tree:\n", e.calls, nCommits)
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	for _, k := range names {
		fmt.Fprintf(os.Stdout, "  %-40s %d\n", k, counts[k])
	}
}

// printEventRows prints the bytes of each column of the events rows of
// the SQLite run whose id starts with prefix.
func (e *env) printEventRows(ctx context.Context, prefix string) {
	cols := []string{"tenant", "run_id", "id", "trace_id", "span_id", "type", "data", "call_id", "tool", "effect", "state",
		"idempotency_key", "args_digest", "args", "result", "error", "holder", "more", "more_calls"}
	q := "SELECT seq, type"
	for _, c := range cols {
		q += ", COALESCE(length(CAST(" + c + " AS BLOB)), 0)"
	}
	rows, err := e.sqlite.DB().QueryContext(ctx, q+" FROM events WHERE run_id LIKE ? || '%' ORDER BY seq", prefix)
	check(err)
	defer rows.Close()
	fmt.Println("events rows of the run (bytes by column, non-zero):")
	for rows.Next() {
		var seq int64
		var typ string
		n := make([]int64, len(cols))
		dest := []any{&seq, &typ}
		for i := range n {
			dest = append(dest, &n[i])
		}
		check(rows.Scan(dest...))
		line, total := "", int64(0)
		for i, c := range cols {
			if n[i] > 0 {
				line += fmt.Sprintf(" %s=%d", c, n[i])
				total += n[i]
			}
		}
		fmt.Printf("  %d %s: %d B:%s\n", seq, typ, total, line)
	}
	check(rows.Err())
}
