package cli

import (
	actoviq "github.com/actoviq/actoviq-go"
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

// runRowJSON is one run of runs list --json: the run's one JSON view
// (actoviq.RunInfo's encoding), with stored_status only when the derived
// status differs (stalled, or running while a resume is under way).
type runRowJSON struct {
	*actoviq.RunInfo
	StoredStatus string `json:"stored_status,omitempty"`
}

// runJSON is runs show --json: the run's one JSON view, with the schema
// number, stored_status only when it differs, each ledger entry's outcome,
// and the real attempts of the run's calls.
type runJSON struct {
	Schema int `json:"schema"`
	*actoviq.RunInfo
	StoredStatus string       `json:"stored_status,omitempty"`
	Ledger       []ledgerJSON `json:"ledger,omitempty"`
	// Attempts are the real attempts of the run's calls (runs show).
	Attempts []actoviq.CallAttempt `json:"attempts,omitempty"`
}

// ledgerJSON is a ledger entry's JSON view plus the outcome runs show
// prints for it.
type ledgerJSON struct {
	*store.LedgerEntry
	Outcome string `json:"outcome,omitempty"`
}

func runRows(runs []*actoviq.RunInfo) runListJSON {
	out := runListJSON{Schema: jsonSchema, Runs: []runRowJSON{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, runRowJSON{RunInfo: r, StoredStatus: storedIfDiffers(r)})
	}
	return out
}

func runView(info *actoviq.RunInfo) runJSON {
	v := runJSON{Schema: jsonSchema, RunInfo: info, StoredStatus: storedIfDiffers(info)}
	for _, en := range info.Ledger {
		v.Ledger = append(v.Ledger, ledgerJSON{LedgerEntry: en, Outcome: outcome(en)})
	}
	return v
}

func storedIfDiffers(r *actoviq.RunInfo) string {
	if r.StoredStatus != r.Status {
		return string(r.StoredStatus)
	}
	return ""
}
