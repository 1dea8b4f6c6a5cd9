package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store/storepg"
)

func main() {
	n := flag.Int("n", 140, "SIGKILLs in total, shared evenly by the store × scenario cells")
	seed := flag.Uint64("seed", 0, "seed of every random choice; 0 draws one (printed)")
	stores := flag.String("store", "all", "sqlite, pg or all (pg needs -pg or ACTOVIQ_TEST_PG_URL)")
	only := flag.String("scenario", "", "comma-separated scenarios to run; empty means all: "+scenarioNames())
	jobs := flag.Int("j", 2, "cells (store × scenario) run at once")
	pgURL := flag.String("pg", os.Getenv("ACTOVIQ_TEST_PG_URL"), "PostgreSQL URL; each cell uses a schema of its own, dropped at the end")
	keep := flag.Bool("keep", false, "keep the work directory (logs, SQLite files) even when every count is 0")
	child := flag.Bool("child", false, "internal: drive runs as a child process")
	mcp := flag.Bool("mcp-server", false, "internal: serve the campaign's MCP tools on stdio")
	mcpLog := flag.String("log", "", "internal: the MCP server's effects log")
	mcpPids := flag.String("pids", "", "internal: where the MCP server writes its pid")
	flag.Parse()

	switch {
	case *mcp:
		if err := mcpServe(*mcpLog, *mcpPids); err != nil {
			fmt.Fprintln(os.Stderr, "campaign mcp server:", err)
			os.Exit(2)
		}
		return
	case *child:
		if err := childMain(); err != nil {
			fmt.Println("FATAL", oneLine(err))
			os.Exit(2)
		}
		return
	}
	if *seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		*seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	os.Exit(coordinate(*n, *seed, *stores, *only, *jobs, *pgURL, *keep))
}

func scenarioNames() string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ")
}

// cell is one store × scenario of the campaign.
type cell struct {
	store    string
	scenario scenarioDef
	quota    int // kills to reach

	episodes, runs, kills, resumes int
	inside                         int // kills inside a store write (journal write, compaction)
	refused                        int // stale decisions the runtime refused (typed, not a violation)
	cancels, cancelRefused         int // the coordinator's Cancel returned nil / an error (cancel scenario)
	takeovers                      int // runs v2 took over (takeover scenario)
	c                              counts
	details                        []string
	took                           time.Duration
	fatal                          error
}

func coordinate(n int, seed uint64, stores, only string, jobs int, pgURL string, keep bool) int {
	var kinds []string
	switch stores {
	case "sqlite", "pg":
		kinds = []string{stores}
	case "all":
		kinds = []string{"sqlite", "pg"}
	default:
		fmt.Fprintf(os.Stderr, "crash-campaign: -store %q: want sqlite, pg or all\n", stores)
		return 2
	}
	if pgURL == "" && stores != "sqlite" {
		fmt.Fprintln(os.Stderr, "crash-campaign: -store "+stores+" needs PostgreSQL: set ACTOVIQ_TEST_PG_URL or -pg URL (scripts/crash-campaign starts a cluster itself), or pass -store sqlite")
		return 2
	}
	var scs []scenarioDef
	if only == "" {
		scs = scenarios
	} else {
		for _, name := range strings.Split(only, ",") {
			sc, ok := scenarioByName(strings.TrimSpace(name))
			if !ok {
				fmt.Fprintf(os.Stderr, "crash-campaign: -scenario %q: want one of %s\n", name, scenarioNames())
				return 2
			}
			scs = append(scs, sc)
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash-campaign:", err)
		return 2
	}
	work, err := os.MkdirTemp("", "actoviq-campaign-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash-campaign:", err)
		return 2
	}
	var cells []*cell
	for _, k := range kinds {
		for _, sc := range scs {
			cells = append(cells, &cell{store: k, scenario: sc})
		}
	}
	for i, c := range cells {
		c.quota = n / len(cells)
		if i < n%len(cells) {
			c.quota++
		}
		c.quota = max(c.quota, 1)
	}
	fmt.Printf("crash campaign: seed %d, %d kills over %d cells (%d at once), work dir %s\n", seed, n, len(cells), jobs, work)
	start := time.Now()
	sem := make(chan struct{}, max(jobs, 1))
	var wg sync.WaitGroup
	for _, c := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			c.fatal = c.run(context.Background(), seed, self, work, pgURL)
			c.took = time.Since(t0)
		}()
	}
	wg.Wait()
	return report(cells, seed, n, stores, time.Since(start), work, keep)
}

