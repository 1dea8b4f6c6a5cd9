package actoviq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// RunInfo is a run as an operator sees it: status, transcript, ledger and
// the interruptions still open, with their evidence.
type RunInfo struct {
	// ID is the run's id.
	ID string
	// ParentID is the parent run's id for a child run; empty otherwise.
	ParentID string
	// SessionID is the session the run continues; empty for none.
	SessionID string
	// AgentID is the AgentSpec.ID the run was started with.
	AgentID string
	// AgentDigest is the digest of the agent definition last driven.
	AgentDigest string
	// Status is derived from the stored status and the run's claim:
	// running only while a live holder holds an unexpired claim, stalled
	// when the stored status is running but no live process holds it (see
	// [StatusStalled]).
	Status Status
	// StoredStatus is the status the last drive wrote.
	StoredStatus Status
	// Holder is the run's claim as found; nil when it has none or the run
	// is finished.
	Holder *RunClaim
	// Meta is the caller's JSON given in Input.Meta.
	Meta json.RawMessage
	// Deadline is the run's deadline; zero means none.
	Deadline time.Time
	// CreatedAt and UpdatedAt are the store's times of the first and the
	// latest write.
	CreatedAt, UpdatedAt time.Time
	// Revision is the run's compare-and-swap revision.
	Revision int64
	// Turn counts committed model responses. Get fills it; List does not.
	Turn int
	// Transcript is the conversation so far, committed results included,
	// tool-call arguments redacted. Get fills it; List does not.
	Transcript []item.Item
	// Output is the final answer of a completed run.
	Output []item.Item
	// Usage is the run's total token usage.
	Usage item.Usage
	// Error says why a failed run failed.
	Error *RunError
	// Ledger holds one entry per tool call, in order: state, effect,
	// idempotency key, attempt, times, holder and epoch, decisions. Get
	// fills it; List does not.
	Ledger []*store.LedgerEntry
	// Interruptions are the open ones: those whose call is still in the
	// state that stopped the run.
	Interruptions []Interruption
	// Unsettled lists, for a finished run (cancelled, or past its
	// deadline), the calls it left started or unknown. The run does not
	// continue, but [Runtime.Decide] can record what happened to each
	// (committed or failed), for the audit trail (Get only).
	Unsettled []Interruption
	// AgentChanges are the agent versions that took the run over after it
	// started, with what changed and, for an accepted change, who accepted
	// it and why (Get only).
	AgentChanges []AgentChangeRecord
}

// Get reads a run with its ledger and open interruptions.
func (e *Runtime) Get(ctx context.Context, runID string) (*RunInfo, error) {
	run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: run %s: %w", runID, err)
	}
	cp, err := decodeCheckpoint(run)
	if err != nil {
		return nil, err
	}
	entries, err := e.store.LedgerList(ctx, &store.LedgerListParams{Tenant: e.tenant, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: ledger of %s: %w", runID, err)
	}
	status, holder, err := e.liveness(ctx, run)
	if err != nil {
		return nil, err
	}
	info := &RunInfo{ID: run.ID, ParentID: run.ParentID, SessionID: run.SessionID, AgentID: run.AgentID, AgentDigest: run.AgentDigest,
		Status: status, StoredStatus: statusOf(run.Status), Holder: holder, Meta: run.Meta, Deadline: run.Deadline, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt,
		Revision: run.Revision, Turn: cp.Turn, Transcript: cp.Items, Output: cp.Output, Usage: cp.Usage, Error: cp.Error, Ledger: entries,
		AgentChanges: cp.AgentChanges}
	if cp.Agent != nil {
		info.AgentDigest = cp.Agent.Digest // the version that drove it last
	}
	byID := map[string]*store.LedgerEntry{}
	for _, en := range entries {
		byID[en.CallID] = en
	}
	if run.Status == store.RunInterrupted {
		childLedgers := map[string]map[string]*store.LedgerEntry{}
		for _, in := range cp.Interruptions {
			if in.Kind == InterruptProvider { // open until the next drive
				info.Interruptions = append(info.Interruptions, in)
				continue
			}
			ledger := byID
			if in.RunID != "" {
				// A child's call (child.go): open while the child's own
				// ledger says so. A decision recorded on the child (and
				// the child's drive) may have come after this run stopped.
				if ledger, err = e.childLedger(ctx, childLedgers, in.RunID); err != nil {
					return nil, err
				}
			}
			en, ok := ledger[in.CallID]
			if !ok {
				continue
			}
			open := en.State == store.LedgerAwaitingApproval
			if in.Kind != InterruptApproval {
				open = en.State == store.LedgerStarted || en.State == store.LedgerUnknown
			}
			if open {
				info.Interruptions = append(info.Interruptions, in)
			}
		}
	}
	if run.Status.Terminal() {
		info.Unsettled = e.unsettled(run, cp, entries)
	}
	// The pending turn's committed results are part of the transcript.
	for _, id := range cp.Pending {
		if en, ok := byID[id]; ok && en.State == store.LedgerCommitted {
			info.Transcript = append(info.Transcript, resultItem(en))
		}
	}
	return info, nil
}

// ListParams filters [Runtime.List].
type ListParams struct {
	// Status keeps only runs in this derived status (running, stalled,
	// interrupted, completed, failed, cancelled); empty means any.
	Status Status
	// Limit bounds how many runs are returned; 0 means no limit.
	Limit int
}

// List lists the tenant's runs, newest first, with derived statuses (see
// [RunInfo.Status]). When a stored run cannot be decoded, the others are
// still returned, with an error matching store.ErrData that names the bad
// one.
func (e *Runtime) List(ctx context.Context, p *ListParams) ([]*RunInfo, error) {
	if p == nil {
		p = &ListParams{}
	}
	return e.list(ctx, p)
}

// childLedger reads (once per Get) the ledger of a child run whose call
// interrupted its parent.
func (e *Runtime) childLedger(ctx context.Context, cache map[string]map[string]*store.LedgerEntry, runID string) (map[string]*store.LedgerEntry, error) {
	if l, ok := cache[runID]; ok {
		return l, nil
	}
	entries, err := e.store.LedgerList(ctx, &store.LedgerListParams{Tenant: e.tenant, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: ledger of child run %s: %w", runID, err)
	}
	l := map[string]*store.LedgerEntry{}
	for _, en := range entries {
		l[en.CallID] = en
	}
	cache[runID] = l
	return l, nil
}
