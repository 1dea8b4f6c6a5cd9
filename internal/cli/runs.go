package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

func (e *env) runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "List and show runs", RunE: groupRunE}
	cmd.AddCommand(e.runsListCmd(), e.runsShowCmd(), e.runsPruneCmd())
	return cmd
}

func (e *env) runsListCmd() *cobra.Command {
	c := common{mustExist: true}
	var status string
	var limit int
	var after string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: "list shows the runs of one tenant in one store, newest first.\n\n" +
			"--status takes queued, running, stalled, interrupted, completed, failed or cancelled; interrupted runs\n" +
			"wait for a decision (actoviq runs show RUN prints the commands that give it). running and stalled are\n" +
			"read from the run's claim: running while a live process drives it, stalled when it was running but\n" +
			"its process died or its lease expired (actoviq resume RUN continues it).\n\n" +
			"The list is paged: at most --limit runs, and when it was cut, the last line says so and gives the\n" +
			"--after cursor of the next page. Each page costs the same however many runs the store holds.\n\n" +
			"--json prints {\"schema\":1,\"runs\":[...],\"next\":\"CURSOR\"}: snake_case names, zero values left out\n" +
			"(\"next\" only when the list was cut); the schema number changes only when a field changes meaning or\n" +
			"goes away.",
		Example: "  actoviq runs list --status interrupted\n  actoviq runs list --status interrupted --after CURSOR\n" +
			"  actoviq runs list --store postgres://user@db/actoviq --tenant acme --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch actoviq.Status(status) {
			case "", actoviq.StatusQueued, actoviq.StatusRunning, actoviq.StatusStalled, actoviq.StatusCompleted, actoviq.StatusInterrupted, actoviq.StatusFailed, actoviq.StatusCancelled:
			default:
				return usageErr("--status %q: want queued, running, stalled, interrupted, completed, failed or cancelled", status)
			}
			rt, done, err := e.runtime(cmd.Context(), &c)
			if err != nil {
				return err
			}
			defer done()
			page, listErr := rt.ListPage(cmd.Context(), &actoviq.ListParams{Status: actoviq.Status(status), Limit: limit, After: after})
			var cursorErr *actoviq.CursorError
			if errors.As(listErr, &cursorErr) {
				return usageErr("--after: %s", cursorErr.Reason)
			}
			if listErr != nil && !errors.Is(listErr, actoviq.ErrData) {
				return &exitError{code: ExitFailed, err: listErr}
			}
			runs := page.Runs
			var werr error
			if jsonOut {
				v := runRows(runs)
				v.Next = page.Next
				werr = writeJSON(e, v)
			} else {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tSTATUS\tAGENT\tSESSION\tUPDATED\tHOLDER")
				stalled := 0
				for _, r := range runs {
					if r.Status == actoviq.StatusStalled {
						stalled++
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.AgentID, dash(r.SessionID), r.UpdatedAt.Format(time.RFC3339), holderText(r))
				}
				werr = tw.Flush()
				if page.Next != "" {
					statusFlag := ""
					if status != "" {
						statusFlag = " --status " + status
					}
					fmt.Fprintf(e.stdout, "cut at %d runs; the next page: actoviq runs list%s --limit %d --after %s%s\n",
						len(runs), statusFlag, limit, page.Next, storeFlags(&c))
				}
				if stalled > 0 {
					fmt.Fprintf(e.stdout, "hint: a stalled run has no live process driving it (its claim expired or its holder died); continue it with: actoviq resume RUN%s\n", storeFlags(&c))
				}
			}
			// A corrupt run is reported after the healthy ones, exit 1.
			if err := errors.Join(werr, listErr); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only runs in this status: queued, running, stalled, interrupted, completed, failed or cancelled")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"queued", "running", "stalled", "interrupted", "completed", "failed", "cancelled"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many runs, one page (0: all)")
	cmd.Flags().StringVar(&after, "after", "", "the next page: the cursor a cut list printed")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "JSON output")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) runsShowCmd() *cobra.Command {
	c := common{mustExist: true}
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: status, transcript, ledger and open interruptions with their evidence",
		Long: "show prints a run: its status, transcript, ledger (each call's state and, beside it, its outcome:\n" +
			"rejected, failed, committed, settled by probe...) and its open interruptions with their evidence and\n" +
			"the commands that answer them.\n\n" +
			"--json prints the run as one object with \"schema\":1, snake_case names and zero values left out.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeRunArgs(&c, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, done, err := e.runtime(cmd.Context(), &c)
			if err != nil {
				return err
			}
			defer done()
			info, err := rt.Get(cmd.Context(), args[0])
			if err != nil {
				return e.lookupErr(&c, args[0], err)
			}
			holder := info.Holder
			attempts, err := rt.Attempts(cmd.Context(), info.ID)
			if err != nil {
				return e.lookupErr(&c, args[0], err)
			}
			if jsonOut {
				v := runView(info)
				v.Attempts = attempts
				return writeJSON(e, v)
			}
			showRun(e, info, &c, served(cmd.Context(), rt, info))
			printAttempts(e.stdout, attempts)
			if holder != nil {
				state := "held by"
				if !holder.Live {
					state = "last held by"
				}
				fmt.Fprintf(e.stdout, "\nclaim: %s %s (holder %s, epoch %d, lease until %s)\n", state, holder.HolderInfo.String(),
					holder.Holder, holder.Epoch, holder.ExpiresAt.Format(time.RFC3339))
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "JSON output")
	return cmd
}

