package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

func (e *env) runCmd() *cobra.Command {
	var c common
	var af agentFlags
	var runID, session string
	var sessionWindow string
	var jsonOut, detach bool
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Start a run",
		Long: `run starts a run of an agent on PROMPT and shows what happens: the model's text, each
tool call's state change with its idempotency key, retries and their waits. Every call goes
through the durable ledger; by default every side-effect call waits for approval
(--approve side-effect|all|none), and a side effect whose outcome is unknown after a crash
is never run again without a decision. The run remembers how it was started, so
"actoviq resume RUN" needs only its id.

Exit codes:
  0  the run completed
  3  the run is interrupted and needs a decision; the output lists the commands that give it
  1  the run failed or was cancelled
  2  usage or configuration error (nothing was written to the store)
  4  another live process drives the run (the message names its host and pid)
  5  a signal stopped the command; the run was not ended: actoviq resume RUN continues it

Environment:
  OPENAI_API_KEY      API key for --model openai:... and openai-responses:...
  ANTHROPIC_API_KEY   API key for --model anthropic:...
  OPENAI_BASE_URL     base URL of an OpenAI-compatible server, when --base-url is not given
  ANTHROPIC_BASE_URL  base URL for Anthropic, when --base-url is not given
  ACTOVIQ_STORE       the store, when --store is not given (default sqlite:actoviq.db)
API keys are read from the environment on every run and resume, and never stored.`,
		Example: `  actoviq run --model openai:gpt-4.1 --mcp-config mcp.json "Tidy the notes folder"
  actoviq run --model anthropic:claude-sonnet-4-5 --approve all "Send the weekly report"
  actoviq run --model openai:llama3.1 --base-url http://localhost:11434/v1 "Summarise notes.txt"
  actoviq run --store postgres://user@db/actoviq --run-id invoice-42 --model openai-responses:o4-mini "Pay invoice 42"
  actoviq run --json --model openai:gpt-4.1 "..." | jq .type      # one event envelope per line`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			window, err := parseSessionWindow(sessionWindow)
			switch {
			case err != nil:
				return err
			case sessionWindow != "" && session == "":
				return usageErr("--session-window bounds what the model sees of a session: it needs --session")
			}
			cfg, err := af.config(cmd, nil)
			if err != nil {
				return err
			}
			if err := checkStoreURL(e.storeURL(&c)); err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg.jsonOut = jsonOut
			agent, closer, err := e.agent(ctx, cfg)
			if err != nil {
				return err
			}
			defer closer.Close()
			out := newPrinter(e.stdout, e.stderr, jsonOut)
			defer out.stop()
			rt, done, err := e.runtime(ctx, &c)
			if err != nil {
				return err
			}
			defer done()
			agent.SessionWindow = window
			in := &actoviq.Input{RunID: runID, SessionID: session, Meta: cfg.meta(), Items: []item.Item{item.UserText(args[0])}}
			if detach {
				return e.detach(rt, cmd, agent, in, &c)
			}
			dctx, stop := shutdownOnSignal(ctx, rt)
			defer stop()
			res, err := rt.Run(dctx, agent, in, out)
			if errors.Is(err, actoviq.ErrRunExists) {
				out.stop()
				return usageErr("run %q already exists in store %s (tenant %s), and a run id is never run twice: continue it with: actoviq resume %s%s (or start a new run with another --run-id)",
					runID, redactURL(e.storeURL(&c)), tenantOf(&c), shellQuote(runID), storeFlags(&c))
			}
			return e.finish(out, &c, res, err, session)
		},
	}
	c.register(cmd)
	af.register(cmd)
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (an existing id is refused, never re-run)")
	cmd.Flags().StringVar(&session, "session", "", "continue this session (conversation)")
	cmd.Flags().StringVar(&sessionWindow, "session-window", "",
		fmt.Sprintf("with --session: the model sees the session's last N items, from a question among them; all: the whole session (default %d)", actoviq.DefaultSessionWindow))
	cmd.Flags().BoolVar(&detach, "detach", false, "queue the run for a worker (actoviq worker), print its id and exit")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "one JSON event per line on stdout")
	return cmd
}

