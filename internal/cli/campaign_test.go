package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// The kill campaign (issue 12): N `actoviq worker` processes drive detached
// runs whose side-effect tools log every execution to a file, some of them
// over MCP stdio, while a chaos loop SIGKILLs a random worker every second
// or so and starts another. An operator loop settles what the recovery
// rules stop for reconciliation (by the evidence: the bank's payments, the
// receipt file) and hands the runs back to the queue. At the end every run
// is completed, no side effect ran twice without a re-execute decision, and
// no run is lost or stuck.
//
// CI runs a small campaign; scripts/kill-campaign runs the full one:
//
//	ACTOVIQ_CAMPAIGN_RUNS=200 ACTOVIQ_CAMPAIGN_WORKERS=4 go test ./internal/cli -run KillCampaign -v

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestKillCampaignPostgres(t *testing.T) {
	base := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if base == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL is not set: the PostgreSQL kill campaign needs a server (scripts/pg start DIR)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("actoviq_schema", fmt.Sprintf("campaign_%d", time.Now().UnixNano()))
	u.RawQuery = q.Encode()
	campaign(t, u.String(), envInt("ACTOVIQ_CAMPAIGN_RUNS", 40), envInt("ACTOVIQ_CAMPAIGN_WORKERS", 3))
}

func TestKillCampaignSQLite(t *testing.T) {
	campaign(t, "sqlite:"+filepath.Join(t.TempDir(), "campaign.db"), envInt("ACTOVIQ_CAMPAIGN_SQLITE_RUNS", 20), 2)
}

type campaignCounts struct {
	runs, mcpRuns, completed, kills, workersStarted int
	resumedRuns                                     int // runs a second drive took over
	reconciliations, recoveries                     int // interruptions met
	probeSettled, resolvedCommitted, reexecuted     int
	executions, payments, duplicates, lost          int
}

