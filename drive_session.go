package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
)

func (d *drive) claimSession(ctx context.Context, sessionID string) error {
	f := &store.Fence{Key: "session:" + sessionID, Holder: d.rt.driveHolder()}
	p := &store.ClaimAcquireParams{Tenant: d.rt.tenant, Key: f.Key, Holder: f.Holder, TTL: d.rt.ttl}
	c, err := d.rt.store.ClaimAcquire(ctx, p)
	var held *store.ClaimHeldError
	if errors.As(err, &held) && d.rt.releaseDead(ctx, p.Key, held) {
		// A dead holder's session claim is taken over at once, like its
		// run claim.
		c, err = d.rt.store.ClaimAcquire(ctx, p)
	}
	if errors.Is(err, store.ErrClaimHeld) {
		return fmt.Errorf("%w: %s: %v", ErrSessionBusy, sessionID, err)
	}
	if err != nil {
		return fmt.Errorf("actoviq: claim session %s: %w", sessionID, err)
	}
	f.Epoch = c.Epoch
	d.sessionFence = f
	return nil
}

func (d *drive) releaseSession() {
	if d.sessionFence == nil {
		return
	}
	ctx, cancel := d.detached(context.Background())
	defer cancel()
	_ = d.rt.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: d.rt.tenant, Fence: *d.sessionFence})
}

// sessionItems decodes a loaded session's items (snapshot, then entries).
// It drops the entries' JSON as it goes, so that the session is not held
// twice over (raw and decoded) longer than one item. Each entry is one
// item, decoded in one pass by item.Item's strict decoder (no separate
// validation pass first, as json.Unmarshal would make).
func sessionItems(st *store.SessionState) ([]item.Item, error) {
	var out []item.Item
	if st.Snapshot != nil {
		if err := json.Unmarshal(st.Snapshot, &out); err != nil {
			return nil, &store.DataError{Kind: "session snapshot", ID: st.SessionID, Err: err}
		}
	}
	out = slices.Grow(out, len(st.Entries)+32) // room for a run's first items
	for i := range st.Entries {
		en := &st.Entries[i]
		out = append(out, item.Item{})
		if err := out[len(out)-1].UnmarshalJSON(en.Item); err != nil {
			return nil, &store.DataError{Kind: "session", ID: fmt.Sprintf("%s#%d", st.SessionID, en.Seq), Err: err}
		}
		en.Item = nil
	}
	st.Entries = nil
	return out, nil
}

// windowItems decodes the items of a session window read with
// store.SessionLoadParams.Last = n and WithSnapshot (n > 0), or of the
// whole session (n 0): the last n items of what a whole read shows. whole
// reports that they are the session's first items too (nothing before
// them as of the revision), and omitted how many items of the session
// come before them: journal items, or the snapshot's items when the read
// holds one.
func windowItems(st *store.SessionState, n int) (items []item.Item, whole bool, omitted int64, err error) {
	snap := st.Snapshot != nil
	whole = snap || st.Revision == int64(len(st.Entries))
	before := st.Revision - int64(len(st.Entries)) // journal items before the entries read
	if items, err = sessionItems(st); err != nil {
		return nil, false, 0, err
	}
	if snap {
		before = 0 // the snapshot's items are in items
	}
	if n > 0 && len(items) > n {
		before += int64(len(items) - n)
		items, whole = items[len(items)-n:], false
	}
	return items, whole, before, nil
}

// sessionWindow is the window a new run of agent a takes of its session:
// a number of items, or WholeSession.
func (rt *Runtime) sessionWindow(a *AgentSpec) int {
	if a.SessionWindow != 0 {
		return a.SessionWindow
	}
	return rt.window
}

// A run holds its session by reference (checkpoint.SessionRef): it
// records the session revision it started from (SessionBase), how many
// items it took from it (SessionPrefix) and its window (SessionWindow),
// and its log holds only its own items. So creating the run, and every
// write of it, costs the run, not the session. Whatever needs the whole
// transcript (the model, Runtime.Get) reads the prefix back from the
// session as of SessionBase: the journal only grows, so that is the prefix
// the run started with.
//
// The session window bounds what a run takes (AgentSpec.SessionWindow,
// Config.SessionWindow, DefaultSessionWindow unless WholeSession is asked
// for): the session's last N items as a whole read shows them, read
// through an index (store.SessionLoadParams.Last with WithSnapshot). When
// the session is longer than the window, it is cut at the first user
// message among them so that the model sees whole turns and no tool result
// without its call.

