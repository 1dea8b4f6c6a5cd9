package cli

import (
	"strings"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
)

// completeRunArgs completes a command's positional arguments from the
// store the command's own --store and --tenant flags name: run ids first,
// then (withCall) the call ids of that run, open questions first. It never
// creates a store: a missing SQLite file completes nothing.
func (e *env) completeRunArgs(c *common, withCall bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if len(args) > 1 || (len(args) == 1 && !withCall) {
			return nil, none
		}
		cc := *c
		cc.mustExist = true
		rt, done, err := e.runtime(cmd.Context(), &cc)
		if err != nil {
			return nil, none
		}
		defer done()
		var out []string
		if len(args) == 0 {
			runs, _ := rt.List(cmd.Context(), &actoviq.ListParams{Limit: 500})
			for _, r := range runs {
				if strings.HasPrefix(r.ID, toComplete) {
					out = append(out, r.ID+"\t"+string(r.Status))
				}
			}
			return out, none
		}
		info, err := rt.Get(cmd.Context(), args[0])
		if err != nil {
			return nil, none
		}
		seen := map[string]bool{}
		for _, in := range info.Interruptions {
			if in.CallID != "" && strings.HasPrefix(in.CallID, toComplete) && !seen[in.CallID] {
				seen[in.CallID] = true
				out = append(out, in.CallID+"\t"+string(in.Kind)+": "+in.Tool)
			}
		}
		for _, en := range info.Ledger {
			if strings.HasPrefix(en.CallID, toComplete) && !seen[en.CallID] {
				seen[en.CallID] = true
				out = append(out, en.CallID+"\t"+en.Tool+" ("+string(en.State)+")")
			}
		}
		return out, none
	}
}
