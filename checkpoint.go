package actoviq

import (
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// cpEncoder encodes a drive's checkpoint as the store keeps it: the head
// (the checkpoint without its transcript, small, replaced by each run
// write) and the transcript items the run's log does not hold yet,
// appended by the write (store.RunUpdate.Append). So a write carries its
// own change: each item is encoded and stored once, never again on a
// later turn.
type cpEncoder struct {
	stored int // cp.Items[:stored] are in the run's log
}

// encode returns the head and the items to append.
func (c *cpEncoder) encode(cp *checkpoint) (head json.RawMessage, app []json.RawMessage, err error) {
	if len(cp.Items) < c.stored {
		return nil, nil, fmt.Errorf("the transcript has %d items, %d of which are already stored", len(cp.Items), c.stored)
	}
	if n := len(cp.Items) - c.stored; n > 0 {
		app = make([]json.RawMessage, n)
		for i, it := range cp.Items[c.stored:] {
			// MarshalJSON itself, not json.Marshal, which would check and
			// compact its (compact) output a second time.
			if app[i], err = it.MarshalJSON(); err != nil {
				return nil, nil, err
			}
		}
	}
	shallow := *cp
	shallow.Items = nil
	head, err = json.Marshal(&shallow)
	return head, app, err
}

// wrote records that the write of the last encode committed.
func (c *cpEncoder) wrote(cp *checkpoint) { c.stored = len(cp.Items) }

// storedForm returns a new checkpoint as a run is created with it: its
// head and its transcript as the log's first items (after a session
// prefix held by reference, which is never stored with the run).
func storedForm(cp *checkpoint) (json.RawMessage, []json.RawMessage, error) {
	enc := cpEncoder{stored: cp.logFrom}
	return enc.encode(cp)
}

// checkpoint is the engine's durable run state (store.Run.Checkpoint).
type checkpoint struct {
	V int `json:"v"`
	// Child is set for a child run.
	Child *childInfo `json:"child,omitempty"`
	// Items is the transcript: input, model responses and the tool results
	// of every turn before the pending one. Tool-call arguments are stored
	// redacted.
	//
	// The store keeps them in the run's log, not in the checkpoint (see
	// cpEncoder); a checkpoint written before that holds them here.
	Items []item.Item `json:"items,omitempty"`
	// Turn counts committed model responses.
	Turn int `json:"turn"`
	// Pending lists the call ids of the last response, in order, until
	// their results are folded into Items.
	Pending []string `json:"pending,omitempty"`
	// Redacted marks pending calls whose persisted arguments lost secrets.
	Redacted map[string]bool `json:"redacted,omitempty"`
	// Sealed holds, with a Config.Codec, the sealed unredacted arguments
	// of the Redacted calls, for a process other than the one that
	// received them (see [Codec]).
	Sealed map[string]string `json:"sealed,omitempty"`
	Usage  item.Usage        `json:"usage"`
	// Output is the final answer of a completed run.
	Output []item.Item `json:"output,omitempty"`
	Error  *RunError   `json:"error,omitempty"`
	// Interruptions as of the last stop, with their evidence.
	Interruptions []Interruption `json:"interruptions,omitempty"`
	// Rejected holds a model response the runtime refused (evidence).
	Rejected []item.Item `json:"rejected,omitempty"`
	TraceID  string      `json:"trace_id"`
	// PolicyVersion is the approval policy version of the last drive;
	// approvals recorded without an agent at hand bind to it.
	PolicyVersion string `json:"policy_version"`
	// SessionBase is the session revision the run continues from;
	// SessionPrefix the number of leading Items that came from it.
	SessionBase   int64 `json:"session_base,omitempty"`
	SessionPrefix int   `json:"session_prefix,omitempty"`
	// SessionRef is set for a run that holds its session's part of the
	// transcript by reference: the run's log holds only its own items, and
	// the prefix is read back from the session as of SessionBase (see
	// sessionPrefix). A run stored before copied the prefix into its log;
	// it reads as it was stored.
	SessionRef bool `json:"session_ref,omitempty"`
	// SessionWindow, above 0, says the prefix is the session's last
	// SessionWindow journal items as of SessionBase (AgentSpec.SessionWindow,
	// cut at a turn's start); 0 means the whole session as of SessionBase.
	SessionWindow int `json:"session_window,omitempty"`
	// SessionOmitted is how many items of the session as of SessionBase
	// came before the window the run took (RunInfo.SessionOmitted); nil
	// for a run that took the whole session, or that was stored before
	// it was recorded (Get then works it out from what it reads back).
	SessionOmitted *int64 `json:"session_omitted,omitempty"`
	// Malformed counts tool calls whose arguments were not a JSON object
	// (Limits.MaxMalformedCalls).
	Malformed int `json:"malformed,omitempty"`
	// SessionAppended is set once the run's items are in the session.
	SessionAppended bool `json:"session_appended,omitempty"`
	// Agent records the agent version that drove the run last;
	// AgentChanges the versions that took it over since.
	Agent        *agentRecord        `json:"agent,omitempty"`
	AgentChanges []AgentChangeRecord `json:"agent_changes,omitempty"`
	// ProviderFailures counts provider interruptions in a row.
	ProviderFailures int `json:"provider_failures,omitempty"`

	// logged is the index in Items up to which the run's log holds them
	// (the rest were stored in the checkpoint by an older version, or not
	// yet).
	logged int
	// logFrom is the index in Items of the log's first item: the length
	// of the session prefix held in memory for a SessionRef run, 0
	// otherwise. A log index i (ModelResponseData.ItemsAt) is Items[logFrom+i].
	logFrom int
	// held is the number of leading Items that came from the session:
	// SessionPrefix once a SessionRef run's prefix is read back (0 before),
	// SessionPrefix for a run stored before.
	held int
	// prefixRead is set once a SessionRef run's prefix is in Items.
	prefixRead bool
}

// prefixMissing reports whether the run holds a session prefix by
// reference that Items does not have yet.
func (cp *checkpoint) prefixMissing() bool {
	return cp.SessionRef && cp.SessionPrefix > 0 && !cp.prefixRead
}

// withPrefix puts the session prefix, read back from the session, in front
// of Items, and moves the log offsets past it.
func (cp *checkpoint) withPrefix(prefix []item.Item) {
	n := len(prefix)
	if len(cp.Items) == 0 {
		cp.Items = prefix // grows in place, into its spare capacity
	} else {
		cp.Items = append(prefix[:n:n], cp.Items...)
	}
	cp.logged += n
	cp.logFrom += n
	cp.held += n
	cp.prefixRead = true
}

func decodeCheckpoint(r *store.Run) (*checkpoint, error) {
	var cp checkpoint
	if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: err}
	}
	if cp.V != 1 {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: fmt.Errorf("unknown checkpoint version %d", cp.V)}
	}
	// The transcript is the run's log. A checkpoint written before the log
	// existed holds it itself, with an empty log; the next write moves it
	// to the log (logged stays 0, so every item is appended).
	if len(r.Log) > 0 {
		if len(cp.Items) > 0 {
			return nil, &store.DataError{Kind: "checkpoint", ID: r.ID,
				Err: fmt.Errorf("the checkpoint holds %d transcript items and the log %d", len(cp.Items), len(r.Log))}
		}
		cp.Items = make([]item.Item, len(r.Log))
		for i, raw := range r.Log {
			if err := json.Unmarshal(raw, &cp.Items[i]); err != nil {
				return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: fmt.Errorf("log item %d: %w", i, err)}
			}
		}
		cp.logged = len(r.Log)
	}
	if !cp.SessionRef {
		cp.held = cp.SessionPrefix // in the log (or this checkpoint), as stored before
	}
	return &cp, nil
}

func (cp *checkpoint) result(runID string, status store.RunStatus) *RunResult {
	res := &RunResult{RunID: runID, Status: statusOf(status), Output: cp.Output, Usage: cp.Usage, Error: cp.Error}
	if status == store.RunInterrupted {
		res.Interruptions = cp.Interruptions
	}
	return res
}