func (e *env) resumeCmd() *cobra.Command {
	c := common{mustExist: true}
	var af agentFlags
	var rf resumeFlags
	var jsonOut, detach bool
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a run: apply recorded decisions and the recovery rules, then go on",
		Long: "resume continues a run with the settings it was started with (provider, model, base URL, system text, " +
			"MCP config, approval and recovery settings). API keys and MCP secrets are read again from the environment " +
			"and the config file. Flags override what was remembered: each change is recorded in the run's meta and in a " +
			"run.meta_changed event, or refused with the reason (--timeout: the deadline is fixed when the run starts). " +
			"A change to what a waiting call depends on (its tool's effect or input schema, its approval) is refused " +
			"with a field-by-field diff unless --accept-agent-change is given.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeRunArgs(&c, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkStoreURL(e.storeURL(&c)); err != nil {
				return err
			}
			out := newPrinter(e.stdout, e.stderr, jsonOut)
			defer out.stop()
			rt, done, err := e.runtime(ctx, &c)
			if err != nil {
				return err
			}
			defer done()
			info, err := rt.Get(ctx, args[0])
			if err != nil {
				return e.lookupErr(&c, args[0], err)
			}
			if detach {
				if err := refuseFlagsWithDetach(cmd); err != nil {
					return err
				}
				return e.requeue(rt, cmd, info.ID, &c)
			}
			base, err := configFromMeta(info.ID, info.Meta)
			if err != nil {
				return err
			}
			cfg, err := af.config(cmd, base)
			if err != nil {
				return err
			}
			opts, err := rf.options(e, cmd, info, base, cfg)
			if err != nil {
				return err
			}
			cfg.jsonOut = jsonOut
			agent, closer, err := e.agent(ctx, cfg)
			if err != nil {
				return err
			}
			defer closer.Close()
			opts.Sinks = []actoviq.EventSink{out}
			dctx, stop := shutdownOnSignal(ctx, rt)
			defer stop()
			res, err := rt.Resume(dctx, agent, info.ID, opts)
			if err == nil {
				out.stop()
				rf.reportChanges(e, info.ID)
			}
			return e.finish(out, &c, res, err, info.SessionID)
		},
	}
	c.register(cmd)
	af.register(cmd)
	rf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "one JSON event per line on stdout")
	cmd.Flags().BoolVar(&detach, "detach", false, "hand the run back to the queue for a worker (actoviq worker) instead of driving it here")
	return cmd
}

// lookupErr reports a run that could not be read, naming where it was
// looked for and how to see what is there.
func (e *env) lookupErr(c *common, runID string, err error) error {
	if errors.Is(err, actoviq.ErrNotFound) {
		return usageErr("unknown run %q in store %s (tenant %s); list the runs there with: actoviq runs list%s",
			runID, redactURL(e.storeURL(c)), tenantOf(c), storeFlags(c))
	}
	return &exitError{code: ExitFailed, err: err}
}

func tenantOf(c *common) string {
	if c.tenant == "" {
		return store.DefaultTenant
	}
	return c.tenant
}

