package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/internal/killpoint"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// counts are the invariant checker's tallies; every one must be 0.
type counts struct {
	DupEffects  int // executions beyond 1 + re-execute decisions, or an attempt run twice
	Lost        int // committed results gone, changed, or missing from the transcript or session
	DupItems    int // a call, result or session item twice
	Unanswered  int // requests holding a tool call without its result
	Unexplained int // runs whose status does not say why they stopped
	Incomplete  int // runs that did not end completed
	KeyChanges  int // keys that differ between observations or attempts of one call
	Errors      int // drives that returned an error instead of a status
	CancelLost  int // a Cancel that returned nil on a run that did not end cancelled, or that started a call after it
	Downgrades  int // a model request of a run by an older agent version after a newer one took it over
}

func (c counts) any() bool { return c != counts{} }

func (c *counts) add(o counts) {
	c.DupEffects += o.DupEffects
	c.Lost += o.Lost
	c.DupItems += o.DupItems
	c.Unanswered += o.Unanswered
	c.Unexplained += o.Unexplained
	c.Incomplete += o.Incomplete
	c.KeyChanges += o.KeyChanges
	c.Errors += o.Errors
	c.CancelLost += o.CancelLost
	c.Downgrades += o.Downgrades
}

// maxDrives bounds the drives of one episode: a run that still is not
// done after that many is counted incomplete.
const maxDrives = 30

type episodeEnv struct {
	c    *cell
	rt   *actoviq.Runtime
	tg   target
	self string
	rng  *mrand.Rand
	// Calibration: the most writes and the longest drive seen unarmed.
	writes int
	took   time.Duration
}

// episode is one play's bookkeeping.
type episode struct {
	committed map[string]json.RawMessage // run/call → result seen committed
	keys      map[string]string          // run/call → key seen
	reexec    map[string]int             // key → re-execute decisions given
	cancel    *cancelOutcome             // the coordinator's Cancel (cancel scenario)
}

func (c *cell) violation(format string, args ...any) {
	if len(c.details) < 12 {
		c.details = append(c.details, fmt.Sprintf(format, args...))
	}
}