func report(cells []*cell, seed uint64, n int, stores string, took time.Duration, work string, keep bool) int {
	fmt.Printf("\n%-7s %-11s %5s %5s %6s %7s %7s %11s %4s %9s %10s %11s %11s %10s %11s %9s %6s %7s\n",
		"store", "scenario", "runs", "kills", "resume", "refused", "dup_eff", "lost_result", "dup", "unanswer", "unexplain", "incomplete", "key_change", "errors",
		"cancel_lost", "downgrade", "time", "")
	var total counts
	kills, resumes, runs, refused, inside := 0, 0, 0, 0, 0
	cancels, cancelRefused, takeovers := 0, 0, 0
	bad := 0
	for _, c := range cells {
		mark := "ok"
		if c.fatal != nil || c.c.any() {
			mark = "FAIL"
			bad++
		}
		fmt.Printf("%-7s %-11s %5d %5d %6d %7d %7d %11d %4d %9d %10d %11d %11d %10d %11d %9d %5.1fs %7s\n",
			c.store, c.scenario.name, c.runs, c.kills, c.resumes, c.refused, c.c.DupEffects, c.c.Lost, c.c.DupItems, c.c.Unanswered,
			c.c.Unexplained, c.c.Incomplete, c.c.KeyChanges, c.c.Errors, c.c.CancelLost, c.c.Downgrades, c.took.Seconds(), mark)
		cancels, cancelRefused, takeovers = cancels+c.cancels, cancelRefused+c.cancelRefused, takeovers+c.takeovers
		total.add(c.c)
		kills, resumes, runs, refused = kills+c.kills, resumes+c.resumes, runs+c.runs, refused+c.refused
		inside += c.inside
	}
	fmt.Printf("%-7s %-11s %5d %5d %6d %7d %7d %11d %4d %9d %10d %11d %11d %10d %11d %9d %5.1fs\n",
		"total", "", runs, kills, resumes, refused, total.DupEffects, total.Lost, total.DupItems, total.Unanswered,
		total.Unexplained, total.Incomplete, total.KeyChanges, total.Errors, total.CancelLost, total.Downgrades, took.Seconds())
	fmt.Printf("cross-process Cancels: %d returned nil, %d returned an error; runs taken over by v2 under workers: %d\n",
		cancels, cancelRefused, takeovers)
	if bad == 0 {
		fmt.Printf("crash campaign: seed %d: %d kills (%d inside a store's journal write or compaction), %d resumes, %d runs, 0 violations in %.0fs\n",
			seed, kills, inside, resumes, runs, took.Seconds())
		if !keep {
			os.RemoveAll(work)
		}
		return 0
	}
	for _, c := range cells {
		if c.fatal == nil && !c.c.any() {
			continue
		}
		fmt.Printf("\nFAIL %s/%s (seed %d):\n", c.store, c.scenario.name, seed)
		if c.fatal != nil {
			fmt.Printf("  campaign error: %v\n", c.fatal)
		}
		for _, d := range c.details {
			fmt.Printf("  %s\n", d)
		}
		fmt.Printf("  replay: scripts/crash-campaign -seed %d -store %s -scenario %s -n %d   (logs kept in %s)\n",
			seed, c.store, c.scenario.name, c.quota, filepath.Join(work, c.store+"-"+c.scenario.name))
	}
	return 1
}

