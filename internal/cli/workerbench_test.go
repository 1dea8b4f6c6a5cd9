package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
)

// Worker benchmarks on PostgreSQL (scripts/bench-workers prints them):
// runs per second with 1, 2 and 4 `actoviq worker` processes, and how long
// a run waits after its worker is SIGKILLed until another takes it over.

func benchStore(b *testing.B) string {
	base := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if base == "" {
		b.Skip("ACTOVIQ_TEST_PG_URL is not set")
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("actoviq_schema", fmt.Sprintf("wbench_%d", time.Now().UnixNano()))
	u.RawQuery = q.Encode()
	return u.String()
}

// benchRuntime opens the store and builds the agent `actoviq run` would
// build for script, so that the workers rebuild the same one from Meta.
func benchRuntime(b *testing.B, storeURL, script, bank string) (*actoviq.Runtime, *actoviq.AgentSpec, *runConfig, func()) {
	ctx := context.Background()
	e := &env{getenv: func(string) string { return "" }, stdout: os.Stdout, stderr: os.Stderr}
	st, err := e.openStore(ctx, &common{store: storeURL})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := actoviq.New(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := &runConfig{Provider: "scripted", Model: script, Approve: "none", Recover: "none", DemoBank: bank}
	a, closer, err := e.agent(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return rt, a, cfg, func() { closer.Close(); rt.Close(); st.Close() }
}

func waitReady(b *testing.B, w *workerProc) {
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(w.stdout.String(), " on ") {
		if time.Now().After(deadline) {
			b.Fatalf("worker not ready:\n%s", w.stderr)
		}
		time.Sleep(5 * time.Millisecond) // polling worker processes (their output, the store); no signal to wait on
	}
}

func BenchmarkWorkerRuns(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			storeURL := benchStore(b)
			dir := b.TempDir()
			script := filepath.Join(dir, "s.json")
			if err := os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"lookup_invoice","arguments":{"invoice":"I"}}]},{"text":"ok"}]}`), 0o644); err != nil {
				b.Fatal(err)
			}
			rt, a, cfg, done := benchRuntime(b, storeURL, script, filepath.Join(dir, "bank"))
			defer done()
			var procs []*workerProc
			for range workers {
				w := startWorker(b, nil, "--store", storeURL, "--concurrency", "4", "--poll", "100ms")
				procs = append(procs, w)
			}
			for _, w := range procs {
				waitReady(b, w)
			}
			const perIter = 100
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			total := 0
			for i := 0; i < b.N; i++ {
				ids := make([]string, perIter)
				for j := range ids {
					id, err := rt.Enqueue(ctx, a, &actoviq.Input{RunID: fmt.Sprintf("b%d-%d", i, j), Meta: cfg.meta(), Items: []item.Item{item.UserText("x")}})
					if err != nil {
						b.Fatal(err)
					}
					ids[j] = id
				}
				for _, id := range ids { // polled every 2 ms (Wait backs off)
					for {
						info, err := rt.Get(ctx, id)
						if err != nil {
							b.Fatal(err)
						}
						if info.Status == actoviq.StatusCompleted {
							break
						}
						if info.Status == actoviq.StatusFailed || info.Status == actoviq.StatusCancelled || info.Status == actoviq.StatusInterrupted {
							b.Fatalf("run %s is %s", id, info.Status)
						}
						time.Sleep(2 * time.Millisecond) // polling worker processes (their output, the store); no signal to wait on
					}
				}
				total += perIter
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(total)/el.Seconds(), "runs/s")
			for _, w := range procs {
				_ = w.cmd.Process.Signal(syscall.SIGTERM)
			}
		})
	}
}

// BenchmarkWorkerTakeover: a run's worker is SIGKILLed in the middle of a
// read; the time until another worker holds the run (lease TTL 2 s, poll
// 100 ms).
func BenchmarkWorkerTakeover(b *testing.B) {
	storeURL := benchStore(b)
	dir := b.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"pay_invoice","arguments":{"invoice":"I","payee":"P","amount_eur":1}}]},{"text":"ok"}]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	rt, a, cfg, done := benchRuntime(b, storeURL, script, filepath.Join(dir, "bank"))
	defer done()
	ctx := context.Background()
	wenv := []string{"ACTOVIQ_DEMO_BANK_DELAY=3s"}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		first := startWorker(b, wenv, "--store", storeURL, "--concurrency", "1", "--lease-ttl", "2s", "--poll", "100ms")
		waitReady(b, first)
		id, err := rt.Enqueue(ctx, a, &actoviq.Input{RunID: fmt.Sprintf("t%d", i), Meta: cfg.meta(), Items: []item.Item{item.UserText("x")}})
		if err != nil {
			b.Fatal(err)
		}
		for {
			h := holderOf(ctx, rt, id)
			if h != nil && h.Live && h.PID == first.cmd.Process.Pid {
				break
			}
			time.Sleep(5 * time.Millisecond) // polling worker processes (their output, the store); no signal to wait on
		}
		second := startWorker(b, wenv, "--store", storeURL, "--concurrency", "1", "--lease-ttl", "2s", "--poll", "100ms")
		waitReady(b, second)
		killed := time.Now()
		_ = first.cmd.Process.Signal(syscall.SIGKILL)
		for {
			h := holderOf(ctx, rt, id)
			if h != nil && h.Live && h.PID == second.cmd.Process.Pid {
				break
			}
			if time.Since(killed) > time.Minute {
				b.Fatal("no takeover in a minute")
			}
			time.Sleep(2 * time.Millisecond) // polling worker processes (their output, the store); no signal to wait on
		}
		total += time.Since(killed)
		if os.Getenv("WBENCH_DEBUG") != "" {
			b.Logf("killed at %s; second worker:\n%s", killed.Format("15:04:05.000"), second.stderr)
		}
		// The run stops for reconciliation (the payment was started); the
		// second worker then drains, so that the next round starts clean.
		if res, err := rt.Wait(ctx, id); err != nil || res.Status != actoviq.StatusInterrupted && res.Status != actoviq.StatusCompleted {
			b.Fatalf("after the takeover: %+v %v", res, err)
		}
		_ = second.cmd.Process.Signal(syscall.SIGTERM)
		<-second.done
		second.done <- nil
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/takeover")
}
