// Command bench measures, in one process and with fsync on everywhere, the
// cost of a durable side-effect call in actoviq-go against the floor of the
// commits it needs and against a DBOS Transact step on the same databases.
//
// It is its own module (bench/go.mod), so that the actoviq-go module never
// depends on DBOS. scripts/bench runs it beside the go test benchmarks and
// prints one table; run it alone with
//
//	cd bench && go run . -pg "$ACTOVIQ_TEST_PG_URL"
//
// Every figure is a median over rounds. Within a round the measurements
// are interleaved (their order rotates from round to round), so drift on a
// shared machine hits all of them alike: compare the ratios, which are
// taken within one run. The timed figures take -samples samples per round
// (10 by default: a median of 5 samples moved from 1.08× to 2.0× between
// runs of one binary), and P1 is also given as the median of the paired
// ratios and with a bootstrap interval. -p1-only runs P1 alone and prints
// what a call writes (SQLite WAL pages, PostgreSQL WAL bytes):
//
//	cd bench && go run . -pg "$URL" -p1-only -rounds 10 -samples 20
//
// The marginal call is (a run whose model asks for N calls of a no-op
// side-effect tool in one turn − the same run asking for none) / N. The
// DBOS figure is measured the same way: (a workflow of N steps − a
// workflow of none) / N.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"time"
)

