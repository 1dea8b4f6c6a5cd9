package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// SpawnOptions configures [Runtime.Spawn]. A nil *SpawnOptions means
// defaults.
type SpawnOptions struct {
	// ParentClose is what the parent's ending cancelled does to the child
	// ([ParentClosePolicy]); empty means ParentCloseCancel.
	ParentClose ParentClosePolicy
	// Failure is recorded with the child for whoever waits on it. RetrySafe
	// is refused, with a [*RetryUnsafeError], for an agent with a tool that
	// can reach a side effect.
	Failure ChildFailure
	// Budget narrows the tree budget the child inherits from its parent.
	Budget Budget
	// MaxAttempts bounds the drives of a RetrySafe child: when one stops
	// for a provider outage or a started read or idempotent write, that
	// drive records a re-execute (same keys) and queues the child again,
	// in the same write, until this many drives; 0 means 3.
	MaxAttempts int
	// Backoff is how long a RetrySafe child's drive waits before it queues
	// the child again, doubling after each attempt; 0 means 1 s.
	Backoff time.Duration
}

// withDefaults checks the options for child agent a and fills in the
// defaults; SpawnTool checks them when it is built, Spawn when it runs.
func (opts *SpawnOptions) withDefaults(a *AgentSpec) (SpawnOptions, error) {
	var o SpawnOptions
	if opts != nil {
		o = *opts
	}
	switch o.ParentClose {
	case "":
		o.ParentClose = ParentCloseCancel
	case ParentCloseCancel, ParentCloseAbandon:
	default:
		return o, fmt.Errorf("actoviq: Spawn: unknown parent-close policy %q (want cancel or abandon)", o.ParentClose)
	}
	switch o.Failure {
	case "":
		o.Failure = FailFast
	case FailFast, Collect:
	case RetrySafe:
		if err := a.Validate(); err != nil {
			return o, err
		}
		if err := retrySafe(a); err != nil {
			return o, err
		}
	default:
		return o, fmt.Errorf("actoviq: Spawn: unknown failure policy %q", o.Failure)
	}
	if o.MaxAttempts < 0 || o.Backoff < 0 {
		return o, errors.New("actoviq: Spawn: MaxAttempts and Backoff must not be negative")
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	return o, nil
}

// Spawn writes a background child of run parentID: a durable run record
// in status queued, whose id it returns at once. A worker ([Runtime.Work])
// with the agent registered drives it: queued → running → completed,
// failed, cancelled or interrupted, each a revision of the record. The
// parent polls it with [Runtime.Get] or waits with [Runtime.Wait]. The
// child's deadline is no later than its parent's; its tenant is the
// parent's. in.RunID may name the child (an existing id is refused with
// [ErrRunExists], so a retried Spawn with the same id never makes two).
// A parent that does not exist, or that a prune removes while Spawn runs,
// is refused with an error matching [ErrNotFound] (a
// [*store.NotFoundError]): no child is left without its parent.
func (rt *Runtime) Spawn(ctx context.Context, parentID string, a *AgentSpec, in *Input, opts *SpawnOptions) (string, error) {
	o, err := opts.withDefaults(a)
	if err != nil {
		return "", err
	}
	parent, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: parentID})
	if err != nil {
		return "", fmt.Errorf("actoviq: Spawn: parent run %s: %w", parentID, err)
	}
	if parent.Status == store.RunCancelled {
		return "", &RunFinishedError{RunID: parentID, Status: StatusCancelled, Reason: "a cancelled run spawns no children"}
	}
	pcp, err := decodeCheckpoint(parent)
	if err != nil {
		return "", err
	}
	tree := &childInfo{Root: parentID, Depth: 1, Mode: "background", Budget: o.Budget, ParentClose: o.ParentClose, Failure: o.Failure,
		MaxAttempts: o.MaxAttempts, Backoff: o.Backoff}
	if pi := pcp.Child; pi != nil {
		tree.Root, tree.Depth, tree.Budget = pi.Root, pi.Depth+1, pi.Budget.narrow(o.Budget)
	}
	if in == nil {
		in = &Input{}
	}
	child := *in
	if child.RunID == "" {
		child.RunID = rt.newID()
	}
	if err := checkRunID("Input.RunID", child.RunID); err != nil {
		return "", err
	}
	// What makes the write fail is checked before a place of the tree's
	// MaxChildren is taken for good: a Spawn that writes no child spends
	// no place.
	if err := a.Validate(); err != nil {
		return "", err
	}
	if r, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: child.RunID}); err == nil && r.ParentID != parentID {
		return "", fmt.Errorf("actoviq: Spawn: run %s exists and is not a child of %s: %w", child.RunID, parentID, ErrRunExists)
	}
	if why, err := rt.budgetRefusal(ctx, tree, child.RunID); err != nil || why != "" {
		if err == nil {
			err = errors.New("actoviq: Spawn refused: " + why)
		}
		return "", err
	}
	child.ParentRunID = parentID
	run, err := rt.newQueuedWith(ctx, a, &child, func(cp *checkpoint, r *store.Run) {
		cp.Child = tree
		if !parent.Deadline.IsZero() && (r.Deadline.IsZero() || parent.Deadline.Before(r.Deadline)) {
			r.Deadline = parent.Deadline
		}
	})
	if err != nil {
		if tree.Budget.MaxChildren > 0 && !errors.Is(err, ErrRunExists) {
			rt.freeChildSlot(ctx, tree.Root, tree.Budget.MaxChildren, child.RunID)
		}
		var gone *store.NotFoundError
		if errors.As(err, &gone) && gone.Kind == "parent run" {
			// A prune removed the parent after it was read above: the
			// store refuses a child whose parent is gone.
			return "", fmt.Errorf("actoviq: Spawn: parent run %s was removed (pruned) before its child was written: %w", parentID, gone)
		}
		return "", err
	}
	// The parent may have ended cancelled while the child was written,
	// after its parent-close listed its children: then the child follows
	// the policy here (one of the two sees the other).
	if o.ParentClose == ParentCloseCancel {
		if p, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: parentID}); err == nil && p.Status == store.RunCancelled {
			if err := rt.cancelOnce(ctx, run.ID); err != nil {
				return "", fmt.Errorf("actoviq: Spawn: parent %s was cancelled meanwhile, and its child %s could not be cancelled: %w", parentID, run.ID, err)
			}
			return "", &RunFinishedError{RunID: parentID, Status: StatusCancelled,
				Reason: "it was cancelled while the child was written; the child " + run.ID + " was cancelled with it"}
		}
	}
	return run.ID, nil
}