// finish reports a drive's result and turns it into the exit code.
func (e *env) finish(out *printer, c *common, res *actoviq.RunResult, err error, session string) error {
	out.stop()
	if err != nil {
		if refused := e.resumeRefused(c, err); refused != nil {
			return refused
		}
		if errors.Is(err, actoviq.ErrRunExists) {
			return usageErr("%v", err)
		}
		var closed *actoviq.ClosedError
		if errors.As(err, &closed) {
			return &exitError{code: ExitStopped, err: fmt.Errorf("stopped by a signal; run %s was not ended (a shutdown is not a cancellation): continue it with: actoviq resume %s%s",
				closed.RunID, shellQuote(closed.RunID), storeFlags(c))}
		}
		var ide *actoviq.IDError
		if errors.As(err, &ide) && ide.Field == "Input.RunID" {
			return usageErr("--run-id %q: %s; nothing was stored", ide.ID, ide.Reason)
		}
		return &exitError{code: ExitFailed, err: err}
	}
	if out.json {
		return exitFor(res)
	}
	w := e.stdout
	out.newline()
	switch res.Status {
	case actoviq.StatusCompleted:
		fmt.Fprintf(w, "run %s completed (%d input, %d output tokens)\n", res.RunID, res.Usage.InputTokens, res.Usage.OutputTokens)
	case actoviq.StatusInterrupted:
		fmt.Fprintf(w, "run %s is interrupted and needs a decision:\n", res.RunID)
		printOpenQuestions(w, res.RunID, res.Interruptions, storeFlags(c), "")
	default:
		msg := ""
		if res.Error != nil {
			msg = ": " + res.Error.Error()
		}
		fmt.Fprintf(w, "run %s %s%s\n", res.RunID, res.Status, msg)
		if errors.Is(res.Error, actoviq.ErrSessionConflict) {
			printOvertaken(w, res.RunID, session, storeFlags(c))
		}
	}
	return exitFor(res)
}

// printOvertaken is the way out of a run that another run of its session
// overtook: it is over, and resuming it changes nothing.
func printOvertaken(w io.Writer, runID, session, flags string) {
	fmt.Fprintf(w, "  the run is over: another run of session %s appended first, so this run's answer was not added to the session\n", session)
	fmt.Fprintf(w, "  read its transcript and answer:   actoviq runs show %s%s\n", runID, flags)
	fmt.Fprintf(w, "  continue the conversation:        actoviq run --session %s%s \"...\"\n", shellQuote(session), flags)
}

func exitFor(res *actoviq.RunResult) error {
	switch res.Status {
	case actoviq.StatusCompleted:
		return nil
	case actoviq.StatusInterrupted:
		return &exitError{code: ExitInterrupted, err: silentError{errors.New("interrupted")}}
	}
	return &exitError{code: ExitFailed, err: silentError{fmt.Errorf("run %s", res.Status)}}
}