// play runs one episode: fresh runs, driven (and killed) until each one
// ends, then checked.
func (e *episodeEnv) play(ctx context.Context, dir, name string, armed bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := e.c
	plans := c.scenario.runs(name)
	ids := []string{}
	for _, p := range plans {
		ids = append(ids, p.ID)
		if c.scenario.children != nil {
			ids = append(ids, c.scenario.children(p.ID)...)
		}
	}
	ep := &episode{committed: map[string]json.RawMessage{}, keys: map[string]string{}, reexec: map[string]int{}}
	w := world{dir: dir, self: e.self}
	c.episodes++
	c.runs += len(plans)
	for d := 0; ; d++ {
		var open []runPlan
		var decs []decision
		for _, p := range plans {
			info, err := e.rt.Get(ctx, p.ID)
			if errors.Is(err, actoviq.ErrNotFound) {
				open = append(open, p)
				continue
			}
			if err != nil {
				return fmt.Errorf("get %s: %w", p.ID, err)
			}
			switch info.Status {
			case actoviq.StatusCompleted, actoviq.StatusFailed, actoviq.StatusCancelled:
				continue
			case actoviq.StatusInterrupted:
				ds, err := e.operator(ep, w, info)
				if err != nil {
					return err
				}
				decs = append(decs, ds...)
			}
			open = append(open, p)
		}
		if len(open) == 0 {
			break
		}
		if d == maxDrives {
			c.c.Incomplete += len(open)
			c.violation("%s: %d runs still open after %d drives", name, len(open), maxDrives)
			break
		}
		sp := childSpec{Target: e.tg, Scenario: c.scenario.name, Dir: dir, Runs: open, Decide: decs}
		var delay time.Duration
		if armed && (d == 0 || e.rng.IntN(2) == 0) {
			switch k := e.rng.IntN(5); {
			case k == 0:
				// Inside the store: a journal write (after its log row,
				// before its commit), a write of one events row of several
				// records (after the row, before the commit) or a
				// compaction (after the merged rows were deleted, or after
				// the merged row was written).
				points := []string{killpoint.JournalWrite, killpoint.JournalWrite, killpoint.EventRowWrite, killpoint.Compaction, killpoint.CompactionCommit}
				sp.KillPoint = fmt.Sprintf("%s:%d", points[e.rng.IntN(len(points))], 1+e.rng.IntN(3))
			case k <= 2 && e.writes > 0:
				sp.KillAt = 1 + e.rng.IntN(2*e.writes)
			default:
				delay = time.Duration(e.rng.Int64N(int64(max(e.took, time.Millisecond)))) + 1
			}
		}
		if c.scenario.closes && d < maxDrives-5 && e.rng.IntN(2) == 0 {
			sp.CloseAfter = 1 + e.rng.Int64N(max(e.took.Microseconds(), 1000))
		}
		var cancelled <-chan cancelOutcome
		if c.scenario.cancel && ep.cancel == nil {
			ep.cancel = &cancelOutcome{}
			cancelled = e.cancelDuring(ctx, plans[0].ID, time.Duration(e.rng.Int64N(int64(max(e.took, time.Millisecond)))))
		}
		res := spawn(e.self, sp, delay)
		if cancelled != nil {
			co := <-cancelled
			ep.cancel = &co
		}
		if d > 0 {
			c.resumes++
		}
		if res.killed {
			c.kills++
			if sp.KillPoint != "" {
				c.inside++
			}
		}
		if res.fail != "" {
			c.c.Errors++
			c.violation("%s drive %d: %s", name, d, res.fail)
		}
		for id, st := range res.status {
			if strings.HasPrefix(st, "refused ") {
				c.refused++
			}
			if len(st) > 6 && st[:6] == "error " {
				c.c.Errors++
				c.violation("%s drive %d: run %s: %s", name, d, id, st[6:])
			}
		}
		if !armed && !res.killed {
			e.writes, e.took = max(e.writes, res.writes), max(e.took, res.took)
		}
		if err := waitGone(w.pids()); err != nil {
			return err
		}
		if err := e.observe(ctx, ep, name, ids); err != nil {
			return err
		}
		if res.fail != "" && !res.killed && d > 3 {
			// A child that cannot start will not start next time either.
			return fmt.Errorf("%s: drives keep failing: %s", name, res.fail)
		}
	}
	if err := e.check(ctx, ep, w, name, plans, ids); err != nil {
		return err
	}
	switch {
	case c.scenario.cancel:
		return e.checkCancel(ctx, name, ep.cancel)
	case c.scenario.takeover:
		return e.checkDowngrades(name, w)
	case c.scenario.children != nil && c.scenario.closes:
		return e.checkChildAnswer(ctx, name, plans)
	case c.scenario.name == "window":
		return e.checkWindow(ctx, name, plans)
	}
	return nil
}

// operator decides every open question of an interrupted run the way a
// careful person would: approve; and for an unknown outcome, look at the
// tool's own log: committed when this attempt is there, re-execute when
// it is not.
func (e *episodeEnv) operator(ep *episode, w world, info *actoviq.RunInfo) ([]decision, error) {
	lines, err := readLines[effectLine](w.effects())
	if err != nil {
		return nil, err
	}
	var out []decision
	for _, in := range info.Interruptions {
		d := actoviq.Decision{CallID: in.CallID, RunID: in.RunID, By: "campaign"}
		switch in.Kind {
		case actoviq.InterruptApproval:
			d.Kind, d.Reason = actoviq.DecideApprove, "the campaign approves every call"
		case actoviq.InterruptReconciliation, actoviq.InterruptRecovery:
			seen := 0
			for _, l := range lines {
				if l.Key == in.IdempotencyKey && (l.Attempt == in.Attempt || l.Attempt == 0) {
					seen++
				}
			}
			happened := seen > 0
			for _, l := range lines {
				if l.Key == in.IdempotencyKey && l.Attempt == 0 {
					// An MCP server sees no attempt: count the calls.
					happened = seen >= in.Attempt
					break
				}
			}
			if happened {
				d.Kind, d.Reason, d.Result = actoviq.DecideCommitted, "the tool's log shows attempt "+fmt.Sprint(in.Attempt), "done (seen in the log)"
			} else {
				d.Kind, d.Reason = actoviq.DecideReexecute, "the tool's log has no line for attempt "+fmt.Sprint(in.Attempt)
				ep.reexec[in.IdempotencyKey]++
			}
		default:
			continue // provider: resume asks the model again
		}
		out = append(out, decision{Run: info.ID, Decision: d})
	}
	return out, nil
}