// startSession reads the prefix a new run of the session takes: with
// window > 0 its last items (from a turn's start when the session is
// longer), with WholeSession all of it. It returns the items, the
// session's revision, the window to record (the number of items kept, 0
// for the whole session) and how many earlier items the window left out.
func (rt *Runtime) startSession(ctx context.Context, sessionID string, window int) ([]item.Item, int64, int, int64, error) {
	p := &store.SessionLoadParams{Tenant: rt.tenant, SessionID: sessionID}
	if window > 0 {
		p.Last, p.WithSnapshot = window, true
	}
	st, err := rt.store.SessionLoad(ctx, p)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("actoviq: load session %s: %w", sessionID, err)
	}
	rev := st.Revision
	items, whole, omitted, err := windowItems(st, p.Last)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if !whole {
		start := windowStart(items)
		items, omitted = items[start:], omitted+int64(start)
	}
	uniqueCallIDs(items) // on the items kept, as sessionPrefix reads them back
	if window <= 0 {
		return items, rev, 0, 0, nil
	}
	return items, rev, len(items), omitted, nil
}

// windowStart returns where a window of a session's items may start: at
// its first user message (a turn's start), and in any case after the last
// tool result whose call the window cut off, so that the model never sees
// a result without its call.
func windowStart(items []item.Item) int {
	start := len(items)
	for i, it := range items {
		if it.Role == item.RoleUser && it.Type != item.TypeToolResult {
			start = i
			break
		}
	}
	if start == len(items) {
		start = 0 // no user message: keep what pairs up
	}
	open := map[string]int{} // calls without their result yet, by id
	for i := start; i < len(items); i++ {
		switch it := items[i]; {
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			open[it.ToolCall.ID]++
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			if open[it.ToolResult.CallID] == 0 {
				start = i + 1 // its call was cut off
				clear(open)
				continue
			}
			open[it.ToolResult.CallID]--
		}
	}
	return start
}

// uniqueCallIDs renames, in a session's items, each tool call whose id an
// earlier call of the session already has, with the results that answer
// it: a run that saw only a window of the session cannot know the ids
// outside it, and may have used one again, while a provider refuses a
// transcript with two calls of one id. The new id is the old one with the
// call's index ("_s12"): the same items are renamed the same way on every
// read. Items are copied, never changed in place.
func uniqueCallIDs(items []item.Item) {
	seen := map[string]bool{}
	renamed := map[string]string{} // an id → the new id of its latest call
	for i := range items {
		it := &items[i]
		switch {
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			id := it.ToolCall.ID
			if !seen[id] {
				seen[id] = true
				continue
			}
			n := fmt.Sprintf("%s_s%d", id, i)
			for seen[n] {
				n += "_"
			}
			seen[n] = true
			renamed[id] = n
			tc := *it.ToolCall
			tc.ID, tc.ProviderID = n, "" // the provider's item id names the old id
			it.ToolCall = &tc
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			if n, ok := renamed[it.ToolResult.CallID]; ok {
				tr := *it.ToolResult
				tr.CallID = n
				it.ToolResult = &tr
			}
		}
	}
}

// sessionPrefix reads back the session prefix of a run that holds it by
// reference: the session as of the revision the run started from, with
// the run's window, and how many earlier items the window leaves out. A
// prefix that no longer reads as the run recorded it (another length) is a
// *store.DataError.
func (rt *Runtime) sessionPrefix(ctx context.Context, run *store.Run, cp *checkpoint) ([]item.Item, int64, error) {
	st, err := rt.store.SessionLoad(ctx, &store.SessionLoadParams{Tenant: rt.tenant, SessionID: run.SessionID,
		AsOf: cp.SessionBase, Last: cp.SessionWindow, WithSnapshot: cp.SessionWindow > 0})
	if err != nil {
		return nil, 0, fmt.Errorf("actoviq: run %s: read session %s as of revision %d: %w", run.ID, run.SessionID, cp.SessionBase, err)
	}
	items, _, omitted, err := windowItems(st, cp.SessionWindow)
	if err != nil {
		return nil, 0, err
	}
	uniqueCallIDs(items)
	if cp.SessionWindow > 0 && len(items) != cp.SessionWindow {
		return nil, 0, &store.DataError{Kind: "session", ID: run.SessionID, Err: fmt.Errorf(
			"run %s took %d items of it as of revision %d, and %d read back", run.ID, cp.SessionWindow, cp.SessionBase, len(items))}
	}
	return items, omitted, nil
}

