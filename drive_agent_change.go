package actoviq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// agentRecord is what a checkpoint remembers of the agent version that
// drove the run last: enough to tell field by field what a new version
// changes. Texts are kept as digests.
type agentRecord struct {
	Digest       string                `json:"digest"`
	Provider     string                `json:"provider"`
	Model        string                `json:"model"`
	Instructions string                `json:"instructions"`
	Output       string                `json:"output,omitempty"`
	Tools        map[string]toolRecord `json:"tools"`
	Policy       policyRecord          `json:"policy"`
	Recovery     RecoveryPolicy        `json:"recovery"`
	Limits       Limits                `json:"limits"`
}

type toolRecord struct {
	Effect      string        `json:"effect"`
	Input       string        `json:"input"`
	Output      string        `json:"output,omitempty"`
	Description string        `json:"description"`
	Approval    bool          `json:"approval,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
}

type policyRecord struct {
	Version string   `json:"version"` // what approvals bind to
	Effects []string `json:"effects,omitempty"`
	Name    string   `json:"name,omitempty"` // ApprovalPolicy.Version
}

func shortHash(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

func recordAgent(a *AgentSpec) *agentRecord {
	r := &agentRecord{Digest: a.Digest(), Model: a.Model, Instructions: shortHash(a.Instructions), Output: shortHash(compact(a.OutputSchema)),
		Tools: map[string]toolRecord{}, Recovery: a.Recovery, Limits: a.Limits.withDefaults(),
		Policy: policyRecord{Version: a.Approval.version(), Name: a.Approval.Version}}
	if a.Provider != nil {
		r.Provider = a.Provider.Name()
	}
	for _, e := range a.Approval.Effects {
		r.Policy.Effects = append(r.Policy.Effects, e.String())
	}
	slices.Sort(r.Policy.Effects)
	r.Policy.Effects = slices.Compact(r.Policy.Effects)
	for _, t := range a.Tools {
		s := t.Spec()
		r.Tools[s.Name] = toolRecord{Effect: s.Effect.String(), Input: shortHash(compact(s.InputSchema)), Output: shortHash(compact(s.OutputSchema)),
			Description: shortHash(s.Description), Approval: s.RequireApproval, Timeout: s.Timeout}
	}
	return r
}

// needsApproval says whether the rules a record can compare (RequireApproval
// and ApprovalPolicy.Effects) ask for approval of a call with this effect.
func (r *agentRecord) needsApproval(t toolRecord, effect string) bool {
	return t.Approval || slices.Contains(r.Policy.Effects, effect)
}

func effectRank(e string) int {
	switch e {
	case tool.Read.String():
		return 0
	case tool.IdempotentWrite.String():
		return 1
	}
	return 2 // side-effect, and anything unknown
}

// liveApproval reports whether en carries an approval (or re-execute
// decision) for its next attempt that has not been consumed.
func liveApproval(en *store.LedgerEntry) bool {
	a := en.Approval
	return a != nil && (a.Kind == string(DecideApprove) || a.Kind == string(DecideReexecute)) && a.Attempt == en.Attempt+1
}

// unsettled lists the pending turn's calls that are not committed, in
// call order.
func (d *drive) unsettled() []*store.LedgerEntry {
	var out []*store.LedgerEntry
	for _, id := range d.cp.Pending {
		if en := d.ledger[id]; en != nil && en.State != store.LedgerCommitted {
			out = append(out, en)
		}
	}
	return out
}

// agentDiff compares the recorded agent with cur against the unsettled
// calls. It returns every change found.
func (d *drive) agentDiff(cur *agentRecord) []AgentChange {
	old := d.cp.Agent
	if old == nil {
		// A checkpoint written before per-field records: only the whole
		// digest can be compared.
		if d.run.AgentDigest == cur.Digest {
			return nil
		}
		var calls []string
		for _, en := range d.unsettled() {
			calls = append(calls, fmt.Sprintf("%s (%s)", en.CallID, en.State))
		}
		return []AgentChange{{Field: "definition (recorded before per-field records)", From: d.run.AgentDigest, To: cur.Digest,
			Kind: ChangeRefused, Calls: calls}}
	}
	if old.Digest == cur.Digest {
		return nil
	}
	var out []AgentChange
	free := func(field, from, to string) {
		if from != to {
			out = append(out, AgentChange{Field: field, From: from, To: to, Kind: ChangeFree})
		}
	}
	free("provider", old.Provider, cur.Provider)
	free("model", old.Model, cur.Model)
	free("instructions", old.Instructions, cur.Instructions)
	free("output_schema", old.Output, cur.Output)
	if old.Recovery != cur.Recovery {
		out = append(out, AgentChange{Field: "recovery", From: fmt.Sprintf("%+v", old.Recovery), To: fmt.Sprintf("%+v", cur.Recovery), Kind: ChangeFree})
	}
	limit := func(field string, from, to int64, show func(int64) string) {
		switch {
		case to < from:
			out = append(out, AgentChange{Field: field, From: show(from), To: show(to), Kind: ChangeFree})
		case to > from:
			out = append(out, AgentChange{Field: field + " (limits may only narrow while a run waits)", From: show(from), To: show(to), Kind: ChangeRefused})
		}
	}
	num := func(n int64) string { return fmt.Sprint(n) }
	dur := func(n int64) string { return time.Duration(n).String() }
	// A record written before a limit existed holds zero for it: that run
	// ran under the default.
	ol, cl := old.Limits.withDefaults(), cur.Limits
	limit("limits.max_turns", int64(ol.MaxTurns), int64(cl.MaxTurns), num)
	limit("limits.model_timeout", int64(ol.ModelTimeout), int64(cl.ModelTimeout), dur)
	limit("limits.tool_timeout", int64(ol.ToolTimeout), int64(cl.ToolTimeout), dur)
	limit("limits.read_parallelism", int64(ol.ReadParallelism), int64(cl.ReadParallelism), num)
	limit("limits.max_provider_interruptions", int64(ol.MaxProviderInterruptions), int64(cl.MaxProviderInterruptions), num)
	limit("limits.max_tool_output", int64(ol.MaxToolOutput), int64(cl.MaxToolOutput), num)
	limit("limits.max_malformed_calls", int64(ol.MaxMalformedCalls), int64(cl.MaxMalformedCalls), num)
	if ol.RunTimeout != cl.RunTimeout {
		// The deadline was fixed when the run started.
		out = append(out, AgentChange{Field: "limits.run_timeout (the run keeps the deadline it started with)",
			From: ol.RunTimeout.String(), To: cl.RunTimeout.String(), Kind: ChangeFree})
	}

	// Per unsettled call: what its safety depends on.
	used := map[string]bool{}
	type key struct{ tool, field, from, to string }
	merged := map[key]int{}
	add := func(c AgentChange, call string) {
		k := key{c.Tool, c.Field, c.From, c.To}
		if i, ok := merged[k]; ok {
			out[i].Calls = append(out[i].Calls, call)
			if c.Kind == ChangeRefused {
				out[i].Kind = ChangeRefused
			}
			return
		}
		c.Calls = []string{call}
		merged[k] = len(out)
		out = append(out, c)
	}
	policyChanged := old.Policy.Version != cur.Policy.Version
	for _, en := range d.unsettled() {
		used[en.Tool] = true
		call := fmt.Sprintf("%s (%s)", en.CallID, en.State)
		ot, hadTool := old.Tools[en.Tool]
		nt, hasTool := cur.Tools[en.Tool]
		switch {
		case hadTool && !hasTool:
			add(AgentChange{Tool: en.Tool, Field: "removed", From: "present", To: "absent", Kind: ChangeRefused}, call)
			continue
		case !hadTool && hasTool:
			add(AgentChange{Tool: en.Tool, Field: "added (the waiting call would now run it)", From: "absent", To: "present", Kind: ChangeRefused}, call)
			continue
		case !hadTool:
			continue // it was never runnable, and still is not
		}
		if en.Effect != nt.Effect {
			kind := ChangeConservative
			if effectRank(nt.Effect) < effectRank(en.Effect) {
				kind = ChangeRefused
			}
			add(AgentChange{Tool: en.Tool, Field: "effect", From: en.Effect, To: nt.Effect, Kind: kind}, call)
		}
		if ot.Input != nt.Input {
			add(AgentChange{Tool: en.Tool, Field: "input_schema", From: ot.Input, To: nt.Input, Kind: ChangeRefused}, call)
		}
		if !ledger.MayHaveRun(en.State) {
			// Approval is decided before a call starts: only calls that
			// have not started depend on it.
			was, now := old.needsApproval(ot, en.Effect), cur.needsApproval(nt, nt.Effect)
			if was != now {
				kind := ChangeConservative
				if !now {
					kind = ChangeRefused
				}
				add(AgentChange{Tool: en.Tool, Field: "approval", From: approvalWord(was), To: approvalWord(now), Kind: kind}, call)
			}
		}
		if policyChanged && liveApproval(en) && en.Approval.PolicyVersion != cur.Policy.Version {
			add(AgentChange{Field: "approval_policy (an approval is bound to it)", From: en.Approval.PolicyVersion, To: cur.Policy.Version,
				Kind: ChangeRefused}, call)
		}
	}
	if policyChanged {
		if _, ok := merged[key{"", "approval_policy (an approval is bound to it)", old.Policy.Version, cur.Policy.Version}]; !ok {
			out = append(out, AgentChange{Field: "approval_policy", From: old.Policy.Version, To: cur.Policy.Version, Kind: ChangeFree})
		}
	}
	// Tools no unsettled call uses may change freely.
	names := make([]string, 0, len(old.Tools)+len(cur.Tools))
	for n := range old.Tools {
		names = append(names, n)
	}
	for n := range cur.Tools {
		if _, ok := old.Tools[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if used[n] {
			continue
		}
		ot, had := old.Tools[n]
		nt, has := cur.Tools[n]
		switch {
		case !had:
			out = append(out, AgentChange{Tool: n, Field: "added", Kind: ChangeFree})
		case !has:
			out = append(out, AgentChange{Tool: n, Field: "removed", Kind: ChangeFree})
		case ot != nt:
			out = append(out, AgentChange{Tool: n, Field: "definition", Kind: ChangeFree})
		}
	}
	// Descriptions of used tools are free too.
	for _, n := range names {
		if ot, nt := old.Tools[n], cur.Tools[n]; used[n] && ot.Description != nt.Description && nt.Description != "" {
			out = append(out, AgentChange{Tool: n, Field: "description", From: ot.Description, To: nt.Description, Kind: ChangeFree})
		}
	}
	return out
}

func approvalWord(b bool) string {
	if b {
		return "needs approval"
	}
	return "no approval"
}

func refusedOf(changes []AgentChange) []AgentChange {
	var out []AgentChange
	for _, c := range changes {
		if c.Kind == ChangeRefused {
			out = append(out, c)
		}
	}
	return out
}

// checkAgent refuses, before anything is written, an agent whose changes
// need an override that was not given.
func (d *drive) checkAgent(accept *AcceptAgentChange) error {
	changes := d.agentDiff(recordAgent(d.agent))
	if refused := refusedOf(changes); len(refused) > 0 && accept == nil {
		return &AgentChangeError{RunID: d.run.ID, Refused: refused, Changes: changes}
	}
	if accept != nil && strings.TrimSpace(accept.By) == "" {
		return fmt.Errorf("actoviq: run %s: AcceptAgentChange needs By (who takes the change over)", d.run.ID)
	}
	return nil
}

// adopt takes the resuming agent version over, under the claim: it checks
// the changes again against what the ledger holds now, raises effects and
// voids approvals as the rules say, records the new version (and a new
// Meta) in the checkpoint, and emits agent.changed / run.meta_changed, all
// in one write.
func (d *drive) adopt(ctx context.Context, opts *ResumeOptions) error {
	cur := recordAgent(d.agent)
	changes := d.agentDiff(cur)
	refused := refusedOf(changes)
	var accept *AcceptAgentChange
	if opts != nil {
		accept = opts.AcceptAgentChange
	}
	if len(refused) > 0 && accept == nil {
		return &AgentChangeError{RunID: d.run.ID, Refused: refused, Changes: changes}
	}
	var newMeta json.RawMessage
	if opts != nil && opts.Meta != nil {
		if !json.Valid(opts.Meta) {
			return fmt.Errorf("actoviq: run %s: ResumeOptions.Meta is not JSON", d.run.ID)
		}
		newMeta = d.redactJSON(opts.Meta) // as Input.Meta: secret-looking keys never reach the store
	}
	metaChanged := newMeta != nil && compact(newMeta) != compact(d.run.Meta)
	recordedDigest := d.run.AgentDigest
	if d.cp.Agent != nil {
		recordedDigest = d.cp.Agent.Digest
	}
	if recordedDigest == cur.Digest && !metaChanged && d.cp.Agent != nil {
		return nil
	}
	now := d.rt.clock()
	rec := AgentChangeRecord{From: recordedDigest, To: cur.Digest, At: now, Changes: changes}
	if len(refused) > 0 {
		rec.By, rec.Note = accept.By, accept.Note
	}
	var writes []store.LedgerWrite
	var events []*store.EventRecord
	for _, en := range d.unsettled() {
		nt, has := cur.Tools[en.Tool]
		next := cloneEntry(en)
		touched := false
		if has && en.Effect != nt.Effect && effectRank(nt.Effect) > effectRank(en.Effect) {
			rec.Effects = append(rec.Effects, fmt.Sprintf("%s: %s → %s", en.CallID, en.Effect, nt.Effect))
			next.Effect = nt.Effect
			touched = true
		}
		// An approval is void when its call's tool changed in what the call
		// depends on (raised effect included) or its policy changed.
		void := touched
		for _, c := range changes {
			if c.Kind != ChangeFree && slices.Contains(c.Calls, fmt.Sprintf("%s (%s)", en.CallID, en.State)) {
				void = true
			}
		}
		if void && liveApproval(en) {
			rec.Voided = append(rec.Voided, en.CallID)
			next.Approval = &store.DecisionRecord{Kind: "void", By: voidBy(accept), At: now,
				Reason: "the agent changed what this call depends on; the call asks again", Evidence: mustJSON(en.Approval)}
			if en.State == store.LedgerPrepared {
				to, err := ledger.Next(en.State, ledger.AskApproval)
				if err != nil {
					return fmt.Errorf("actoviq: run %s call %s: %w", d.run.ID, en.CallID, err)
				}
				next.State = to
			}
			touched = true
		}
		if touched { // agent.changed describes these ledger changes
			writes = append(writes, entryWrite(next, nil))
		}
	}
	d.cp.Agent = cur
	var meta json.RawMessage
	if recordedDigest != cur.Digest {
		d.cp.AgentChanges = append(d.cp.AgentChanges, rec)
		events = append(events, d.event(EvAgentChanged, "", &AgentChangedData{rec}))
	}
	if metaChanged {
		meta = newMeta
		events = append(events, d.event(EvRunMetaChanged, "", &MetaChangedData{From: d.run.Meta, To: newMeta}))
	}
	return d.writeRun(ctx, &store.RunWriteParams{Ledger: writes, Events: events}, d.run.Status, meta)
}

func voidBy(a *AcceptAgentChange) string {
	if a != nil {
		return a.By
	}
	return "runtime"
}

// lastAgentDigest is the digest of the agent version that drove the run
// last, as its checkpoint records it; "" when it records none. After a new
// version took a run over, the run row still names the version it started
// with.
func lastAgentDigest(run *store.Run) string {
	var cp struct {
		Agent *struct {
			Digest string `json:"digest"`
		} `json:"agent"`
	}
	if json.Unmarshal(run.Checkpoint, &cp) != nil || cp.Agent == nil {
		return ""
	}
	return cp.Agent.Digest
}
