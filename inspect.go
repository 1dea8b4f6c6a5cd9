package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// HolderInfo is a claim holder's identity as [ParseHolder] reads it.
type HolderInfo struct {
	// Holder is the full holder string.
	Holder string `json:"holder"`
	// Host, PID and Started identify the worker process; they are zero
	// for a holder name that does not follow the default format.
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started,omitzero"`
	// Drive names one drive of a run within that process.
	Drive string `json:"drive,omitempty"`
}

// ParseHolder reads the identity in a claim holder made by a runtime's
// default [Config.Holder]. Other names come back with only Holder set.
func ParseHolder(holder string) HolderInfo {
	info := HolderInfo{Holder: holder}
	base, drive, _ := strings.Cut(holder, "/")
	parts := strings.SplitN(base, ":", 3)
	if len(parts) != 3 {
		return info
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return info
	}
	info.Host, info.PID, info.Drive = parts[0], pid, drive
	if stamp, _, ok := strings.Cut(parts[2], "."); ok {
		if t, err := time.Parse(holderTimeLayout, stamp); err == nil {
			info.Started = t
		}
	}
	return info
}

// String is "host pid N started T" or the raw holder.
func (h HolderInfo) String() string {
	if h.Host == "" {
		return h.Holder
	}
	s := fmt.Sprintf("%s pid %d", h.Host, h.PID)
	if !h.Started.IsZero() {
		s += " started " + h.Started.Format(time.RFC3339)
	}
	return s
}

// RunClaim is who holds a run's claim: [RunInfo.Holder].
type RunClaim struct {
	HolderInfo
	// Epoch is the claim's fencing token.
	Epoch int64 `json:"epoch"`
	// ExpiresAt is when the lease ends without a heartbeat (store clock).
	ExpiresAt time.Time `json:"expires_at"`
	// Live is false when the claim expired or was released, or its holder
	// is a process on this host that is gone (or a zombie): nobody drives
	// the run now.
	Live bool `json:"live"`
	// Dead reports a holder on this host whose process is gone.
	Dead bool `json:"dead,omitempty"`
}

// runHolder reads the claim of a run: the worker driving it (or that drove
// it last) with its epoch. A run that was never claimed has none (nil, nil).
func (rt *Runtime) runHolder(ctx context.Context, runID string) (*RunClaim, error) {
	c, err := rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: store.RunClaimKey(runID)})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: claim of run %s: %w", runID, err)
	}
	return rt.runClaim(c), nil
}

// RunInfo is a run as an operator sees it: status, transcript, ledger and
// the interruptions still open, with their evidence.
//
// Its JSON encoding is the one JSON view of a run: snake_case names, zero
// values left out. The CLI's `runs show --json` and `runs list --json` and
// the console's run API print it, each adding only what is its own around
// it, so a field added here appears in all of them under one name.
type RunInfo struct {
	// ID is the run's id.
	ID string `json:"id"`
	// ParentID is the parent run's id for a child run; empty otherwise.
	ParentID string `json:"parent_id,omitempty"`
	// SessionID is the session the run continues; empty for none.
	SessionID string `json:"session_id,omitempty"`
	// SessionRevision is the session revision the run started from, and
	// SessionItems how many leading Transcript items came from the session
	// (its last items, within the run's session window, or all of it).
	// Get fills them.
	SessionRevision int64 `json:"session_revision,omitempty"`
	// SessionItems: see SessionRevision.
	SessionItems int `json:"session_items,omitempty"`
	// SessionOmitted is how many earlier items of the session, as of
	// SessionRevision, the run's session window left out: the model never
	// saw them (they stay in the session). 0 when the run took the whole
	// session. Get fills it.
	SessionOmitted int64 `json:"session_omitted,omitempty"`
	// SessionError says why the session's part of the transcript could
	// not be read back (a corrupt snapshot or journal, a session that no
	// longer reads as the run recorded it). Get then still returns the
	// run, with a Transcript of the run's own items only (SessionItems
	// 0); a drive of such a run fails with the same error.
	SessionError string `json:"session_error,omitempty"`
	// AgentID is the AgentSpec.ID the run was started with.
	AgentID string `json:"agent_id,omitempty"`
	// AgentDigest is the digest of the agent definition last driven.
	AgentDigest string `json:"agent_digest,omitempty"`
	// Status is derived from the stored status and the run's claim:
	// running only while a live holder holds an unexpired claim, stalled
	// when the stored status is running but no live process holds it (see
	// [StatusStalled]).
	Status Status `json:"status"`
	// StoredStatus is the status the last drive wrote.
	StoredStatus Status `json:"stored_status,omitempty"`
	// Holder is the run's claim: the worker driving it, or the one that
	// drove it last, with its epoch; nil when the run was never claimed.
	// Get always reads it; List reads it only for runs not finished.
	Holder *RunClaim `json:"holder,omitempty"`
	// Meta is the caller's JSON given in Input.Meta.
	Meta json.RawMessage `json:"meta,omitempty"`
	// Deadline is the run's deadline; zero means none.
	Deadline time.Time `json:"deadline,omitzero"`
	// CreatedAt is the store's time of the run's first write.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedAt is the store's time of the run's latest write.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Revision is the run's compare-and-swap revision.
	Revision int64 `json:"revision,omitempty"`
	// Turn counts committed model responses. Get fills it; List does not.
	Turn int `json:"turn,omitempty"`
	// Transcript is the conversation so far, committed results included,
	// tool-call arguments redacted. Get fills it; List does not.
	Transcript []item.Item `json:"transcript,omitempty"`
	// Output is the final answer of a completed run.
	Output []item.Item `json:"output,omitempty"`
	// Usage is the run's total token usage.
	Usage item.Usage `json:"usage,omitzero"`
	// Error says why a failed run failed.
	Error *RunError `json:"error,omitempty"`
	// Ledger holds one entry per tool call, in order: state, effect,
	// idempotency key, attempt, times, holder and epoch, decisions. Get
	// fills it; List does not.
	Ledger []*store.LedgerEntry `json:"ledger,omitempty"`
	// Interruptions are the open ones: those whose call is still in the
	// state that stopped the run.
	Interruptions []Interruption `json:"interruptions,omitempty"`
	// Unsettled lists, for a finished run (cancelled, or past its
	// deadline), the calls it left started or unknown. The run does not
	// continue, but [Runtime.Decide] can record what happened to each
	// (committed or failed), for the audit trail (Get only).
	Unsettled []Interruption `json:"unsettled,omitempty"`
	// AgentChanges are the agent versions that took the run over after it
	// started, with what changed and, for an accepted change, who accepted
	// it and why (Get only).
	AgentChanges []AgentChangeRecord `json:"agent_changes,omitempty"`
}