// readPrefix puts the run's session prefix in front of its transcript, if
// the run holds it by reference and has not read it yet. The drive reads
// it only when it calls the model: a drive that records a decision, or a
// cancellation, costs the run, not its session.
func (d *drive) readPrefix(ctx context.Context) error {
	if !d.cp.prefixMissing() {
		return nil
	}
	prefix, _, err := d.rt.sessionPrefix(ctx, d.run, d.cp)
	if err != nil {
		return err
	}
	n := len(prefix)
	d.cp.withPrefix(prefix)
	d.cpEnc.stored += n
	d.tcheck = llm.TranscriptCheck{} // the transcript it checked grew at the front
	return nil
}

// sessionSince loads a session's entries after revision base, up to its
// latest revision: what other runs appended since base, never the
// session's history (two reads: the revision, then those entries as of it).
func (rt *Runtime) sessionSince(ctx context.Context, sessionID string, base int64) (*store.SessionState, error) {
	head, err := rt.store.SessionLoad(ctx, &store.SessionLoadParams{Tenant: rt.tenant, SessionID: sessionID, Last: 1})
	if err != nil || head.Revision <= base {
		return head, err
	}
	return rt.store.SessionLoad(ctx, &store.SessionLoadParams{Tenant: rt.tenant, SessionID: sessionID,
		AsOf: head.Revision, Last: int(head.Revision - base)})
}

// A run in a session appends its items (the new input, every model
// response and tool result, the final answer) to the session's journal when
// it completes: one CAS on the revision the run started from, made before
// the run's completion write. Each appended item carries the append's
// identity, the run id and the turn of the final answer.
//
// A process can die between the two writes. The session then holds the
// run's answer and the run is still running. The next drive recognises the
// append by its identity, not by counting items, completes the run with the
// answer the session holds, and does not ask the model again.
//
// When another run of the session appended first, this run can never
// append: it is "overtaken". It ends failed with code session_conflict
// (errors.Is(res.Error, ErrSessionConflict)), its answer kept in its own
// Output and transcript, and nothing is appended. Resume does not call the
// model for such a run: it finds the session moved on and ends the run.
// The way out is a new run in the session, which sees the session's
// history as it is now.

// appendSession appends the run's items to its session (CAS on the
// revision the run started from), stamped with the run id and turn.
func (d *drive) appendSession(ctx context.Context) error {
	if d.run.SessionID == "" || d.cp.SessionAppended {
		return nil
	}
	var items []json.RawMessage
	for _, it := range d.cp.Items[d.cp.held:] {
		b, err := json.Marshal(it)
		if err != nil {
			return err
		}
		items = append(items, b)
	}
	wctx, cancel := d.detached(ctx)
	defer cancel()
	_, err := d.rt.store.SessionAppend(wctx, &store.SessionAppendParams{Tenant: d.rt.tenant, SessionID: d.run.SessionID,
		ExpectedRevision: d.cp.SessionBase, RunID: d.run.ID, Turn: d.cp.Turn, Items: items, Fence: &d.fence})
	if errors.Is(err, store.ErrConflict) {
		st, lerr := d.rt.sessionSince(wctx, d.run.SessionID, d.cp.SessionBase)
		if lerr != nil {
			return fmt.Errorf("actoviq: append session %s: %w (and loading it: %v)", d.run.SessionID, err, lerr)
		}
		own, ok := ownAppend(st, d.cp.SessionBase, d.run.ID, d.cp.Turn)
		if !ok {
			return fmt.Errorf("%w: session %s: %v", ErrSessionConflict, d.run.SessionID, err)
		}
		// This run appended already (another drive of it, at this turn):
		// what the session holds is the truth.
		return d.adoptAppend(own)
	}
	if err != nil {
		return fmt.Errorf("actoviq: append session %s: %w", d.run.SessionID, err)
	}
	d.cp.SessionAppended = true
	return nil
}

// ownAppend returns the entries of this run's append at turn: the entries
// right after base, written by runID at that turn. An entry without a turn
// (appended before turns were stored) counts when its run id matches. ok is
// false when the entry after base is another run's, or base is hidden in a
// snapshot (the append's identity cannot be read there).
func ownAppend(st *store.SessionState, base int64, runID string, turn int) ([]store.SessionEntry, bool) {
	if st.SnapshotRevision > base {
		return nil, false
	}
	var own []store.SessionEntry
	for _, en := range st.Entries {
		if en.Seq <= base {
			continue
		}
		if en.Seq != base+int64(len(own))+1 || en.RunID != runID || (en.Turn != turn && en.Turn != 0) {
			break
		}
		own = append(own, en)
	}
	return own, len(own) > 0
}