func storeFlags(c *common) string {
	var b strings.Builder
	if c.store != "" {
		fmt.Fprintf(&b, " --store %s", shellQuote(redactURL(c.store)))
	}
	if c.tenant != "" && c.tenant != store.DefaultTenant {
		fmt.Fprintf(&b, " --tenant %s", shellQuote(c.tenant))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printOpenQuestions prints each interruption with the commands that answer
// it, then the command that continues the run.
func printOpenQuestions(w io.Writer, runID string, ins []actoviq.Interruption, flags, then string) {
	for _, in := range ins {
		printInterruption(w, &in)
		if in.Kind == actoviq.InterruptProvider {
			fmt.Fprintln(w, "  nothing to decide: when the provider is back, resume makes one new model call (flags such as --base-url take effect and are recorded)")
			continue
		}
		fmt.Fprintln(w, "  decide with:")
		switch in.Kind {
		case actoviq.InterruptApproval:
			fmt.Fprintf(w, "    actoviq approve %s %s%s\n", runID, in.CallID, flags)
			fmt.Fprintf(w, "    actoviq reject %s %s --reason TEXT%s\n", runID, in.CallID, flags)
		default:
			fmt.Fprintf(w, "    actoviq resolve %s %s --committed --result JSON%s\n", runID, in.CallID, flags)
			fmt.Fprintf(w, "    actoviq resolve %s %s --failed --message TEXT%s\n", runID, in.CallID, flags)
			fmt.Fprintf(w, "    actoviq resolve %s %s --reexecute%s\n", runID, in.CallID, flags)
		}
	}
	if then == "" {
		then = fmt.Sprintf("actoviq resume %s%s", runID, flags)
	}
	fmt.Fprintf(w, "  then: %s\n", then)
}

func printInterruption(w io.Writer, in *actoviq.Interruption) {
	if in.Kind == actoviq.InterruptProvider {
		printProviderFailure(w, in)
		return
	}
	fmt.Fprintf(w, "- %s: call %s, tool %s (%s), state %s\n", in.Kind, in.CallID, in.Tool, in.Effect, in.State)
	fmt.Fprintf(w, "  why: %s\n", in.Reason)
	fmt.Fprintf(w, "  idempotency key %s, attempt %d", in.IdempotencyKey, in.Attempt)
	if !in.StartedAt.IsZero() {
		fmt.Fprintf(w, ", started %s by %s (epoch %d)", in.StartedAt.Format("2006-01-02 15:04:05.000Z07:00"), in.Holder, in.Epoch)
	}
	fmt.Fprintln(w)
	if len(in.Args) > 0 {
		fmt.Fprintf(w, "  arguments: %s\n", in.Args)
	}
	if in.Probe != nil {
		fmt.Fprintf(w, "  probe answered %s", in.Probe.Outcome)
		if in.Probe.Evidence != "" {
			fmt.Fprintf(w, ": %s", in.Probe.Evidence)
		}
		if in.Probe.Error != "" {
			fmt.Fprintf(w, " (error: %s)", in.Probe.Error)
		}
		fmt.Fprintln(w)
		if in.Probe.Outcome == tool.ProbeNotExecuted {
			fmt.Fprintln(w, "  a probe that finds nothing cannot prove the call will not land later (a request may still be in flight),")
			fmt.Fprintln(w, "  so a person decides: --failed if it did not happen, --reexecute to send it again with the same key")
		}
	}
	if len(in.LastError) > 0 {
		fmt.Fprintf(w, "  last error: %s\n", in.LastError)
	}
	printApprovalStatus(w, in.Approval)
}

// printApprovalStatus says who approved a waiting call so far, who is
// still needed, and whether the wait escalated.
func printApprovalStatus(w io.Writer, st *actoviq.ApprovalStatus) {
	if st == nil {
		return
	}
	if st.Required > 1 || len(st.Approvers) > 0 {
		who := "nobody yet"
		if len(st.Approvers) > 0 {
			who = strings.Join(st.Approvers, ", ")
		}
		fmt.Fprintf(w, "  approvals: %d of %d distinct approvers (approved by %s)", len(st.Approvers), st.Required, who)
		if n := st.Required - len(st.Approvers); n > 0 && len(st.MayApprove) > 0 {
			fmt.Fprintf(w, "; still needed: %d more from %s", n, strings.Join(st.MayApprove, ", "))
		}
		fmt.Fprintln(w)
	} else if len(st.MayApprove) > 0 {
		fmt.Fprintf(w, "  may approve: %s\n", strings.Join(st.MayApprove, ", "))
	}
	switch {
	case !st.EscalatedAt.IsZero():
		fmt.Fprintf(w, "  escalated at %s: it waited longer than the approvals policy allows\n", st.EscalatedAt.UTC().Format(time.RFC3339))
	case !st.DecideBy.IsZero():
		fmt.Fprintf(w, "  decide by %s, or it is escalated\n", st.DecideBy.UTC().Format(time.RFC3339))
	}
	if st.Expired > 0 {
		fmt.Fprintf(w, "  %d earlier approval(s) expired before the call started\n", st.Expired)
	}
}

// parseSessionWindow reads --session-window: a number of items, "all" for
// the whole session, or nothing for the default window.
func parseSessionWindow(s string) (int, error) {
	switch s {
	case "":
		return 0, nil
	case "all":
		return actoviq.WholeSession, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, usageErr("--session-window %q: want a number of items above 0, or all (the whole session); without it a run takes the last %d",
			s, actoviq.DefaultSessionWindow)
	}
	return n, nil
}