// observe reads the runs after a drive: a committed result may never
// change or go, a key never change.
func (e *episodeEnv) observe(ctx context.Context, ep *episode, name string, ids []string) error {
	c := e.c
	for _, id := range ids {
		info, err := e.rt.Get(ctx, id)
		if errors.Is(err, actoviq.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", id, err)
		}
		seen := map[string]bool{}
		for _, en := range info.Ledger {
			k := id + "/" + en.CallID
			seen[k] = true
			want := id + ":" + en.CallID
			if en.IdempotencyKey != want {
				c.c.KeyChanges++
				c.violation("%s: run %s call %s has key %q, want %q", name, id, en.CallID, en.IdempotencyKey, want)
			}
			if prev, ok := ep.keys[k]; ok && prev != en.IdempotencyKey {
				c.c.KeyChanges++
				c.violation("%s: run %s call %s: key %q became %q", name, id, en.CallID, prev, en.IdempotencyKey)
			}
			ep.keys[k] = en.IdempotencyKey
			prev, had := ep.committed[k]
			switch {
			case en.State == store.LedgerCommitted && had && !bytes.Equal(prev, en.Result):
				c.c.Lost++
				c.violation("%s: run %s call %s: committed result %s became %s", name, id, en.CallID, prev, en.Result)
			case en.State == store.LedgerCommitted:
				ep.committed[k] = en.Result
			case had:
				c.c.Lost++
				c.violation("%s: run %s call %s: committed, now %s", name, id, en.CallID, en.State)
			}
		}
		for k := range ep.committed {
			if len(k) > len(id) && k[:len(id)+1] == id+"/" && !seen[k] {
				c.c.Lost++
				c.violation("%s: committed entry %s is gone from the ledger", name, k)
				delete(ep.committed, k)
			}
		}
	}
	return nil
}

