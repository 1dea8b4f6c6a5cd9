package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// parseAge reads a duration such as 720h, 90m or 30d (days).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a duration (such as 720h or 30d)", s)
	}
	return v, nil
}

type pruneJSON struct {
	Schema         int       `json:"schema"`
	FinishedBefore time.Time `json:"finished_before"`
	*actoviq.PruneResult
}

func (e *env) runsPruneCmd() *cobra.Command {
	c := common{mustExist: true}
	var before string
	var dryRun, sessions, jsonOut, unpaced bool
	var batch int
	var batchTime time.Duration
	cmd := &cobra.Command{
		Use:   "prune --finished-before DURATION",
		Short: "Remove finished runs older than a duration",
		Long: "prune removes the runs that finished (completed, failed or cancelled) longer ago than --finished-before\n" +
			"(their last write), with their ledger, events and claim, in batches of at most --batch runs, one short\n" +
			"transaction each, sized to take about --batch-time, with a pause twice as long after each, so that\n" +
			"workers are not held up (--unpaced: back to back, for a store nobody else writes to).\n\n" +
			"Never removed: a run that is not finished; a finished run with a call whose outcome is unknown (it\n" +
			"stays for the record until someone settles it: actoviq runs show RUN); a run with a child that is\n" +
			"not finished, or a child whose parent is not; a run whose claim is live; and, without --sessions, a\n" +
			"run of a session still in use (one with a run that is not finished or is younger than the cut-off).\n" +
			"Session journals are never removed.\n\n" +
			"--dry-run removes nothing: it lists the runs that would go, up to the first " + strconv.Itoa(actoviq.MaxDryRunIDs) + ", and says\n" +
			"when there are more (it stops there, so that it costs the same however many runs the store holds).\n" +
			"--json prints {\"schema\":1,...}.\n" +
			"A worker removes finished runs by itself with Config.Retention (actoviq worker --keep-finished).",
		Example: "  actoviq runs prune --finished-before 720h --dry-run\n  actoviq runs prune --finished-before 30d --store postgres://user@db/actoviq",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if before == "" {
				return usageErr("--finished-before is required (such as 720h or 30d)")
			}
			age, err := parseAge(before)
			if err != nil {
				return usageErr("--finished-before: %v", err)
			}
			if batch < 1 || batch > store.MaxPruneBatch {
				return usageErr("--batch %d: want 1 to %d", batch, store.MaxPruneBatch)
			}
			if batchTime <= 0 {
				return usageErr("--batch-time %v: want a positive duration (such as 20ms)", batchTime)
			}
			rt, done, err := e.runtime(cmd.Context(), &c)
			if err != nil {
				return err
			}
			defer done()
			cut := time.Now().Add(-age)
			res, err := rt.Prune(cmd.Context(), &actoviq.PruneParams{FinishedBefore: cut, DryRun: dryRun, Sessions: sessions, Batch: batch,
				BatchTime: batchTime, Unpaced: unpaced})
			if res == nil {
				res = &actoviq.PruneResult{}
			}
			var werr error
			switch {
			case jsonOut:
				werr = writeJSON(e, pruneJSON{Schema: jsonSchema, FinishedBefore: cut.UTC(), PruneResult: res})
			case dryRun:
				runs, of := strconv.FormatInt(res.Runs, 10), ""
				if res.More {
					runs, of = "more than "+runs, " in the first "+strconv.FormatInt(res.Runs, 10)
				}
				fmt.Fprintf(e.stdout, "dry run: would remove %s runs finished before %s (%d ledger entries, %d events%s)\n",
					runs, cut.UTC().Format(time.RFC3339), res.LedgerEntries, res.Events, of)
				for _, id := range res.RunIDs {
					fmt.Fprintln(e.stdout, "  "+id)
				}
				if res.More {
					fmt.Fprintf(e.stdout, "the dry run stops after the first %d runs; actoviq runs prune without --dry-run removes them all\n",
						len(res.RunIDs))
				}
			default:
				fmt.Fprintf(e.stdout, "removed %d runs finished before %s (%d ledger entries, %d events) in %d batches\n",
					res.Runs, cut.UTC().Format(time.RFC3339), res.LedgerEntries, res.Events, res.Batches)
			}
			if err := errors.Join(err, werr); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&before, "finished-before", "", "remove runs finished longer ago than this (such as 720h or 30d)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "remove nothing; list the first runs that would go")
	cmd.Flags().BoolVar(&sessions, "sessions", false, "also remove finished runs of sessions still in use")
	cmd.Flags().IntVar(&batch, "batch", 500, "the most runs per batch (one transaction)")
	cmd.Flags().DurationVar(&batchTime, "batch-time", 20*time.Millisecond, "how long one batch may hold the store (sizes the batches)")
	cmd.Flags().BoolVar(&unpaced, "unpaced", false, "batches of --batch runs back to back, without pauses")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "JSON output")
	return cmd
}
