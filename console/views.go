package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// Run is GET /api/v1/runs/{id}: everything the run page shows. It is the
// run's one JSON view, [actoviq.RunInfo]'s encoding (as `actoviq runs show
// --json` prints it: snake_case names, zero values left out), with what
// the page adds around it. Secrets appear redacted, exactly as the runtime
// stored them. Two fields of the RunInfo are left out, as the console
// never sent them: the run's Meta (the caller's JSON for its own program,
// such as the command line's configuration) and each ledger entry's
// ArgsDigest (the digest of the unredacted arguments; an open
// interruption and a recorded approval still carry the digest they bind
// to). The RunInfo is embedded by value: a Go client that decodes a body
// without the run (an error's) into a Run reads zero values, never a nil
// pointer.
type Run struct {
	actoviq.RunInfo
	// Ledger holds every call of the run, in turn order: each entry's
	// JSON view with the probe answer of its open interruption. It takes
	// the place of RunInfo's ledger.
	Ledger []Call `json:"ledger,omitempty"`
	// LastDriver is the process that drove the run last (from its latest
	// run.started or run.resumed event), with that drive's epoch; nil when
	// no drive was recorded. Unlike RunInfo.Holder (the claim as found,
	// which may be a process that only recorded a decision: a decision
	// takes the claim for its write), recording a decision does not change
	// it.
	LastDriver *Driver `json:"last_driver,omitempty"`
	// Undecided counts the open interruptions that wait for a decision;
	// resuming before they are answered only stops the run again.
	Undecided int `json:"undecided"`
	// Audit is every recorded decision, oldest first.
	Audit []AuditEntry `json:"audit"`
	// Events is the stored event timeline, in sequence order.
	Events []actoviq.Event `json:"events"`
	// Tasks are the MCP tasks (Tasks extension) of the run's calls that
	// are not committed: the last task handle each such call recorded.
	Tasks []Task `json:"tasks,omitempty"`
	// Attempts are the real attempts of the run's calls: who started each
	// (holder and epoch), when, and how it ended or why it was interrupted.
	Attempts []actoviq.CallAttempt `json:"attempts"`
	// CancelTask says whether this console can send tasks/cancel itself.
	CancelTask bool `json:"cancel_task"`
	// Children are the run's child runs, each with its own children.
	Children []*ChildRun `json:"children,omitempty"`
	// Resume says whether this console can resume the run itself, and
	// otherwise the command that does.
	Resume ResumeInfo `json:"resume"`
}

// Call is one ledger entry: a tool call with its durable state, in the
// ledger entry's JSON view (its holder and epoch are the worker that last
// moved it), and the probe answer the console adds.
type Call struct {
	*store.LedgerEntry
	// Probe is the tool's probe answer from the open interruption, if any.
	Probe *actoviq.ProbeAnswer `json:"probe,omitempty"`
}

// AuditEntry is one recorded decision: who, when, why, and the evidence
// that was shown.
type AuditEntry struct {
	// CallID names the call in the run.
	CallID string `json:"call_id"`
	// Tool is the called tool's name.
	Tool string `json:"tool"`
	store.DecisionRecord
}

// Driver is a process that drove a run: its holder name, read as
// [actoviq.ParseHolder] reads it, and the epoch of that drive.
type Driver struct {
	actoviq.HolderInfo
	// Epoch is the claim epoch of the drive.
	Epoch int64 `json:"epoch"`
	// At is when the drive started.
	At time.Time `json:"at"`
	// Live is true while that drive holds the run's claim.
	Live bool `json:"live"`
	// Dead reports that its process is gone (a process on this host).
	Dead bool `json:"dead,omitempty"`
}

