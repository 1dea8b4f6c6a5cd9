package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// auditRecord is one line of actoviq audit export: one recorded decision
// (or an approval that went void, an escalation, an agent takeover), with
// the run and call it is about. The shape is stable (schema 1).
type auditRecord struct {
	Schema  int    `json:"schema"`
	Tenant  string `json:"tenant"`
	RunID   string `json:"run_id"`
	AgentID string `json:"agent_id"`
	CallID  string `json:"call_id,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Effect  string `json:"effect,omitempty"`
	// Kind is approve, reject, committed, failed, re-execute, probe,
	// escalated, void, agent_change, ...; Status adds "expired" for an
	// approval that went void before its call started, "partial" for an
	// approval still short of its approvers.
	Kind   string    `json:"kind"`
	Status string    `json:"status,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	// Decision is the record as stored: reason, note, what was seen,
	// every approver with what each saw, the policy versions, evidence.
	Decision *store.DecisionRecord `json:"decision,omitempty"`
	// AgentChange is an agent version that took the run over.
	AgentChange *actoviq.AgentChangeRecord `json:"agent_change,omitempty"`
}

func (e *env) auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The audit trail: every decision recorded on runs, for auditors"}
	cmd.AddCommand(e.auditExportCmd())
	return cmd
}

func (e *env) auditExportCmd() *cobra.Command {
	c := common{mustExist: true}
	var runs []string
	var since, until, output string
	cmd := &cobra.Command{
		Use:   "export (--run RUN ... | --since TIME [--until TIME]) [--output FILE]",
		Short: "Write the audit trail of runs or of a time window as JSON lines",
		Long: "export writes one JSON object per line for every recorded decision of the runs named (--run, repeatable) or\n" +
			"made in a time window (--since, optionally --until: RFC 3339 times, or a duration back from now such as 24h),\n" +
			"oldest first: approvals (with every approver and what each saw: the redacted arguments, their digest, the agent\n" +
			"version, the time), rejections, settlements (committed, failed, re-execute, probe), approvals that expired\n" +
			"before their call started, escalations, and agent versions that took a run over.\n\n" +
			"Each line: {\"schema\":1, \"tenant\", \"run_id\", \"agent_id\", \"call_id\", \"tool\", \"effect\", \"kind\", \"status\",\n" +
			"\"by\", \"at\", \"decision\": the record as stored, \"agent_change\"}.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			from, err := parseWhen(since, now)
			if err != nil {
				return usageErr("--since: %v", err)
			}
			to, err := parseWhen(until, now)
			if err != nil {
				return usageErr("--until: %v", err)
			}
			if len(runs) == 0 && from.IsZero() {
				return usageErr("audit export needs --run RUN or --since TIME (a time window)")
			}
			ctx := cmd.Context()
			rt, done, err := e.runtime(ctx, &c)
			if err != nil {
				return err
			}
			defer done()
			ids := runs
			if len(ids) == 0 {
				list, err := rt.List(ctx, nil)
				if err != nil && !errors.Is(err, actoviq.ErrData) {
					return &exitError{code: ExitFailed, err: err}
				}
				for _, r := range list {
					if !r.UpdatedAt.Before(from) { // a decision writes its run
						ids = append(ids, r.ID)
					}
				}
			}
			var recs []auditRecord
			for _, id := range ids {
				info, err := rt.Get(ctx, id)
				if err != nil {
					return e.lookupErr(&c, id, err)
				}
				for _, r := range auditOf(rt.Tenant(), info) {
					if (!from.IsZero() && r.At.Before(from)) || (!to.IsZero() && r.At.After(to)) {
						continue
					}
					recs = append(recs, r)
				}
			}
			sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
			var w io.Writer = e.stdout
			if output != "" {
				f, err := os.OpenFile(output, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
				if err != nil {
					return usageErr("--output: %v", err)
				}
				defer f.Close()
				w = f
			}
			enc := json.NewEncoder(w)
			for i := range recs {
				if err := enc.Encode(&recs[i]); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			}
			if output != "" {
				fmt.Fprintf(e.stderr, "wrote %d audit records to %s\n", len(recs), output)
			}
			return nil
		},
	}
	c.register(cmd)
	fl := cmd.Flags()
	fl.StringArrayVar(&runs, "run", nil, "a run whose trail to export (repeatable)")
	fl.StringVar(&since, "since", "", "export decisions made at or after this time (RFC 3339, or a duration ago: 24h)")
	fl.StringVar(&until, "until", "", "and at or before this time (default: now)")
	fl.StringVar(&output, "output", "", "write to this file (mode 0600) instead of standard output")
	return cmd
}

// parseWhen reads an RFC 3339 time, or a duration back from now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-12-01T09:00:00Z) or a duration such as 24h", s)
	}
	return t, nil
}

// auditOf lists the recorded decisions of one run.
func auditOf(tenant string, info *actoviq.RunInfo) []auditRecord {
	var out []auditRecord
	add := func(en *store.LedgerEntry, d *store.DecisionRecord, status string) {
		c := *d
		c.Earlier = nil
		r := auditRecord{Schema: 1, Tenant: tenant, RunID: info.ID, AgentID: info.AgentID, CallID: en.CallID, Tool: en.Tool,
			Effect: en.Effect, Kind: d.Kind, Status: status, By: d.By, At: d.At, Decision: &c}
		out = append(out, r)
	}
	for _, en := range info.Ledger {
		for _, d := range []*store.DecisionRecord{en.Approval, en.Resolution} {
			if d == nil {
				continue
			}
			for i := range d.Earlier {
				add(en, &d.Earlier[i], statusOf(&d.Earlier[i]))
			}
			if d == en.Approval && en.Resolution != nil && d.Kind == en.Resolution.Kind && d.At.Equal(en.Resolution.At) {
				continue // a re-execute is recorded as the resolution and the new attempt's approval
			}
			add(en, d, statusOf(d))
		}
	}
	for i := range info.AgentChanges {
		ch := info.AgentChanges[i]
		out = append(out, auditRecord{Schema: 1, Tenant: tenant, RunID: info.ID, AgentID: info.AgentID, Kind: "agent_change",
			By: ch.By, At: ch.At, AgentChange: &ch})
	}
	return out
}

func statusOf(d *store.DecisionRecord) string {
	switch {
	case !d.ExpiredAt.IsZero():
		return "expired"
	case d.Kind == string(actoviq.DecideApprove) && d.Required > 1 && len(d.Approvers) < d.Required:
		return "partial"
	}
	return ""
}
