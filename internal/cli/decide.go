package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
)

type decideFlags struct {
	by, note string
}

func (f *decideFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.by, "by", defaultUser(), "who decides (recorded)")
	cmd.Flags().StringVar(&f.note, "note", "", "why (recorded)")
}

// decide records one decision and tells how to continue.
func (e *env) decide(cmd *cobra.Command, c *common, d runDecision) error {
	ctx := cmd.Context()
	if err := checkStoreURL(e.storeURL(c)); err != nil {
		return err
	}
	rt, done, err := e.runtime(ctx, c)
	if err != nil {
		return err
	}
	defer done()
	info, err := rt.Get(ctx, d.RunID())
	if err != nil {
		return e.lookupErr(c, d.RunID(), err)
	}
	if err := rt.Decide(ctx, d.RunID(), d.Decision); err != nil {
		if errors.Is(err, approvals.ErrRefused) {
			return usageErr("refused: %v; nothing was recorded", err)
		}
		if errors.Is(err, actoviq.ErrDecision) || errors.Is(err, actoviq.ErrRunFinished) {
			return usageErr("%v; see the run's calls and open questions with: actoviq runs show %s%s", err, shellQuote(d.RunID()), storeFlags(c))
		}
		var held *actoviq.RunHeldError
		if errors.As(err, &held) {
			return &exitError{code: ExitHeld, err: heldMessage(held, c)}
		}
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(e.stdout, "recorded %s for call %s of run %s by %s\n", d.Kind, d.CallID, d.RunID(), d.By)
	switch info.Status {
	case actoviq.StatusCompleted, actoviq.StatusFailed, actoviq.StatusCancelled:
		// A finished run takes only the truth about a started call.
		fmt.Fprintf(e.stdout, "the run is %s and does not continue; the outcome is recorded for the audit trail (actoviq runs show %s%s)\n",
			info.Status, d.RunID(), storeFlags(c))
	default:
		fmt.Fprintln(e.stdout, continueLine(info, storeFlags(c), served(ctx, rt, info)))
	}
	return nil
}

// runDecision is a decision with the run it is for.
type runDecision struct {
	actoviq.Decision
	run string
}

func (d runDecision) RunID() string { return d.run }

func (e *env) approveCmd() *cobra.Command {
	c := common{mustExist: true}
	var df decideFlags
	cmd := &cobra.Command{
		Use:               "approve RUN CALL",
		Short:             "Approve a call that awaits approval",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: e.completeRunArgs(&c, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.decide(cmd, &c, runDecision{actoviq.Decision{CallID: args[1], Kind: actoviq.DecideApprove, By: df.by, Reason: df.note}, args[0]})
		},
	}
	c.register(cmd)
	df.register(cmd)
	return cmd
}

func (e *env) rejectCmd() *cobra.Command {
	c := common{mustExist: true}
	var df decideFlags
	var reason string
	cmd := &cobra.Command{
		Use:               "reject RUN CALL --reason TEXT",
		Short:             "Reject a call that awaits approval; the model sees the reason",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: e.completeRunArgs(&c, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return usageErr("reject needs --reason (the model sees it)")
			}
			return e.decide(cmd, &c, runDecision{actoviq.Decision{CallID: args[1], Kind: actoviq.DecideReject, By: df.by, Reason: reason, Note: df.note}, args[0]})
		},
	}
	c.register(cmd)
	df.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why it is rejected (the model sees it)")
	return cmd
}

func (e *env) resolveCmd() *cobra.Command {
	c := common{mustExist: true}
	var df decideFlags
	var committed, failed, reexecute bool
	var result, message, answer string
	cmd := &cobra.Command{
		Use:   "resolve RUN CALL (--committed --result TEXT|JSON | --failed --message TEXT | --reexecute | --answer JSON)",
		Short: "Settle a call whose outcome is unknown",
		Long: "resolve records what happened to a started call whose outcome the runtime cannot know:\n" +
			"  --committed --result R     it happened; R is its result: plain text (or a JSON string) is the text the model sees,\n" +
			"                             other JSON is kept as structured data\n" +
			"  --failed --message TEXT    it did not happen; the model sees TEXT as an error result\n" +
			"  --reexecute                run it again, with the same idempotency key and the next attempt number\n" +
			"  --answer JSON              answer the question of an input interruption (a JSON object); the call\n" +
			"                             continues from where its tool recorded it stood (an MCP continuation)",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: e.completeRunArgs(&c, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{committed, failed, reexecute, answer != ""} {
				if b {
					n++
				}
			}
			if n != 1 {
				return usageErr("resolve needs exactly one of --committed, --failed, --reexecute or --answer")
			}
			d := actoviq.Decision{CallID: args[1], By: df.by, Reason: df.note}
			switch {
			case committed:
				if result == "" {
					return usageErr("--committed needs --result TEXT or JSON")
				}
				d.Kind = actoviq.DecideCommitted
				var s string
				switch {
				case !json.Valid([]byte(result)):
					d.Result = result // plain text: what the model sees
				case json.Unmarshal([]byte(result), &s) == nil:
					d.Result = s
				default:
					d.Result, d.ResultData = result, json.RawMessage(result)
				}
			case failed:
				if message == "" {
					return usageErr("--failed needs --message TEXT (the model sees it)")
				}
				d.Kind, d.Message = actoviq.DecideFailed, message
			case answer != "":
				if !json.Valid([]byte(answer)) {
					return usageErr("--answer is not valid JSON")
				}
				d.Kind, d.Answer = actoviq.DecideAnswer, json.RawMessage(answer)
			default:
				d.Kind = actoviq.DecideReexecute
			}
			if !committed && result != "" || !failed && message != "" {
				return usageErr("--result goes with --committed, --message with --failed")
			}
			return e.decide(cmd, &c, runDecision{d, args[0]})
		},
	}
	c.register(cmd)
	df.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&committed, "committed", false, "the call happened")
	fl.StringVar(&result, "result", "", "with --committed: the call's result, plain text or JSON")
	fl.BoolVar(&failed, "failed", false, "the call did not happen")
	fl.StringVar(&message, "message", "", "with --failed: what the model sees")
	fl.BoolVar(&reexecute, "reexecute", false, "run the call again with the same idempotency key")
	fl.StringVar(&answer, "answer", "", "answer an input interruption's question (a JSON object)")
	return cmd
}