// lastDriver finds the latest drive in a run's events, and whether the
// claim found is still that drive's.
func lastDriver(evs []actoviq.Event, claim *actoviq.RunClaim) *Driver {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != actoviq.EvRunStarted && evs[i].Type != actoviq.EvRunResumed {
			continue
		}
		data, err := evs[i].Payload()
		if err != nil {
			continue
		}
		st, ok := data.(*actoviq.RunStartedData)
		if !ok || st.Holder == "" {
			continue
		}
		d := &Driver{HolderInfo: actoviq.ParseHolder(st.Holder), Epoch: st.Epoch, At: evs[i].Time}
		if claim != nil && claim.Holder == st.Holder && claim.Epoch == st.Epoch {
			d.Live, d.Dead = claim.Live, claim.Dead
		}
		return d
	}
	return nil
}

// undecided counts the open interruptions that need a decision (a provider
// interruption needs none: resuming is the answer).
func undecided(ins []actoviq.Interruption) int {
	n := 0
	for _, in := range ins {
		if in.CallID != "" {
			n++
		}
	}
	return n
}

// ChildRun is a node of a run's child tree: the child as
// [actoviq.Runtime.List] reads it (no ledger, no transcript), Meta left
// out.
type ChildRun struct {
	actoviq.RunInfo
	// Children are this child's own children.
	Children []*ChildRun `json:"children,omitempty"`
}

// ResumeInfo tells how the run can be continued: only what works for it.
type ResumeInfo struct {
	// Available: POST /api/v1/runs/{id}/resume continues the run (Via
	// "here" or "queue").
	Available bool `json:"available"`
	// Via says how: "here" (this console drives it), "queue" (handed to
	// the workers' queue: a worker serving the run's agent is running),
	// "command" (Command resumes it outside the console), "program" (the
	// program that started it resumes it: Runtime.Resume).
	Via string `json:"via"`
	// Description says what resuming does, or who resumes the run.
	Description string `json:"description,omitempty"`
	// Command resumes the run outside the console; empty when no command
	// does.
	Command string `json:"command,omitempty"`
}

// shown is the run as the console sends it: the RunInfo without its Meta
// (the caller's JSON for its own program, such as the command line's
// configuration; never shown by the console), and its interruptions
// without the digest of their unredacted arguments (see digest.go). The
// RunInfo given is not changed.
func shown(r *actoviq.RunInfo) actoviq.RunInfo {
	c := *r
	c.Meta = nil
	c.Interruptions = interruptionsShown(c.Interruptions)
	c.Unsettled = interruptionsShown(c.Unsettled)
	return c
}

func callsOf(info *actoviq.RunInfo) []Call {
	probes := map[string]*actoviq.ProbeAnswer{}
	for _, in := range info.Interruptions {
		if in.Probe != nil {
			probes[in.CallID] = in.Probe
		}
	}
	out := make([]Call, 0, len(info.Ledger))
	for _, en := range info.Ledger {
		e := *en
		// The digest of the unredacted arguments is not the console's to
		// show (digest.go), here or in the decisions recorded.
		e.ArgsDigest = ""
		e.Approval, e.Resolution = decisionShown(en.Approval), decisionShown(en.Resolution)
		out = append(out, Call{LedgerEntry: &e, Probe: probes[en.CallID]})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Turn != out[j].Turn {
			return out[i].Turn < out[j].Turn
		}
		return out[i].Index < out[j].Index
	})
	return out
}