// SpawnTool offers child to a model as a background agent: a call queues
// a child run (id "<run>.<call>", so a re-run of the call finds the same
// child instead of queueing another) and returns its id at once; the
// model reads the result later with [ChildResultTool]. Its effect is
// idempotent-write: the record is keyed by the call.
func SpawnTool(child *AgentSpec, name string, opts *SpawnOptions) (tool.Tool, error) {
	if err := child.Validate(); err != nil {
		return nil, err
	}
	if _, err := opts.withDefaults(child); err != nil {
		return nil, err
	}
	if name == "" {
		name = "spawn_" + toolNameBad.ReplaceAllString(child.ID, "_")
	}
	t := &spawnTool{child: child, opts: opts, spec: tool.Spec{Name: name, Effect: tool.IdempotentWrite,
		Description: "Start agent " + child.ID + " in the background on a task; returns the child run id at once.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}`)}}
	if err := t.spec.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

type spawnTool struct {
	child *AgentSpec
	opts  *SpawnOptions
	spec  tool.Spec
}

func (t *spawnTool) Spec() tool.Spec { return t.spec }

func (t *spawnTool) wantsParent() {}

func (t *spawnTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	pc, ok := ctx.Value(parentKey{}).(*parentCall)
	if !ok {
		return tool.Result{}, fmt.Errorf("actoviq: spawn tool %s was called outside a run of this runtime", t.spec.Name)
	}
	var in struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
	}
	id := ChildRunID(pc.runID, pc.callID)
	_, err := pc.d.rt.Spawn(ctx, pc.runID, t.child, &Input{RunID: id, Items: []item.Item{item.UserText(in.Input)}}, t.opts)
	if err != nil && !errors.Is(err, ErrRunExists) {
		return tool.Result{}, err
	}
	return tool.Result{Content: "started background run " + id, Data: mustJSON(map[string]string{"run_id": id})}, nil
}

// ChildResultTool lets a model read a background child's result: a read
// tool that takes {"run_id": "..."} and answers with the child's output
// once it has completed, or its status. It only reads children of the run
// that calls it.
func ChildResultTool() tool.Tool {
	return &childResultTool{spec: tool.Spec{Name: "child_result", Effect: tool.Read,
		Description: "Read the result of a background child run started earlier; says if it is still running.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"run_id":{"type":"string"}},"required":["run_id"],"additionalProperties":false}`)}}
}

type childResultTool struct{ spec tool.Spec }

func (t *childResultTool) Spec() tool.Spec { return t.spec }

func (t *childResultTool) wantsParent() {}

func (t *childResultTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	pc, ok := ctx.Value(parentKey{}).(*parentCall)
	if !ok {
		return tool.Result{}, errors.New("actoviq: child_result was called outside a run of this runtime")
	}
	var in struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
	}
	e := pc.d.rt
	run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: in.RunID})
	if errors.Is(err, store.ErrNotFound) || err == nil && run.ParentID != pc.runID {
		return tool.Result{Content: "no child run " + in.RunID + " of this run", IsError: true}, nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	cp, err := decodeCheckpoint(run)
	if err != nil {
		return tool.Result{}, err
	}
	res := cp.result(run.ID, run.Status)
	switch res.Status {
	case StatusCompleted:
		return childResult(res), nil
	case StatusQueued, StatusRunning:
		return tool.Result{Content: fmt.Sprintf("child run %s is %s; ask again later", run.ID, res.Status)}, nil
	case StatusInterrupted:
		return tool.Result{Content: fmt.Sprintf("child run %s is interrupted and waits for an operator (%d open)", run.ID, len(res.Interruptions))}, nil
	}
	return tool.Result{IsError: true, Content: (&ChildFailedError{RunID: run.ID, Status: res.Status, Err: res.Error}).Error()}, nil
}