func campaign(t *testing.T, storeURL string, nRuns, nWorkers int) {
	if testing.Short() {
		t.Skip("the kill campaign is not short")
	}
	dir := t.TempDir()
	bank := filepath.Join(dir, "bank.jsonl")
	receipts := filepath.Join(dir, "receipts")
	if err := os.MkdirAll(receipts, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.json")
	writeFile(t, plain, `{"turns": [
	  {"tool_calls": [{"id": "call_lookup", "name": "lookup_invoice", "arguments": {"invoice": "INV-7"}},
	                  {"id": "call_pay", "name": "pay_invoice", "arguments": {"invoice": "INV-7", "payee": "ACME Ltd", "amount_eur": 70}}]},
	  {"text": "paid"}]}`)
	var mcpCfg, mcpScript string
	if mdir := os.Getenv("ACTOVIQ_TEST_MCP_DIR"); mdir != "" {
		if _, err := exec.LookPath("node"); err == nil {
			entry := filepath.Join(mdir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
			mcpCfg = filepath.Join(dir, "mcp.json")
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fs": map[string]any{
				"command": "node", "args": []string{entry, receipts}, "trustAnnotations": true,
				"allowedTools": []string{"write_file"}}}})
			writeFile(t, mcpCfg, string(cfg))
			mcpScript = filepath.Join(dir, "mcp.json.script")
			path, _ := json.Marshal(filepath.Join(receipts, "receipt.txt"))
			writeFile(t, mcpScript, `{"turns": [
			  {"tool_calls": [{"id": "call_lookup", "name": "lookup_invoice", "arguments": {"invoice": "INV-8"}},
			                  {"id": "call_pay", "name": "pay_invoice", "arguments": {"invoice": "INV-8", "payee": "ACME Ltd", "amount_eur": 80}}]},
			  {"tool_calls": [{"id": "call_receipt", "name": "fs__write_file", "arguments": {"path": `+string(path)+`, "content": "receipt"}}]},
			  {"text": "paid, receipt filed"}]}`)
		}
	}
	if mcpCfg == "" {
		t.Log("ACTOVIQ_TEST_MCP_DIR is not set (or no node): the campaign runs without MCP calls")
	}
	wenv := []string{"ACTOVIQ_DEMO_BANK_DELAY=300ms"}
	var c campaignCounts
	c.runs = nRuns

	// Queue the runs with `actoviq run --detach`, four at a time.
	ids := make([]string, nRuns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	errs := make(chan string, nRuns)
	for i := range nRuns {
		ids[i] = fmt.Sprintf("c%03d", i)
		args := []string{"run", "--detach", "--store", storeURL, "--run-id", ids[i], "--approve", "none", "--demo-bank", bank}
		if mcpCfg != "" && i%4 == 3 {
			args = append(args, "--model", "scripted:"+mcpScript, "--mcp-config", mcpCfg)
			c.mcpRuns++
		} else {
			args = append(args, "--model", "scripted:"+plain)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := actoviqBin(t, wenv, append(args, "pay the invoice")...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != ids[i] {
				errs <- fmt.Sprintf("run --detach %s: exit %d\n%s%s", ids[i], r.code, r.stdout, r.stderr)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}

	// The operator's view of the store.
	ctx := context.Background()
	st, err := (&env{getenv: func(string) string { return "" }}).openStore(ctx, &common{store: storeURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	// Workers and chaos.
	var mu sync.Mutex
	var workers []*workerProc
	start := func() {
		w := startWorker(t, wenv, "--store", storeURL, "--concurrency", "2", "--lease-ttl", "2s", "--poll", "200ms", "--grace", "5s")
		mu.Lock()
		workers = append(workers, w)
		c.workersStarted++
		mu.Unlock()
	}
	for range nWorkers {
		start()
	}
	chaosDone := make(chan struct{})
	stopChaos := make(chan struct{})
	rng := rand.New(rand.NewPCG(1, uint64(nRuns)))
	go func() {
		defer close(chaosDone)
		for {
			select {
			case <-stopChaos:
				return
			case <-time.After(time.Duration(800+rng.IntN(700)) * time.Millisecond):
			}
			mu.Lock()
			i := rng.IntN(len(workers))
			victim := workers[i]
			workers = append(workers[:i:i], workers[i+1:]...)
			c.kills++
			mu.Unlock()
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			start()
		}
	}()

	reexecs := map[string]int{} // idempotency key → re-execute decisions
	// Chaos stops once three quarters are done or after a budget of time;
	// then the campaign must keep making progress: it fails when no run
	// completed for a whole minute (many lease TTLs: a run is stuck, not
	// slow) or when it takes far past its budget. Progress, not a wall
	// clock, is asserted, so a loaded machine slows the campaign without
	// failing it.
	budget := time.Duration(30+nRuns) * time.Second
	chaosUntil := time.Now().Add(budget)
	hardStop := time.Now().Add(6 * budget)
	const stall = time.Minute
	lastDone, progressAt := -1, time.Now()
	chaosStopped := false
	for {
		runs, err := rt.List(ctx, &actoviq.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range runs {
			switch r.Status {
			case actoviq.StatusCompleted:
				done++
			case actoviq.StatusInterrupted:
				operate(t, rt, storeURL, r.ID, bank, receipts, reexecs, &c)
			case actoviq.StatusFailed, actoviq.StatusCancelled:
				info, _ := rt.Get(ctx, r.ID)
				t.Fatalf("run %s ended %s: %+v", r.ID, r.Status, info.Error)
			}
		}
		if done != lastDone {
			lastDone, progressAt = done, time.Now()
		}
		if !chaosStopped && (done >= nRuns*3/4 || time.Now().After(chaosUntil)) {
			// The last quarter finishes without kills, so that the campaign ends.
			close(stopChaos)
			<-chaosDone
			chaosStopped = true
		}
		if done == nRuns {
			break
		}
		if now := time.Now(); now.Sub(progressAt) > stall || now.After(hardStop) {
			for _, r := range runs {
				if r.Status != actoviq.StatusCompleted {
					h := holderOf(ctx, rt, r.ID)
					t.Errorf("lost or stuck: run %s is %s (holder %+v)", r.ID, r.Status, h)
					c.lost++
				}
			}
			t.Fatalf("%d of %d runs completed; none completed in the last %s", done, nRuns, time.Since(progressAt).Round(time.Second))
		}
		time.Sleep(250 * time.Millisecond) // polling the store the worker processes write; no signal to wait on
	}
	if !chaosStopped {
		close(stopChaos)
		<-chaosDone
	}
	// Drain the survivors: SIGTERM, exit 0.
	mu.Lock()
	live := append([]*workerProc(nil), workers...)
	mu.Unlock()
	for _, w := range live {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range live {
		select {
		case err := <-w.done:
			w.done <- err
			if err != nil {
				t.Errorf("worker after SIGTERM: %v\n%s", err, w.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Error("a worker did not drain after SIGTERM")
		}
	}

	// The evidence.
	calls := countKeys(t, bank+".calls")
	pays := countKeys(t, bank)
	for _, id := range ids {
		info, err := rt.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c.completed++
		if info.Status != actoviq.StatusCompleted {
			t.Errorf("run %s is %s", id, info.Status)
		}
		evs, _ := st.EventList(ctx, &store.EventListParams{Tenant: "default", RunID: id})
		for _, ev := range evs {
			if ev.Type == actoviq.EvRunResumed {
				c.resumedRuns++
				break
			}
		}
		for _, en := range info.Ledger {
			if en.State != store.LedgerCommitted {
				t.Errorf("run %s call %s is %s", id, en.CallID, en.State)
			}
			if en.Resolution != nil && en.Resolution.Kind == "probe" {
				c.probeSettled++
			}
			if want := id + ":" + en.CallID; en.IdempotencyKey != want {
				t.Errorf("run %s call %s has key %s, want %s", id, en.CallID, en.IdempotencyKey, want)
			}
		}
		key := id + ":call_pay"
		c.executions += calls[key]
		c.payments += pays[key]
		if pays[key] != 1 {
			t.Errorf("run %s: %d payments with key %s, want 1", id, pays[key], key)
		}
		if calls[key] > 1+reexecs[key] {
			c.duplicates++
			t.Errorf("run %s: pay_invoice ran %d times with %d re-execute decisions", id, calls[key], reexecs[key])
		}
	}
	t.Logf("kill campaign on %s: %d runs (%d with an MCP call), %d workers at a time, %d SIGKILLs (%d workers started)",
		strings.SplitN(storeURL, ":", 2)[0], c.runs, c.mcpRuns, nWorkers, c.kills, c.workersStarted)
	t.Logf("  completed %d; taken over after a kill or a release %d; reconciliation stops %d, recovery stops %d",
		c.completed, c.resumedRuns, c.reconciliations, c.recoveries)
	t.Logf("  settled by probe %d, by resolve --committed %d, by resolve --reexecute %d", c.probeSettled, c.resolvedCommitted, c.reexecuted)
	t.Logf("  pay_invoice executions %d, payments %d, ran twice without a re-execute decision %d, lost or stuck runs %d",
		c.executions, c.payments, c.duplicates, c.lost)
	if c.kills == 0 {
		t.Error("the chaos loop killed no worker")
	}
}

// operate settles an interrupted run as an operator would, from the
// evidence, with the command line, and hands it back to the queue.
func operate(t *testing.T, rt *actoviq.Runtime, storeURL, runID, bank, receipts string, reexecs map[string]int, c *campaignCounts) {
	t.Helper()
	info, err := rt.Get(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != actoviq.StatusInterrupted {
		return
	}
	if info.Error != nil {
		t.Fatalf("run %s was stopped by a worker: %s", runID, info.Error.Error())
	}
	for _, in := range info.Interruptions {
		args := []string{"resolve", runID, in.CallID, "--store", storeURL, "--by", "campaign-operator"}
		switch {
		case in.Kind == actoviq.InterruptReconciliation && in.Tool == "pay_invoice":
			c.reconciliations++
			if countKeys(t, bank)[in.IdempotencyKey] > 0 {
				args = append(args, "--committed", "--result", `"payment found in the bank under its key"`)
				c.resolvedCommitted++
			} else {
				args = append(args, "--reexecute", "--note", "the bank has no payment with this key")
				reexecs[in.IdempotencyKey]++
				c.reexecuted++
			}
		case in.Kind == actoviq.InterruptReconciliation && in.Tool == "fs__write_file":
			c.reconciliations++
			if b, err := os.ReadFile(filepath.Join(receipts, "receipt.txt")); err == nil && string(b) == "receipt" {
				args = append(args, "--committed", "--result", `"the receipt file holds the receipt"`)
				c.resolvedCommitted++
			} else {
				args = append(args, "--reexecute", "--note", "no receipt file")
				reexecs[in.IdempotencyKey]++
				c.reexecuted++
			}
		case in.Kind == actoviq.InterruptRecovery:
			c.recoveries++
			args = append(args, "--reexecute", "--note", "a read: running it again is harmless")
			reexecs[in.IdempotencyKey]++
			c.reexecuted++
		default:
			t.Fatalf("run %s: unexpected interruption %+v", runID, in)
		}
		if r := actoviqBin(t, nil, args...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := actoviqBin(t, nil, "resume", runID, "--detach", "--store", storeURL); r.code != 0 {
		t.Fatalf("resume --detach %s: exit %d\n%s%s", runID, r.code, r.stdout, r.stderr)
	}
}

// countKeys counts the lines of a JSON-lines file by idempotency key.
func countKeys(t *testing.T, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Key  string `json:"key"`
			Key2 string `json:"idempotency_key"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		out[l.Key+l.Key2]++
	}
	return out
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// holderOf is the run's claim as Get reads it; nil when Get fails.
func holderOf(ctx context.Context, rt *actoviq.Runtime, runID string) *actoviq.RunClaim {
	info, err := rt.Get(ctx, runID)
	if err != nil {
		return nil
	}
	return info.Holder
}