// adoptAppend makes the drive's transcript and output what the run's own
// session append holds: the items the checkpoint had, then the answer.
func (d *drive) adoptAppend(own []store.SessionEntry) error {
	var items []item.Item
	for _, en := range own {
		var it item.Item
		if err := json.Unmarshal(en.Item, &it); err != nil {
			return &store.DataError{Kind: "session", ID: fmt.Sprintf("%s#%d", d.run.SessionID, en.Seq), Err: err}
		}
		items = append(items, it)
	}
	// The checkpoint holds the transcript up to the turn before the answer
	// (or, in a race, up to the answer itself).
	known := len(d.cp.Items) - d.cp.held
	if len(d.cp.Output) > 0 && known >= len(d.cp.Output) {
		known -= len(d.cp.Output) // this drive already added its own answer
	}
	if known < 0 || len(items) < known {
		return &store.DataError{Kind: "session", ID: d.run.SessionID, Err: fmt.Errorf(
			"run %s's append holds %d items, its checkpoint %d before the answer", d.run.ID, len(items), known)}
	}
	out := items[known:]
	d.cp.Items = append(d.cp.Items[:d.cp.held+known:d.cp.held+known], out...)
	d.cp.Output = out
	d.cp.SessionAppended = true
	return nil
}

// sessionOnResume runs before a resumed drive does anything else. A run
// whose own append is in the session completes with it; a run whose
// session moved on without it ends failed (session_conflict). Either way
// no model is asked and no tool runs; done reports that the drive is over.
func (d *drive) sessionOnResume(ctx context.Context) (res *RunResult, err error, done bool) {
	if d.run.SessionID == "" || d.cp.SessionAppended {
		return nil, nil, false
	}
	st, err := d.rt.sessionSince(ctx, d.run.SessionID, d.cp.SessionBase)
	if err != nil {
		return nil, fmt.Errorf("actoviq: load session %s of run %s: %w", d.run.SessionID, d.run.ID, err), true
	}
	if st.Revision == d.cp.SessionBase {
		return nil, nil, false
	}
	turn := d.cp.Turn + 1
	if own, ok := ownAppend(st, d.cp.SessionBase, d.run.ID, turn); ok && d.allCommitted() {
		// The last tool turn's results were folded in memory before the
		// answer and the append; the checkpoint holding them was never
		// written. The append holds them: fold them here too.
		if len(d.cp.Pending) > 0 {
			d.fold()
		}
		if err := d.adoptAppend(own); err != nil {
			return nil, err, true
		}
		d.cp.Turn = turn
		rev := own[len(own)-1].Seq
		data := &RunEndedData{Status: StatusCompleted, Usage: d.cp.Usage}
		err := d.saveRun(ctx, store.RunCompleted, nil,
			d.event(EvSessionRecovered, "", &SessionRecoveredData{SessionID: d.run.SessionID, Revision: rev, Turn: turn, Output: d.cp.Output}),
			d.event(EvRunCompleted, "", data))
		if err != nil {
			return nil, err, true
		}
		return d.cp.result(d.run.ID, store.RunCompleted), nil, true
	}
	res, err = d.overtaken(ctx, st)
	return res, err, true
}

// sessionAppendFailed ends a run whose final append lost to another run
// of its session, with the events pre (the answer's model.response) before
// its end; other errors are returned as they are.
func (d *drive) sessionAppendFailed(ctx context.Context, err error, pre ...*store.EventRecord) (*RunResult, error) {
	if !errors.Is(err, ErrSessionConflict) {
		return nil, err
	}
	st, lerr := d.rt.sessionSince(ctx, d.run.SessionID, d.cp.SessionBase)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	return d.overtaken(ctx, st, pre...)
}

// overtaken ends the run failed with code session_conflict: another run of
// its session appended first, so this one can never append. Its answer,
// if it has one, stays in its Output; nothing goes to the session.
func (d *drive) overtaken(ctx context.Context, st *store.SessionState, pre ...*store.EventRecord) (*RunResult, error) {
	by := "another run"
	for _, en := range st.Entries {
		if en.Seq == d.cp.SessionBase+1 && en.RunID != "" {
			by = "run " + en.RunID
		}
	}
	d.cp.Error = &RunError{Code: CodeSessionConflict,
		Message: fmt.Sprintf("session %s moved on without this run: %s appended to it first (the run started from revision %d, the session is at %d); "+
			"nothing of this run was appended", d.run.SessionID, by, d.cp.SessionBase, st.Revision),
		Hint: fmt.Sprintf("the run is over and its transcript and answer stay in it; to continue the conversation, start a new run in session %s, "+
			"which sees the session's history as it is now", d.run.SessionID)}
	return d.end(ctx, store.RunFailed, EvRunFailed, pre...)
}