// printAttempts lists every real attempt of the run's calls: who started
// it, under which epoch, and how it ended or why it was interrupted.
func printAttempts(w io.Writer, atts []actoviq.CallAttempt) {
	if len(atts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nattempts:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CALL\t#\tSTARTED\tHOLDER\tEPOCH\tENDED\tEND")
	for _, a := range atts {
		end, ended := string(a.End), stamp(a.EndedAt)
		if end == "" {
			end, ended = "(open)", "-"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t%s\t%s\n", a.CallID, a.Number, stamp(a.StartedAt), orDash(a.Holder), a.Epoch, ended, end)
	}
	tw.Flush()
	for _, a := range atts {
		if a.Reason != "" {
			fmt.Fprintf(w, "  %s #%d: %s\n", a.CallID, a.Number, a.Reason)
		}
	}
}

// showRun prints a run for a person. With c, open interruptions come with
// the commands that answer them (c gives the store flags to repeat).
func showRun(e *env, info *actoviq.RunInfo, c *common, servedNow bool) {
	w := e.stdout
	fmt.Fprintf(w, "run %s  status %s  agent %s  turn %d  revision %d\n", info.ID, info.Status, info.AgentID, info.Turn, info.Revision)
	switch {
	case info.Status == actoviq.StatusStalled:
		fmt.Fprintf(w, "stalled: stored as %s, but no live process drives it (%s); continue it with: actoviq resume %s\n",
			info.StoredStatus, holderText(info), info.ID)
	case info.Status == actoviq.StatusRunning && info.Holder != nil:
		fmt.Fprintf(w, "driven now by %s\n", holderText(info))
	}
	fmt.Fprintf(w, "created %s  updated %s", info.CreatedAt.Format(time.RFC3339), info.UpdatedAt.Format(time.RFC3339))
	if info.SessionID != "" {
		fmt.Fprintf(w, "  session %s (from revision %d: the transcript's first %d items", info.SessionID, info.SessionRevision, info.SessionItems)
		if info.SessionOmitted > 0 {
			fmt.Fprintf(w, "; the session window left out %d earlier items", info.SessionOmitted)
		}
		fmt.Fprint(w, ")")
	}
	if !info.Deadline.IsZero() {
		fmt.Fprintf(w, "  deadline %s", info.Deadline.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if info.Error != nil {
		fmt.Fprintf(w, "error: %s\n", info.Error.Error())
	}
	if info.SessionError != "" {
		fmt.Fprintf(w, "session: %s\n", info.SessionError)
	}
	fmt.Fprintf(w, "usage: %d input, %d output tokens\n", info.Usage.InputTokens, info.Usage.OutputTokens)

	fmt.Fprintln(w, "\ntranscript:")
	for _, it := range info.Transcript {
		fmt.Fprintf(w, "  %s\n", summarize(it))
	}

	printAgentChanges(w, info.AgentChanges)
	fmt.Fprintln(w, "\nledger:")
	if len(info.Ledger) == 0 {
		fmt.Fprintln(w, "  (no tool calls)")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CALL\tTOOL\tEFFECT\tSTATE\tOUTCOME\tATTEMPT\tKEY\tSTARTED\tCOMMITTED\tDECIDED")
	for _, en := range info.Ledger {
		decided := "-"
		if en.Resolution != nil {
			decided = en.Resolution.Kind + " by " + en.Resolution.By
		} else if en.Approval != nil {
			decided = en.Approval.Kind + " by " + en.Approval.By
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", en.CallID, en.Tool, en.Effect, en.State, outcome(en), en.Attempt,
			en.IdempotencyKey, stamp(en.StartedAt), stamp(en.CommittedAt), decided)
	}
	tw.Flush()

	if len(info.Interruptions) > 0 {
		fmt.Fprintln(w, "\nopen interruptions:")
		if c == nil {
			for _, in := range info.Interruptions {
				printInterruption(w, &in)
			}
		} else {
			printOpenQuestions(w, info.ID, info.Interruptions, storeFlags(c),
				strings.TrimPrefix(continueLine(info, storeFlags(c), servedNow), "continue with: "))
		}
	}
	if len(info.Unsettled) > 0 {
		fmt.Fprintf(w, "\nunsettled calls (the run is %s and will not continue; record what happened, for the audit trail):\n", info.Status)
		flags := ""
		if c != nil {
			flags = storeFlags(c)
		}
		for _, in := range info.Unsettled {
			printInterruption(w, &in)
			fmt.Fprintf(w, "  record with:\n    actoviq resolve %s %s --committed --result JSON%s\n", info.ID, in.CallID, flags)
			fmt.Fprintf(w, "    actoviq resolve %s %s --failed --message TEXT%s\n", info.ID, in.CallID, flags)
		}
	}
}

// outcome says what became of a call, beside its ledger state: a
// committed entry holds whatever settled it, which may be a rejection, a
// failure a person recorded, a tool's error result or a probe's finding.
func outcome(en *store.LedgerEntry) string {
	if r := en.Resolution; r != nil && en.State == store.LedgerCommitted {
		switch r.Kind {
		case "probe":
			return "settled by probe"
		case string(actoviq.DecideFailed):
			return "failed"
		case string(actoviq.DecideCommitted):
			return "committed"
		case string(actoviq.DecideReject):
			return "rejected"
		case "not-started":
			return "not run"
		case string(actoviq.DecideReexecute):
			if !resultIsError(en.Result) {
				return "committed (re-executed)"
			}
		}
	}
	if a := en.Approval; a != nil && a.Kind == string(actoviq.DecideReject) && en.State == store.LedgerCommitted {
		return "rejected"
	}
	switch en.State {
	case store.LedgerCommitted:
		if resultIsError(en.Result) {
			return "tool error"
		}
		return "committed"
	case store.LedgerStarted, store.LedgerUnknown:
		return "unknown"
	case store.LedgerAwaitingApproval:
		return "awaiting approval"
	}
	return "-"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}

func summarize(it item.Item) string {
	clip := func(s string) string {
		s = strings.ReplaceAll(s, "\n", " ")
		if len(s) > 100 {
			return s[:97] + "..."
		}
		return s
	}
	switch it.Type {
	case item.TypeText:
		return fmt.Sprintf("%s: %s", it.Role, clip(it.Text))
	case item.TypeToolCall:
		return fmt.Sprintf("assistant calls %s [%s] %s", it.ToolCall.Name, it.ToolCall.ID, clip(string(it.ToolCall.Arguments)))
	case item.TypeToolResult:
		prefix := "result"
		if it.ToolResult.IsError {
			prefix = "error result"
		}
		return fmt.Sprintf("%s [%s]: %s", prefix, it.ToolResult.CallID, clip(it.ToolResult.Content))
	}
	return string(it.Type)
}

func resultIsError(result json.RawMessage) bool {
	var r struct {
		IsError bool `json:"is_error"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// holderText is the worker driving a run, or why none is.
func holderText(r *actoviq.RunInfo) string {
	h := r.Holder
	switch r.Status {
	case actoviq.StatusRunning, actoviq.StatusStalled, actoviq.StatusQueued:
	default:
		// Nobody should be driving a run that waits for a person or has
		// ended: its last claim (which may be a process that only recorded
		// a decision) is no news.
		return "-"
	}
	switch {
	case h == nil && r.Status == actoviq.StatusStalled:
		return "none (no claim)"
	case h == nil:
		return "-"
	case h.Live:
		return h.HolderInfo.String()
	case h.Dead:
		return "none (" + h.HolderInfo.String() + " is gone)"
	}
	return "none (lease of " + h.HolderInfo.String() + " expired)"
}