// check counts what the episode left behind.
func (e *episodeEnv) check(ctx context.Context, ep *episode, w world, name string, plans []runPlan, ids []string) error {
	c := e.c
	if err := e.observe(ctx, ep, name, ids); err != nil {
		return err
	}
	attempts := map[string]int{} // key → ledger attempt
	for _, id := range ids {
		info, err := e.rt.Get(ctx, id)
		if errors.Is(err, actoviq.ErrNotFound) {
			c.c.Incomplete++
			c.violation("%s: run %s was never created", name, id)
			continue
		}
		if err != nil {
			return err
		}
		switch info.Status {
		case actoviq.StatusCompleted:
		case actoviq.StatusInterrupted:
			if len(info.Interruptions) == 0 {
				c.c.Unexplained++
				c.violation("%s: run %s interrupted with no interruption (last events: %s)", name, id, e.lastEvents(ctx, id, 6))
			}
		case actoviq.StatusFailed, actoviq.StatusCancelled:
			if info.Error == nil {
				c.c.Unexplained++
				c.violation("%s: run %s %s with no error", name, id, info.Status)
			}
		default: // running or stalled with every drive gone
			c.c.Unexplained++
			c.violation("%s: run %s left %s (stored %s) after its last drive", name, id, info.Status, info.StoredStatus)
		}
		byCoordinator := info.Status == actoviq.StatusCancelled && ep.cancel != nil && ep.cancel.run == id // checkCancel
		if info.Status != actoviq.StatusCompleted && !byCoordinator {
			c.c.Incomplete++
			msg := ""
			if info.Error != nil {
				msg = info.Error.Message
			}
			c.violation("%s: run %s ended %s, not completed %s %+v", name, id, info.Status, msg, info.Interruptions)
		}
		calls, results := map[string]int{}, map[string]int{}
		for _, it := range info.Transcript {
			switch {
			case it.Type == item.TypeToolCall && it.ToolCall != nil:
				calls[it.ToolCall.ID]++
			case it.Type == item.TypeToolResult && it.ToolResult != nil:
				results[it.ToolResult.CallID]++
			}
		}
		for id2, n := range calls {
			if n > 1 {
				c.c.DupItems++
				c.violation("%s: run %s: call %s %d times in the transcript", name, id, id2, n)
			}
		}
		for id2, n := range results {
			if n > 1 {
				c.c.DupItems++
				c.violation("%s: run %s: result of %s %d times in the transcript", name, id, id2, n)
			}
		}
		for _, en := range info.Ledger {
			attempts[en.IdempotencyKey] = en.Attempt
			if en.State == store.LedgerCommitted && info.Status == actoviq.StatusCompleted && results[en.CallID] == 0 {
				c.c.Lost++
				c.violation("%s: run %s: committed call %s has no result in the transcript", name, id, en.CallID)
			}
		}
	}
	// The tools' own logs.
	lines, err := readLines[effectLine](w.effects())
	if err != nil {
		return err
	}
	perKey, perAttempt := map[string]int{}, map[string]int{}
	for _, l := range lines {
		perKey[l.Key]++
		if l.Attempt > 0 {
			perAttempt[fmt.Sprintf("%s#%d", l.Key, l.Attempt)]++
		}
		if _, ok := attempts[l.Key]; !ok {
			c.c.KeyChanges++
			c.violation("%s: tool %s ran with key %q, which no ledger entry has", name, l.Tool, l.Key)
		}
	}
	for k, n := range perKey {
		if allowed := 1 + ep.reexec[k]; n > allowed || n > attempts[k] {
			c.c.DupEffects++
			c.violation("%s: key %s executed %d times; %d re-execute decisions, ledger attempt %d", name, k, n, ep.reexec[k], attempts[k])
		}
	}
	for k, n := range perAttempt {
		if n > 1 {
			c.c.DupEffects++
			c.violation("%s: %s (key#attempt) executed %d times", name, k, n)
		}
	}
	// Every request the model got.
	reqs, err := readLines[requestLine](w.requests())
	if err != nil {
		return err
	}
	for i, r := range reqs {
		have := map[string]bool{}
		for _, id := range r.Results {
			have[id] = true
		}
		for _, id := range r.Calls {
			if !have[id] {
				c.c.Unanswered++
				c.violation("%s: request %d to %s holds call %s without its result", name, i+1, r.Agent, id)
			}
		}
	}
	// The session journal: no item twice for one run; a completed run's
	// items are there.
	if plans[0].Session != "" {
		st, err := e.rt.Store().SessionLoad(ctx, &store.SessionLoadParams{Tenant: e.rt.Tenant(), SessionID: plans[0].Session})
		if err != nil {
			return fmt.Errorf("load session %s: %w", plans[0].Session, err)
		}
		seen, perRun := map[string]int{}, map[string]int{}
		for _, en := range st.Entries {
			k := en.RunID + "\x00" + string(en.Item)
			seen[k]++
			perRun[en.RunID]++
			if seen[k] == 2 {
				c.c.DupItems++
				c.violation("%s: session %s holds an item of run %s twice: %s", name, plans[0].Session, en.RunID, en.Item)
			}
		}
		for _, p := range plans {
			if info, err := e.rt.Get(ctx, p.ID); err == nil && info.Status == actoviq.StatusCompleted && perRun[p.ID] == 0 {
				c.c.Lost++
				c.violation("%s: completed run %s has no items in session %s", name, p.ID, p.Session)
			}
		}
	}
	return nil
}

// lastEvents names the last n stored events of a run, oldest first, for a
// violation's details.
func (e *episodeEnv) lastEvents(ctx context.Context, runID string, n int) string {
	evs, err := e.rt.Events(ctx, runID, nil)
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, ev := range evs[max(len(evs)-n, 0):] {
		names = append(names, ev.Type)
	}
	return strings.Join(names, ", ")
}