func auditOf(info *actoviq.RunInfo) []AuditEntry {
	var out []AuditEntry
	for _, en := range info.Ledger {
		for _, d := range []*store.DecisionRecord{en.Approval, en.Resolution} {
			if d != nil {
				for _, e := range d.Earlier { // approvals that went void (expired) before this one
					out = append(out, AuditEntry{CallID: en.CallID, Tool: en.Tool, DecisionRecord: decisionValue(e)})
				}
				out = append(out, AuditEntry{CallID: en.CallID, Tool: en.Tool, DecisionRecord: decisionValue(*d)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	// A re-execute is recorded both as the resolution and as the approval
	// of the new attempt; show it once.
	dedup := out[:0]
	for i, a := range out {
		if i > 0 && a.CallID == out[i-1].CallID && a.Kind == out[i-1].Kind && a.At.Equal(out[i-1].At) && a.By == out[i-1].By {
			continue
		}
		dedup = append(dedup, a)
	}
	return dedup
}

// childTree builds the tree of runs under root from a flat list.
func childTree(root string, runs []*actoviq.RunInfo) []*ChildRun {
	byParent := map[string][]*actoviq.RunInfo{}
	for _, r := range runs {
		if r.ParentID != "" {
			byParent[r.ParentID] = append(byParent[r.ParentID], r)
		}
	}
	seen := map[string]bool{root: true}
	var build func(id string) []*ChildRun
	build = func(id string) []*ChildRun {
		var out []*ChildRun
		kids := byParent[id]
		sort.Slice(kids, func(i, j int) bool { return kids[i].CreatedAt.Before(kids[j].CreatedAt) })
		for _, k := range kids {
			if seen[k.ID] {
				continue
			}
			seen[k.ID] = true
			out = append(out, &ChildRun{RunInfo: shown(k), Children: build(k.ID)})
		}
		return out
	}
	return build(root)
}

// argsSummary is one line of a call's stored (redacted) arguments: the
// top-level fields of an object as "name: value", joined by " · ", in the
// order the model gave them; other JSON as it is. Cut at 160 characters.
func argsSummary(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) || bytes.Equal(args, []byte("{}")) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return oneLine(string(args))
	}
	var parts []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return oneLine(string(args))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return oneLine(string(args))
		}
		val := string(v)
		var str string
		if json.Unmarshal(v, &str) == nil {
			val = str
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				val = buf.String()
			}
		}
		parts = append(parts, fmt.Sprint(k)+": "+val)
	}
	return oneLine(strings.Join(parts, " · "))
}

// oneLine shortens a reason to one line for the inbox.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		return string(r[:157]) + "..."
	}
	return s
}

// Task is an MCP task a call recorded (a tool.handle of kind mcp.task).
type Task struct {
	// CallID is the call that holds it.
	CallID string `json:"call_id"`
	// Server and TaskID name the task.
	Server string `json:"server"`
	// TaskID is the server's task id.
	TaskID string `json:"task_id"`
	// Status is the last status the call saw.
	Status string `json:"status,omitempty"`
	// CancelRequested says tasks/cancel was sent, and why.
	CancelRequested string `json:"cancel_requested,omitempty"`
	// Evidence is the handle's line.
	Evidence string `json:"evidence,omitempty"`
	// Notes are the notes recorded on the call (a cancel by an operator).
	Notes []string `json:"notes,omitempty"`
}

// tasksOf returns the last MCP task handle of each call that is not
// committed, in call order.
func tasksOf(ledger []Call, evs []actoviq.Event) []Task {
	open := map[string]bool{}
	for _, c := range ledger {
		open[c.CallID] = c.State == "started" || c.State == "unknown"
	}
	byCall := map[string]*Task{}
	var order []string
	for _, ev := range evs {
		switch ev.Type {
		case actoviq.EvToolHandle:
			var h actoviq.ToolHandleData
			if json.Unmarshal(ev.Data, &h) != nil || h.Kind != "mcp.task" || !open[h.CallID] {
				continue
			}
			var d struct {
				Server          string `json:"server"`
				TaskID          string `json:"taskId"`
				Status          string `json:"status"`
				CancelRequested string `json:"cancelRequested"`
			}
			if json.Unmarshal(h.Data, &d) != nil || d.TaskID == "" {
				continue
			}
			t, ok := byCall[h.CallID]
			if !ok {
				t = &Task{CallID: h.CallID}
				byCall[h.CallID] = t
				order = append(order, h.CallID)
			}
			t.Server, t.TaskID, t.Status, t.CancelRequested, t.Evidence = d.Server, d.TaskID, d.Status, d.CancelRequested, h.Evidence
		case actoviq.EvToolNote:
			var n actoviq.ToolNoteData
			if json.Unmarshal(ev.Data, &n) == nil {
				if t, ok := byCall[n.CallID]; ok {
					t.Notes = append(t.Notes, n.Text+" ("+n.By+")")
				}
			}
		}
	}
	out := make([]Task, 0, len(order))
	for _, id := range order {
		out = append(out, *byCall[id])
	}
	return out
}