// run plays the cell's episodes until it has its kills: a calibration
// episode without kills first (it measures the writes and the wall time a
// drive takes), then armed ones.
func (c *cell) run(ctx context.Context, seed uint64, self, work, pgURL string) error {
	dir := filepath.Join(work, c.store+"-"+c.scenario.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(c.store + "/" + c.scenario.name))
	rng := mrand.New(mrand.NewPCG(seed, h.Sum64()))
	tg := target{Kind: c.store}
	switch c.store {
	case "sqlite":
		tg.DSN = filepath.Join(dir, "actoviq.db")
	case "pg":
		tg.DSN, tg.Schema = pgURL, fmt.Sprintf("campaign_%s_%d_%d", c.scenario.name, os.Getpid(), seed%1e9)
	}
	s, err := tg.open(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", c.store, err)
	}
	defer s.Close()
	if ps, ok := s.(*storepg.Store); ok {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = ps.Pool().Exec(dctx, `DROP SCHEMA IF EXISTS "`+tg.Schema+`" CASCADE`)
		}()
	}
	rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: leaseTTL})
	if err != nil {
		return err
	}
	defer rt.Close()
	ep := &episodeEnv{c: c, rt: rt, tg: tg, self: self, rng: rng}
	if err := ep.play(ctx, filepath.Join(dir, "e0"), "e0", false); err != nil {
		return err
	}
	for i := 1; c.kills < c.quota; i++ {
		if i > 4*c.quota+10 {
			return fmt.Errorf("%d episodes gave only %d of %d kills", i-1, c.kills, c.quota)
		}
		name := "e" + strconv.Itoa(i)
		if err := ep.play(ctx, filepath.Join(dir, name), name, true); err != nil {
			return err
		}
	}
	return nil
}

// drive is what one child process did.
type driveResult struct {
	killed bool
	status map[string]string // run id → status or "error <msg>"
	writes int
	took   time.Duration
	fail   string // the child failed on its own
}

// spawn runs one child drive, SIGKILLing it after delay (counted from the
// moment it is ready) when delay > 0.
func spawn(self string, sp childSpec, delay time.Duration) driveResult {
	b, _ := json.Marshal(sp)
	cmd := exec.Command(self, "-child")
	// Compactions every 2 log rows, so that the short runs of the
	// scenarios compact (and a kill can land inside one).
	cmd.Env = append(os.Environ(), "CAMPAIGN_CHILD="+string(b), "ACTOVIQ_COMPACT_EVERY=2")
	if sp.KillPoint != "" {
		cmd.Env = append(cmd.Env, "ACTOVIQ_KILLPOINT="+sp.KillPoint)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &limited{w: &stderr, n: 8 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return driveResult{fail: err.Error()}
	}
	if err := cmd.Start(); err != nil {
		return driveResult{fail: err.Error()}
	}
	res := driveResult{status: map[string]string{}}
	guard := time.AfterFunc(3*time.Minute, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var timer *time.Timer
	var fatal string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "READY":
			if delay > 0 {
				timer = time.AfterFunc(delay, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			}
		case strings.HasPrefix(line, "RUN "):
			f := strings.SplitN(line, " ", 3)
			if len(f) == 3 {
				res.status[f[1]] = f[2]
			}
		case strings.HasPrefix(line, "WRITES "):
			var us int64
			fmt.Sscanf(line, "WRITES %d %d", &res.writes, &us)
			res.took = time.Duration(us) * time.Microsecond
		case strings.HasPrefix(line, "FATAL "):
			fatal = strings.TrimPrefix(line, "FATAL ")
		}
	}
	err = cmd.Wait()
	guard.Stop()
	if timer != nil {
		timer.Stop()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.killed = true
			return res
		}
	}
	if err != nil || fatal != "" {
		res.fail = fmt.Sprintf("child: %v %s; stderr: %s", err, fatal, strings.TrimSpace(stderr.String()))
	}
	return res
}

// limited keeps the first n bytes written to it.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// waitGone waits (bounded) until every MCP server process of the episode
// is gone: a killed drive's server dies of its parent-death signal, and
// may still be finishing a write to the log.
func waitGone(pidDir string) error {
	ents, err := os.ReadDir(pidDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		deadline := time.Now().Add(10 * time.Second)
		for !processGone(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("MCP server %d still runs 10s after its drive ended", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
		os.Remove(filepath.Join(pidDir, e.Name()))
	}
	return nil
}

// processGone: no such process, or a zombie.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
