package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
)

// cliAgentID is the agent id of every run the command starts.
const cliAgentID = "actoviq-cli"

func (e *env) workerCmd() *cobra.Command {
	var c common
	var concurrency int
	var mcpConfig string
	var leaseTTL, poll, grace time.Duration
	var keepFinished string
	var jsonLog bool
	var of opsFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Drive queued runs (actoviq run --detach) until stopped",
		Long: "worker claims queued runs of its tenant, and runs whose worker died, and drives them. It rebuilds each " +
			"run's agent from the settings the run remembers, as resume does (API keys and MCP secrets come from this " +
			"process's environment and config file). Any number of workers may share one store; on PostgreSQL they " +
			"may run on many machines.\n\n" +
			"SIGTERM or SIGINT drains: no new claims, in-flight runs may finish during --grace, then they go back " +
			"to the queue. A second signal releases them at once.\n\n" +
			"--metrics-listen serves Prometheus metrics; --notify-url POSTs a signed JSON item to a webhook for each\n" +
			"call or run this worker stops for a person (approval, reconciliation, recovery, provider).\n\n" +

			"--keep-finished DURATION also removes, every minute and in bounded batches, the runs that finished longer " +
			"ago than DURATION (what actoviq runs prune never removes is kept: see its help).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if concurrency < 1 {
				return usageErr("--concurrency must be at least 1")
			}
			if leaseTTL <= 0 || poll <= 0 {
				return usageErr("--lease-ttl and --poll must be positive")
			}
			if c.tenant == "" {
				return usageErr("--tenant must not be empty")
			}
			var retention actoviq.Retention
			if keepFinished != "" {
				age, err := parseAge(keepFinished)
				if err != nil || age == 0 {
					return usageErr("--keep-finished: want a positive duration (such as 720h or 30d)")
				}
				retention.KeepFinished = age
			}
			ctx := cmd.Context()
			codec, err := e.codec()
			if err != nil {
				return err
			}
			var h slog.Handler = slog.NewTextHandler(e.stderr, nil)
			if jsonLog {
				h = slog.NewJSONHandler(e.stderr, nil)
			}
			log := slog.New(h)
			op, err := e.newOps(&of, log)
			if err != nil {
				return err
			}
			defer op.close()
			pol, err := e.approvers(&c)
			if err != nil {
				return err
			}
			st, err := e.openStore(ctx, &c)
			if err != nil {
				return err
			}
			defer st.Close()
			rt, err := actoviq.New(st, &actoviq.Config{Tenant: c.tenant, LeaseTTL: leaseTTL, Codec: codec, Sinks: op.sinks, Retention: retention, Approvers: pol})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			defer rt.Close()
			agents := &agentCache{e: e, mcpConfig: absPath(mcpConfig), built: map[string]*cachedAgent{}}
			defer agents.close()

			abort := make(chan struct{})
			stopSignals := e.secondSignal(ctx, abort)
			defer stopSignals()

			info := actoviq.ParseHolder(rt.Holder())
			op.start(ctx, rt)
			fmt.Fprintf(e.stdout, "worker %s (%s) on %s tenant %s, concurrency %d\n", info.Holder, info, redactURL(e.storeURL(&c)), c.tenant, concurrency)
			err = rt.Work(ctx, &actoviq.WorkOptions{Concurrency: concurrency, PollInterval: poll, Grace: grace, Abort: abort,
				Resolve: agents.resolve, ResolveAgentIDs: []string{cliAgentID}, Logger: log})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(e.stdout, "worker %s stopped\n", info.Holder)
			return nil
		},
	}
	c.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&concurrency, "concurrency", 4, "runs driven at once")
	fl.StringVar(&mcpConfig, "mcp-config", "", "MCP servers config file for every run (default: the file each run was started with)")
	fl.DurationVar(&leaseTTL, "lease-ttl", 30*time.Second, "claim lifetime without a heartbeat: how long a dead worker's runs wait before another worker takes them over")
	fl.DurationVar(&poll, "poll", time.Second, "how often an idle worker looks for work (PostgreSQL also wakes it with LISTEN/NOTIFY)")
	fl.DurationVar(&grace, "grace", 30*time.Second, "after a signal, how long in-flight runs may go on before they go back to the queue")
	fl.StringVar(&keepFinished, "keep-finished", "", "remove runs finished longer ago than this (such as 720h or 30d); default: keep every run")
	fl.BoolVar(&jsonLog, "json-log", false, "log JSON lines on stderr")
	of.register(cmd, false)
	return cmd
}

// secondSignal closes abort at the second SIGINT or SIGTERM; the first one
// ends the command's context (cmd/actoviq).
func (e *env) secondSignal(ctx context.Context, abort chan struct{}) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				if n == 2 {
					fmt.Fprintln(e.stderr, "actoviq: second signal: releasing in-flight runs now")
					close(abort)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// agentCache builds each distinct run configuration's agent once, so that
// runs started with the same settings share MCP connections.
type agentCache struct {
	e         *env
	mcpConfig string
	mu        sync.Mutex
	built     map[string]*cachedAgent
}

type cachedAgent struct {
	agent  *actoviq.AgentSpec
	closer io.Closer
}

func (c *agentCache) resolve(ctx context.Context, run *actoviq.RunInfo) (*actoviq.AgentSpec, error) {
	cfg, err := configFromMeta(run.ID, run.Meta)
	if err != nil {
		return nil, err
	}
	if c.mcpConfig != "" {
		cfg.MCPConfig = c.mcpConfig
	}
	k, _ := json.Marshal(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.built[string(k)]; ok {
		return a.agent, nil
	}
	a, closer, err := c.e.agent(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c.built[string(k)] = &cachedAgent{agent: a, closer: closer}
	return a, nil
}

func (c *agentCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.built {
		a.closer.Close()
	}
}

// detach queues a run instead of driving it.
func (e *env) detach(rt *actoviq.Runtime, cmd *cobra.Command, agent *actoviq.AgentSpec, in *actoviq.Input, c *common) error {
	if in.SessionID != "" {
		return usageErr("--detach with --session: a queued run cannot continue a session; run it without --detach")
	}
	id, err := rt.Enqueue(cmd.Context(), agent, in)
	if err != nil {
		if errors.Is(err, actoviq.ErrRunExists) {
			return usageErr("run %q already exists in store %s (tenant %s), and a run id is never run twice: continue it with: actoviq resume %s --detach%s (or queue a new run with another --run-id)",
				in.RunID, redactURL(e.storeURL(c)), tenantOf(c), shellQuote(in.RunID), storeFlags(c))
		}
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintln(e.stdout, id)
	fmt.Fprintf(e.stderr, "run %s is queued; a worker drives it: actoviq worker%s\n", id, storeFlags(c))
	return nil
}

// requeue hands a run back to the queue.
func (e *env) requeue(rt *actoviq.Runtime, cmd *cobra.Command, runID string, c *common) error {
	err := rt.Requeue(cmd.Context(), runID)
	switch {
	case errors.Is(err, actoviq.ErrRunFinished):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w; nothing to queue (actoviq runs show %s%s)", err, runID, storeFlags(c))}
	case errors.Is(err, actoviq.ErrRunHeld):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w; it is being driven, nothing to queue", err)}
	case err != nil:
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(e.stdout, "run %s is queued; a worker resumes it (actoviq worker%s)\n", runID, storeFlags(c))
	return nil
}
