package actoviq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// cpEncoder encodes a drive's checkpoint. The transcript (cp.Items) only
// grows during a drive, so the encoded form of every item is kept and a
// write encodes only the items added since the previous one, instead of
// the whole transcript again on every model turn. The bytes are those of
// json.Marshal(cp) (TestCheckpointEncoder).
type cpEncoder struct {
	items []json.RawMessage // encoded cp.Items[:len(items)]
}

func (c *cpEncoder) encode(cp *checkpoint) ([]byte, error) {
	if cp.Items == nil || len(cp.Items) < len(c.items) {
		// Not the transcript we know (a replaced checkpoint): start over.
		c.items = nil
	}
	if cp.Items == nil {
		return json.Marshal(cp)
	}
	size := 0
	for i := len(c.items); i < len(cp.Items); i++ {
		b, err := json.Marshal(cp.Items[i])
		if err != nil {
			return nil, err
		}
		c.items = append(c.items, b)
	}
	for _, b := range c.items {
		size += len(b) + 1
	}
	shallow := *cp
	shallow.Items = nil
	rest, err := json.Marshal(&shallow)
	if err != nil {
		return nil, err
	}
	// rest starts with {"v":N,"items":null: put the array in its place.
	head := `{"v":` + strconv.Itoa(cp.V) + `,"items":`
	if !bytes.HasPrefix(rest, []byte(head+"null")) {
		return json.Marshal(cp) // the field order changed: no shortcut
	}
	out := make([]byte, 0, len(rest)+size+2)
	out = append(out, head...)
	out = append(out, '[')
	for i, b := range c.items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	out = append(out, ']')
	out = append(out, rest[len(head)+len("null"):]...)
	return out, nil
}

// checkpoint is the engine's durable run state (store.Run.Checkpoint).
type checkpoint struct {
	V int `json:"v"`
	// Child is set for a child run.
	Child *childInfo `json:"child,omitempty"`
	// Items is the transcript: input, model responses and the tool results
	// of every turn before the pending one. Tool-call arguments are stored
	// redacted.
	Items []item.Item `json:"items"`
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
}

func decodeCheckpoint(r *store.Run) (*checkpoint, error) {
	var cp checkpoint
	if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: err}
	}
	if cp.V != 1 {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: fmt.Errorf("unknown checkpoint version %d", cp.V)}
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