func main() {
	var (
		pgURL       = flag.String("pg", os.Getenv("ACTOVIQ_TEST_PG_URL"), "PostgreSQL URL (a server with fsync on); empty skips PostgreSQL")
		rounds      = flag.Int("rounds", 15, "interleaved rounds; figures are medians over them")
		calls       = flag.Int("calls", 10, "tool calls (and DBOS steps) of the measured run")
		conc        = flag.Int("concurrency", 64, "concurrent runs of the group-commit pass")
		gcWrites    = flag.Int("gc-writes", 20, "transitions per run in the group-commit pass")
		turns       = flag.Int("turns", 1000, "turns of the long run of the memory pass")
		sessN       = flag.Int("session-items", 100_000, "items of the session load pass")
		fleetRounds = flag.Int("fleet-rounds", 3, "rounds of the fleet pass (64 runs against 64 DBOS workflows)")
		sessWindow  = flag.Int("session-window", 100, "AgentSpec.SessionWindow of the explicitly windowed runs continuing sessions (the default window is actoviq.DefaultSessionWindow)")
		sessRounds  = flag.Int("session-rounds", 3, "interleaved rounds of the runs continuing sessions")
	)
	fleetOnly := flag.Bool("fleet-only", false, "run only the fleet pass (64 runs against 64 DBOS workflows)")
	only := flag.String("only", "", "with -fleet-only: run the fleet on this backend only (sqlite or pg)")
	flag.IntVar(&pgCommitLeaders, "commit-leaders", 0, "storepg.Config.CommitLeaders of our PostgreSQL store (0: the store's default)")
	flag.StringVar(&pgDataDir, "pg-data", "", "data directory of the -pg server when it runs on this machine: the fleet pass also reports the server's CPU per call (from /proc)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole bench to this file")
	p1Only := flag.Bool("p1-only", false, "run only the P1 pass: the marginal call against two floor commits, -samples per round, and what each writes")
	walPages := flag.Bool("wal-pages", false, "with -p1-only: at the end, one SQLite run of -calls calls and the pages each of its commits wrote to the WAL, by table or index")
	perRound := flag.Int("samples", 10, "samples of each timed figure per round (floor, call, DBOS step), side by side in time")
	flag.IntVar(&cpuSamples, "cpu-samples", cpuSamples, "samples per round of the CPU pass on each store (a sample: a run of -calls calls less a run of none), after 50 warm-up runs")
	cpuOnly := flag.Bool("cpu-only", false, "run only the CPU pass and print the CPU per call on each store")
	sessionOnly := flag.Bool("session-only", false, "run only the runs continuing sessions (1k and -session-items: default window, -session-window, whole session)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "actoviq-bench-")
	check(err)
	defer os.RemoveAll(dir)

	env, err := setup(ctx, dir, *pgURL, *calls)
	check(err)
	defer env.close(ctx)

	if *fleetOnly {
		check(env.setupDBOS(ctx, *pgURL))
		fl := env.fleet(ctx, *conc, *fleetRounds, *only)
		for _, name := range []string{"sqlite", "pg"} {
			if r, ok := fl[name]; ok {
				fmt.Printf("fleet %s: %d concurrent runs × %d side-effect calls %.0f calls/s vs %d DBOS workflows × %d steps %.0f steps/s (%.2f×)\n",
					name, *conc, *calls, r.ours, *conc, *calls, r.dbos, r.ours/r.dbos)
				fmt.Printf("fleet %s CPU: per call %s here%s vs per DBOS step %s here%s\n", name,
					us(r.oursCPU), serverPart(r, r.oursServer), us(r.dbosCPU), serverPart(r, r.dbosServer))
				if name == "pg" {
					fmt.Printf("fleet pg WAL: per call %.0f B vs per DBOS step %.0f B\n", r.oursWAL, r.dbosWAL)
				}
			}
		}
		return
	}
	if *p1Only {
		env.p1Pass(ctx, *rounds, *perRound)
		if *walPages {
			env.sqliteWALPages(ctx)
		}
		return
	}
	if *cpuOnly {
		cpu := env.cpuPass(ctx, *rounds)
		fmt.Printf("CPU pass: %d rounds × %d samples, after %d warm-up runs; CPU per call (goal on the memory store ≤ 30 µs):\n", *rounds, cpuSamples, cpuWarmRuns)
		for _, b := range env.backs {
			fmt.Printf("  %s: %s (per floor commit %s)\n", b.name, us(cpu["cpu/"+b.name]), us(cpu["cpufloor/"+b.name]))
		}
		return
	}
	if *sessionOnly {
		printSessions(env, env.sessionRuns(ctx, *sessN, *sessWindow, *sessRounds), *sessN)
		return
	}
	fmt.Fprintln(os.Stderr, "bench: CPU pass (before DBOS starts)...")
	cpu := env.cpuPass(ctx, *rounds)
	check(env.setupDBOS(ctx, *pgURL))
	fmt.Fprintf(os.Stderr, "bench: %d interleaved rounds of %d calls...\n", *rounds, *calls)
	med := env.timed(ctx, *rounds, *perRound, true)
	for k, v := range cpu {
		med[k] = v
	}
	fmt.Fprintln(os.Stderr, "bench: counting pass...")
	counts := env.count(ctx)
	fmt.Fprintln(os.Stderr, "bench: group-commit pass...")
	gc := env.groupCommit(ctx, *conc, *gcWrites)
	fmt.Fprintln(os.Stderr, "bench: long-run memory pass...")
	mem := longRun(ctx, *turns)

	fmt.Fprintln(os.Stderr, "bench: session pass...")
	sess := env.sessions(ctx, *sessN, *rounds)
	fmt.Fprintln(os.Stderr, "bench: long runs on the durable stores...")
	long := env.longRuns(ctx, *turns)
	fmt.Fprintln(os.Stderr, "bench: runs continuing sessions...")
	sessRuns := env.sessionRuns(ctx, *sessN, *sessWindow, *sessRounds)
	fmt.Fprintln(os.Stderr, "bench: fleet pass...")
	fl := env.fleet(ctx, *conc, *fleetRounds, "")
	printTable(env, med, counts, gc, mem, sess, *rounds, *perRound, *calls)
	printJournal(env, long, sessRuns, fl, *turns, *sessN, *conc)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// median of the samples, 0 when there are none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// serverPart is the server's CPU per call of a fleet result, when read.
func serverPart(r fleetResult, d time.Duration) string {
	if !r.server {
		return ""
	}
	return " + " + us(d) + " server"
}

func us(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
