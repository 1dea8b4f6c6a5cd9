package actoviq

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// RunInfo's JSON is the one view of a run the CLI and the console print:
// snake_case names, zero values left out, ledger entries without the
// tenant and run id the run already names.
func TestRunInfoJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	info := &RunInfo{ID: "r1", AgentID: "a", Status: StatusStalled, StoredStatus: StatusRunning, CreatedAt: at,
		Ledger: []*store.LedgerEntry{{Tenant: "t", RunID: "r1", CallID: "c1", Tool: "pay", Effect: "side-effect",
			State: store.LedgerStarted, IdempotencyKey: "k", Attempt: 1, Holder: "w1", Epoch: 3, StartedAt: at}}}
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"id": "r1", "agent_id": "a", "status": "stalled", "stored_status": "running",
		"created_at": "2026-12-02T04:00:00Z"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v in %s", k, got[k], want, raw)
		}
	}
	for _, k := range []string{"parent_id", "session_id", "deadline", "updated_at", "turn", "usage", "transcript", "holder", "meta"} {
		if _, ok := got[k]; ok {
			t.Errorf("zero %s is printed: %s", k, raw)
		}
	}
	ledger, _ := got["ledger"].([]any)
	if len(ledger) != 1 {
		t.Fatalf("ledger = %v in %s", got["ledger"], raw)
	}
	en := ledger[0].(map[string]any)
	for k, want := range map[string]any{"call_id": "c1", "tool": "pay", "effect": "side-effect", "state": string(store.LedgerStarted),
		"idempotency_key": "k", "attempt": 1.0, "holder": "w1", "epoch": 3.0, "started_at": "2026-12-02T04:00:00Z"} {
		if en[k] != want {
			t.Errorf("ledger[0].%s = %v, want %v in %s", k, en[k], want, raw)
		}
	}
	for _, bad := range []string{`"Tenant"`, `"RunID"`, `"run_id"`, `"tenant"`, `"committed_at"`, `"CallID"`} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("RunInfo JSON has %s: %s", bad, raw)
		}
	}
}
