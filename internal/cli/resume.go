package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
)

// ExitHeld: resume (or a decision) was refused because another live
// process drives the run.
const ExitHeld = 4

// resumeFlags are resume's own flags.
type resumeFlags struct {
	accept   bool
	by, note string
	// changes are the settings this resume changed (set by options).
	changes []string
}

// reportChanges says which settings a resume that went ahead changed.
func (f *resumeFlags) reportChanges(e *env, runID string) {
	if len(f.changes) > 0 {
		fmt.Fprintf(e.stderr, "actoviq: run %s now runs with %s (recorded in the run's meta and a run.meta_changed event)\n",
			runID, strings.Join(f.changes, ", "))
	}
}

func (f *resumeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.accept, "accept-agent-change", false,
		"take the run over although the agent changes what a waiting call depends on (recorded with --by and --note; approvals of changed calls become void)")
	fl.StringVar(&f.by, "by", defaultUser(), "with --accept-agent-change: who takes the change over (recorded)")
	fl.StringVar(&f.note, "note", "", "with --accept-agent-change: why (recorded)")
}

// options turns the flags given to resume into what the runtime records:
// a changed flag takes effect and is recorded in the run's meta (and a
// run.meta_changed event), or is refused with the reason. None is ignored.
func (f *resumeFlags) options(e *env, cmd *cobra.Command, info *actoviq.RunInfo, base, cfg *runConfig) (*actoviq.ResumeOptions, error) {
	changes := configChanges(base, cfg)
	switch info.Status {
	case actoviq.StatusCompleted, actoviq.StatusFailed, actoviq.StatusCancelled:
		if len(changes) > 0 || f.accept {
			what := strings.Join(changes, ", ")
			if f.accept {
				what = strings.TrimPrefix(what+", --accept-agent-change", ", ")
			}
			return nil, usageErr("run %s is %s, and a finished run is never driven again: %s would have no effect (start a new run with actoviq run)",
				info.ID, info.Status, what)
		}
	}
	if base.Timeout != cfg.Timeout {
		if base.Timeout == "" {
			return nil, usageErr("--timeout: run %s was started without a deadline, and a resume cannot set one (a run's deadline is fixed when it starts)", info.ID)
		}
		return nil, usageErr("--timeout: run %s keeps the deadline it was started with (timeout %s, deadline %s); a resume cannot change it",
			info.ID, base.Timeout, deadlineText(info))
	}
	if !f.accept && (cmd.Flags().Changed("note") || cmd.Flags().Changed("by")) {
		return nil, usageErr("--by and --note go with --accept-agent-change")
	}
	opts := &actoviq.ResumeOptions{}
	if f.accept {
		if strings.TrimSpace(f.note) == "" {
			return nil, usageErr("--accept-agent-change needs --note WHY (it is recorded with the change)")
		}
		opts.AcceptAgentChange = &actoviq.AcceptAgentChange{By: f.by, Note: f.note}
	}
	if len(changes) > 0 {
		opts.Meta = cfg.meta()
		f.changes = changes
	}
	return opts, nil
}

func deadlineText(info *actoviq.RunInfo) string {
	if info.Deadline.IsZero() {
		return "none"
	}
	return info.Deadline.Format("2006-01-02T15:04:05Z07:00")
}

// configChanges lists the remembered settings the flags change, as
// "--flag old → new".
func configChanges(base, cfg *runConfig) []string {
	var out []string
	add := func(flag, from, to string) {
		if from != to {
			out = append(out, fmt.Sprintf("%s %s → %s", flag, orDash(from), orDash(to)))
		}
	}
	add("--model", base.Provider+":"+base.Model, cfg.Provider+":"+cfg.Model)
	add("--base-url", redactURL(base.BaseURL), redactURL(cfg.BaseURL))
	add("--mcp-config", base.MCPConfig, cfg.MCPConfig)
	if base.System != cfg.System {
		out = append(out, "--system (new text)")
	}
	add("--approve", base.Approve, cfg.Approve)
	add("--recover", base.Recover, cfg.Recover)
	add("--max-retries", retriesText(base.MaxRetries), retriesText(cfg.MaxRetries))
	add("--demo-bank", base.DemoBank, cfg.DemoBank)
	add("--mcp-log", base.MCPLog, cfg.MCPLog)
	add("--no-stream", fmt.Sprint(base.NoStream), fmt.Sprint(cfg.NoStream))
	add("--demo-no-probe", fmt.Sprint(base.DemoNoProbe), fmt.Sprint(cfg.DemoNoProbe))
	if len(out) == 0 && string(base.meta()) != string(cfg.meta()) {
		// A setting without its own line here: still recorded, never silent.
		out = append(out, "changed settings")
	}
	return out
}