// Get reads a run with its ledger and open interruptions.
func (rt *Runtime) Get(ctx context.Context, runID string) (*RunInfo, error) {
	run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: run %s: %w", runID, err)
	}
	cp, err := decodeCheckpoint(run)
	if err != nil {
		return nil, err
	}
	var sessionErr error
	if cp.prefixMissing() {
		// The transcript starts with the session as of the revision the
		// run started from, which the run holds by reference.
		prefix, omitted, err := rt.sessionPrefix(ctx, run, cp)
		switch {
		case err == nil:
			cp.withPrefix(prefix)
			if cp.SessionOmitted == nil && cp.SessionWindow > 0 {
				cp.SessionOmitted = &omitted // a run stored before it was recorded
			}
		case errors.Is(err, store.ErrData), errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrNotFound):
			// The session's data, not the run's: the run's own record
			// (status, output, ledger) still reads.
			sessionErr = err
		default:
			return nil, err
		}
	}
	entries, err := rt.store.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.tenant, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("actoviq: ledger of %s: %w", runID, err)
	}
	status, holder, err := rt.liveness(ctx, run)
	if err == nil && holder == nil {
		holder, err = rt.runHolder(ctx, run.ID)
	}
	if err != nil {
		return nil, err
	}
	info := &RunInfo{ID: run.ID, ParentID: run.ParentID, SessionID: run.SessionID, AgentID: run.AgentID, AgentDigest: run.AgentDigest,
		Status: status, StoredStatus: statusOf(run.Status), Holder: holder, Meta: run.Meta, Deadline: run.Deadline, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt,
		Revision: run.Revision, Turn: cp.Turn, Transcript: cp.Items, Output: cp.Output, Usage: cp.Usage, Error: cp.Error, Ledger: entries,
		AgentChanges: cp.AgentChanges}
	if run.SessionID != "" {
		info.SessionRevision, info.SessionItems = cp.SessionBase, cp.held
		if cp.SessionOmitted != nil {
			info.SessionOmitted = *cp.SessionOmitted
		}
		if sessionErr != nil {
			info.SessionError = fmt.Sprintf("the transcript lacks the %d items the run took of session %s: %v", cp.SessionPrefix, run.SessionID, sessionErr)
		}
	}
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
				// A child's call: open while the child's own
				// ledger says so. A decision recorded on the child (and
				// the child's drive) may have come after this run stopped.
				if ledger, err = rt.childLedger(ctx, childLedgers, in.RunID); err != nil {
					return nil, err
				}
			}
			if interruptionOpen(in, ledger) {
				if en := ledger[in.CallID]; in.Kind == InterruptApproval && en != nil {
					childRun := run
					if in.RunID != "" {
						childRun = &store.Run{ID: in.RunID, AgentID: run.AgentID}
					}
					in.Approval = rt.approvalStatus(ctx, childRun, en)
				}
				info.Interruptions = append(info.Interruptions, in)
			}
		}
	}
	if run.Status.Terminal() {
		info.Unsettled = rt.unsettled(run, cp, entries)
	}
	// The pending turn's committed results are part of the transcript.
	for _, id := range cp.Pending {
		if en, ok := byID[id]; ok && en.State == store.LedgerCommitted {
			info.Transcript = append(info.Transcript, resultItem(en))
		}
	}
	return info, nil
}

// ListParams filters [Runtime.List] and [Runtime.ListPage].
type ListParams struct {
	// Status keeps only runs in this derived status (queued, running,
	// stalled, interrupted, completed, failed, cancelled); empty means any.
	// The filter, derived statuses included, is applied by the store's
	// query: a page costs what its runs cost, not what the store holds.
	Status Status
	// ParentID keeps only the children of this run; empty means any.
	ParentID string
	// Limit bounds how many runs are returned (the page size); 0 means no
	// limit.
	Limit int
	// After continues a list: the Next of the previous [RunPage]. Empty
	// starts with the newest run.
	After string
}

// List lists the tenant's runs, newest first, with derived statuses (see
// [RunInfo.Status]): one page of at most Limit runs (see [Runtime.ListPage]
// for the cursor of the next one). When a stored run cannot be decoded,
// the others are still returned, with an error matching store.ErrData
// that names the bad one.
func (rt *Runtime) List(ctx context.Context, p *ListParams) ([]*RunInfo, error) {
	page, err := rt.ListPage(ctx, p)
	if page == nil {
		return nil, err
	}
	return page.Runs, err
}
