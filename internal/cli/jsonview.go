package cli

import (
	"encoding/json"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// The JSON that runs list --json and runs show --json print. One style for
// both: snake_case names, zero values left out, and a "schema" number that
// changes only when a field changes meaning or goes away (fields may be
// added within a schema), like the event envelope's.
const jsonSchema = 1

// runListJSON is runs list --json.
type runListJSON struct {
	Schema int          `json:"schema"`
	Runs   []runRowJSON `json:"runs"`
	// Next is set when the list was cut at --limit: pass it as --after
	// for the next page.
	Next string `json:"next,omitempty"`
}

type runRowJSON struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	AgentID   string    `json:"agent_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	ParentID  string    `json:"parent_id,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// StoredStatus is what the last drive wrote, when the derived status
	// differs (stalled, or running while a resume is under way).
	StoredStatus string `json:"stored_status,omitempty"`
	// Holder is the run's claim as found.
	Holder *actoviq.RunClaim `json:"holder,omitempty"`
}

// runJSON is runs show --json.
type runJSON struct {
	Schema        int                    `json:"schema"`
	ID            string                 `json:"id"`
	Status        string                 `json:"status"`
	AgentID       string                 `json:"agent_id,omitempty"`
	AgentDigest   string                 `json:"agent_digest,omitempty"`
	ParentID      string                 `json:"parent_id,omitempty"`
	SessionID     string                 `json:"session_id,omitempty"`
	Turn          int                    `json:"turn,omitempty"`
	Revision      int64                  `json:"revision,omitempty"`
	CreatedAt     time.Time              `json:"created_at,omitzero"`
	UpdatedAt     time.Time              `json:"updated_at,omitzero"`
	Deadline      time.Time              `json:"deadline,omitzero"`
	Meta          json.RawMessage        `json:"meta,omitempty"`
	Usage         item.Usage             `json:"usage,omitzero"`
	Error         *actoviq.RunError      `json:"error,omitempty"`
	Transcript    []item.Item            `json:"transcript,omitempty"`
	Output        []item.Item            `json:"output,omitempty"`
	Ledger        []ledgerJSON           `json:"ledger,omitempty"`
	Interruptions []actoviq.Interruption `json:"interruptions,omitempty"`
	StoredStatus  string                 `json:"stored_status,omitempty"`
	Holder        *actoviq.RunClaim      `json:"holder,omitempty"`
	// AgentChanges are the agent versions that took the run over.
	AgentChanges []actoviq.AgentChangeRecord `json:"agent_changes,omitempty"`
	// Attempts are the real attempts of the run's calls (runs show).
	Attempts []actoviq.CallAttempt `json:"attempts,omitempty"`
}

type ledgerJSON struct {
	CallID         string                `json:"call_id"`
	Tool           string                `json:"tool"`
	Effect         string                `json:"effect,omitempty"`
	State          string                `json:"state"`
	Outcome        string                `json:"outcome,omitempty"`
	Turn           int                   `json:"turn,omitempty"`
	Index          int                   `json:"index,omitempty"`
	IdempotencyKey string                `json:"idempotency_key,omitempty"`
	Attempt        int                   `json:"attempt,omitempty"`
	ArgsDigest     string                `json:"args_digest,omitempty"`
	Args           json.RawMessage       `json:"args,omitempty"`
	Result         json.RawMessage       `json:"result,omitempty"`
	Error          json.RawMessage       `json:"error,omitempty"`
	Approval       *store.DecisionRecord `json:"approval,omitempty"`
	Resolution     *store.DecisionRecord `json:"resolution,omitempty"`
	Holder         string                `json:"holder,omitempty"`
	Epoch          int64                 `json:"epoch,omitempty"`
	Revision       int64                 `json:"revision,omitempty"`
	CreatedAt      time.Time             `json:"created_at,omitzero"`
	UpdatedAt      time.Time             `json:"updated_at,omitzero"`
	StartedAt      time.Time             `json:"started_at,omitzero"`
	CommittedAt    time.Time             `json:"committed_at,omitzero"`
}

func runRows(runs []*actoviq.RunInfo) runListJSON {
	out := runListJSON{Schema: jsonSchema, Runs: []runRowJSON{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, runRowJSON{ID: r.ID, Status: string(r.Status), AgentID: r.AgentID, SessionID: r.SessionID,
			ParentID: r.ParentID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StoredStatus: storedIfDiffers(r), Holder: r.Holder})
	}
	return out
}

func runView(info *actoviq.RunInfo) runJSON {
	v := runJSON{Schema: jsonSchema, ID: info.ID, Status: string(info.Status), AgentID: info.AgentID, AgentDigest: info.AgentDigest,
		ParentID: info.ParentID, SessionID: info.SessionID, Turn: info.Turn, Revision: info.Revision,
		CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt, Deadline: info.Deadline, Meta: info.Meta,
		Usage: info.Usage, Error: info.Error, Transcript: info.Transcript, Output: info.Output, Interruptions: info.Interruptions,
		StoredStatus: storedIfDiffers(info), Holder: info.Holder, AgentChanges: info.AgentChanges}
	for _, en := range info.Ledger {
		v.Ledger = append(v.Ledger, ledgerJSON{CallID: en.CallID, Tool: en.Tool, Effect: en.Effect, State: string(en.State),
			Outcome: outcome(en), Turn: en.Turn, Index: en.Index, IdempotencyKey: en.IdempotencyKey, Attempt: en.Attempt,
			ArgsDigest: en.ArgsDigest, Args: en.Args, Result: en.Result, Error: en.Error, Approval: en.Approval,
			Resolution: en.Resolution, Holder: en.Holder, Epoch: en.Epoch, Revision: en.Revision, CreatedAt: en.CreatedAt,
			UpdatedAt: en.UpdatedAt, StartedAt: en.StartedAt, CommittedAt: en.CommittedAt})
	}
	return v
}

func storedIfDiffers(r *actoviq.RunInfo) string {
	if r.StoredStatus != r.Status {
		return string(r.StoredStatus)
	}
	return ""
}