func retriesText(n *int) string {
	if n == nil {
		return "2"
	}
	return fmt.Sprint(*n)
}

func orDash(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// resumeRefused turns the runtime's refusals of a resume into the CLI's
// words and exit codes; nil when err is not one.
func (e *env) resumeRefused(c *common, err error) error {
	var ce *actoviq.AgentChangeError
	if errors.As(err, &ce) {
		w := e.stderr
		fmt.Fprintf(w, "actoviq: resume refused: this agent changes what the waiting calls of run %s depend on:\n", ce.RunID)
		for _, ch := range ce.Refused {
			fmt.Fprintf(w, "  %s\n", ch)
		}
		fmt.Fprintf(w, "hint: resume with the settings the run was started with (drop the flags that change these), or take the change over:\n")
		fmt.Fprintf(w, "  actoviq resume %s --accept-agent-change --by NAME --note WHY%s\n", ce.RunID, storeFlags(c))
		fmt.Fprintf(w, "  (recorded with who, when and why; approvals bound to a changed tool or policy become void and those calls ask again)\n")
		return &exitError{code: ExitUsage, err: silentError{err}}
	}
	var held *actoviq.RunHeldError
	if errors.As(err, &held) {
		return &exitError{code: ExitHeld, err: heldMessage(held, c)}
	}
	return nil
}

func heldMessage(h *actoviq.RunHeldError, c *common) error {
	who := "holder " + h.Claim.Holder
	if h.PID != 0 {
		who = fmt.Sprintf("process %d on host %s", h.PID, h.Host)
	}
	return fmt.Errorf("run %s is being driven by %s (claim epoch %d, renewed until %s): wait for it to finish (actoviq runs show %s%s), "+
		"or stop that process; a run whose holder died shows as stalled and resumes with actoviq resume %s%s",
		h.RunID, who, h.Claim.Epoch, h.Claim.ExpiresAt, h.RunID, storeFlags(c), h.RunID, storeFlags(c))
}

// refuseFlagsWithDetach: a detached resume hands the run to a worker,
// which drives it with the agent it registered; agent flags given here
// would have no effect, so they are refused rather than ignored.
func refuseFlagsWithDetach(cmd *cobra.Command) error {
	var given []string
	for _, name := range []string{"model", "base-url", "mcp-config", "mcp-log", "system", "approve", "recover", "max-retries", "timeout", "no-stream",
		"demo-bank", "demo-no-probe", "demo-crash", "accept-agent-change"} {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) > 0 {
		return usageErr("resume --detach hands the run to a worker, which drives it with the agent it registered: %s would have no effect (resume without --detach to use them)",
			strings.Join(given, ", "))
	}
	return nil
}

// printAgentChanges lists the agent versions that took a run over.
func printAgentChanges(w io.Writer, recs []actoviq.AgentChangeRecord) {
	if len(recs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nagent changes:")
	for _, r := range recs {
		who := "taken without an override"
		if r.By != "" {
			who = "accepted by " + r.By
			if r.Note != "" {
				who += ": " + r.Note
			}
		}
		fmt.Fprintf(w, "  %s  %s → %s, %s\n", r.At.Format(time.RFC3339), short12(r.From), short12(r.To), who)
		for _, c := range r.Changes {
			switch c.Kind {
			case actoviq.ChangeRefused:
				fmt.Fprintf(w, "    needed a decision: %s\n", c)
			case actoviq.ChangeConservative:
				fmt.Fprintf(w, "    more careful, taken: %s\n", c)
			}
		}
		if len(r.Voided) > 0 {
			fmt.Fprintf(w, "    approvals void (the calls ask again): %s\n", strings.Join(r.Voided, ", "))
		}
	}
}

func short12(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return digest
}
