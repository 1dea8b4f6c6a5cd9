package actoviq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// childInfo is a child run's place in its tree (checkpoint.Child).
type childInfo struct {
	Root  string `json:"root"`
	Depth int    `json:"depth"`
	Mode  string `json:"mode"` // foreground | background
	Tool  string `json:"tool,omitempty"`
	// CallID is the parent's call a foreground child answers.
	CallID string `json:"call_id,omitempty"`
	Budget Budget `json:"budget,omitzero"`
	// ParentClose is what cancelling the parent does to a background
	// child: cancel (default) or abandon.
	ParentClose ParentClosePolicy `json:"parent_close,omitempty"`
	Failure     ChildFailure      `json:"failure,omitempty"`
	// MaxAttempts and Attempts: a retry-safe background child's drives.
	MaxAttempts int `json:"max_attempts,omitempty"`
	Attempts    int `json:"attempts,omitempty"`
	// Backoff is the wait before a retry-safe background child's second
	// drive, doubling after each.
	Backoff time.Duration `json:"backoff,omitempty"`
}

type agentTool struct {
	child *AgentSpec
	o     AgentToolOptions
	spec  tool.Spec
}

var toolNameBad = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// strength orders effects: read < idempotent-write < side-effect.
func strength(e tool.Effect) int {
	switch e {
	case tool.Read:
		return 0
	case tool.IdempotentWrite:
		return 1
	}
	return 2
}

func childEffect(a *AgentSpec) tool.Effect {
	eff := tool.Read
	for _, t := range a.Tools {
		if e := t.Spec().Effect; strength(e) > strength(eff) {
			eff = e
		}
	}
	return eff
}

func retrySafe(a *AgentSpec) error {
	for _, t := range a.Tools {
		if e := t.Spec().Effect; e != tool.Read && e != tool.IdempotentWrite {
			return &RetryUnsafeError{Agent: a.ID, Tool: t.Spec().Name, Effect: e}
		}
	}
	return nil
}

// Spec implements [tool.Tool].
func (t *agentTool) Spec() tool.Spec { return t.spec }

// parentCall is what an agent tool learns about the call that runs it.
type parentCall struct {
	d      *drive
	callID string
	// What the tools read of the parent run, taken by the drive before the
	// call runs: a tool the runner gave up on goes on beside the drive,
	// whose writes replace d.run.
	runID    string
	deadline time.Time
	traceID  string
	tree     *childInfo // the parent's own place in its tree; nil for a root

	// An agent tool's call is waited for: the tool runner gives up on a
	// call when its context ends (Close, a worker's release, the tool's
	// timeout), but the child's drive stops a moment later with the
	// outcome the parent must record (stopped, cancelled, interrupted),
	// never "outcome unknown" (outcome).
	track     bool
	mu        sync.Mutex
	entered   bool
	abandoned bool
	done      chan struct{}
	res       tool.Result
	err       error
}

// enter reports whether the call may start: false once the runner gave up
// before the tool was invoked.
func (pc *parentCall) enter() bool {
	if !pc.track {
		return true
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.entered = !pc.abandoned
	return pc.entered
}

// leave records the tool's own outcome.
func (pc *parentCall) leave(res tool.Result, err error) {
	if !pc.track {
		return
	}
	pc.res, pc.err = res, err
	close(pc.done)
}

// outcome returns what the call came to: the runner's answer, unless the
// runner gave up on a started agent tool, whose own outcome it waits for.
func (pc *parentCall) outcome(res tool.Result, err error) (tool.Result, error) {
	if pc == nil || !pc.track || err == nil {
		return res, err
	}
	var ci *childInterrupted
	var cs *childStopped
	var cf *ChildFailedError
	if errors.As(err, &ci) || errors.As(err, &cs) || errors.As(err, &cf) {
		return res, err
	}
	pc.mu.Lock()
	if !pc.entered {
		// The runner gave up before the tool was invoked: nothing started
		// (the call goes back to prepared, recordOutcome).
		pc.abandoned = true
		pc.mu.Unlock()
		var te *tool.Error
		if errors.As(err, &te) {
			nt := *te
			nt.Started, nt.OutcomeUnknown = false, false
			return res, &nt
		}
		return res, err
	}
	pc.mu.Unlock()
	<-pc.done
	return pc.res, pc.err
}

type parentKey struct{}

// childCallContext hands an agent tool its parent call.
func (d *drive) childCallContext(ctx context.Context, en *store.LedgerEntry) (context.Context, *parentCall) {
	if d.runner == nil {
		return ctx, nil
	}
	if t, ok := d.runner.Lookup(en.Tool); ok {
		if _, ok := t.(parentAware); ok {
			_, track := t.(*agentTool)
			pc := &parentCall{d: d, callID: en.CallID, track: track, done: make(chan struct{}),
				runID: d.run.ID, deadline: d.run.Deadline, traceID: d.cp.TraceID, tree: d.cp.Child}
			return context.WithValue(ctx, parentKey{}, pc), pc
		}
	}
	return ctx, nil
}

// parentAware tools are given their parent call: the agent, spawn and
// child-result tools of this package.
type parentAware interface{ wantsParent() }

func (t *agentTool) wantsParent() {}

func (d *drive) agentToolOf(name string) (*agentTool, bool) {
	if d.runner == nil {
		return nil, false
	}
	t, ok := d.runner.Lookup(name)
	if !ok {
		return nil, false
	}
	at, ok := t.(*agentTool)
	return at, ok
}

// childInterrupted: the child stopped for a decision.
type childInterrupted struct {
	runID         string
	interruptions []Interruption
}

func (e *childInterrupted) Error() string {
	return fmt.Sprintf("child run %s is interrupted (%d open)", e.runID, len(e.interruptions))
}

// childStopped: the child's drive stopped without an outcome (the
// process shuts down, a store error): the parent stops the same way and
// its call stays started, to be re-entered.
type childStopped struct {
	runID string
	err   error
}

func (e *childStopped) Error() string { return fmt.Sprintf("child run %s: %v", e.runID, e.err) }

func (e *childStopped) Unwrap() error { return e.err }

// childFailureRecord is stored as the ledger entry's Error of a fail-fast
// child call, so that a resume after a crash still fails the parent.
type childFailureRecord struct {
	Code    string       `json:"code"` // child_failed
	RunID   string       `json:"child_run_id"`
	Status  Status       `json:"status"`
	Policy  ChildFailure `json:"policy"`
	Message string       `json:"message"`
}

// Call implements [tool.Tool]: it starts or resumes the child run.
func (t *agentTool) Call(ctx context.Context, args json.RawMessage) (res tool.Result, err error) {
	pc, ok := ctx.Value(parentKey{}).(*parentCall)
	if !ok {
		return tool.Result{}, fmt.Errorf("actoviq: agent tool %s was called outside a run of this runtime", t.spec.Name)
	}
	if !pc.enter() {
		return tool.Result{}, &childStopped{runID: ChildRunID(pc.runID, pc.callID), err: context.Cause(ctx)}
	}
	defer func() {
		if p := recover(); p != nil {
			pc.leave(tool.Result{}, fmt.Errorf("panic: %v", p))
			panic(p)
		}
		pc.leave(res, err)
	}()
	res, err = t.call(ctx, pc, args)
	if cs := (*childStopped)(nil); errors.As(err, &cs) && deadlineEnded(ctx, cs.err) {
		return t.timedOut(ctx, pc, cs)
	}
	return res, err
}

// deadlineEnded reports whether the call's context ended by a deadline
// (the tool's timeout, the run's deadline, the caller's) and not by a
// stop that leaves the child resumable (Close, a worker's release, a lost
// claim).
func deadlineEnded(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) &&
		!errors.Is(err, ErrClosed) && !errors.Is(err, ErrReleased) && !errors.Is(err, errLostClaim)
}

// timedOut ends a call whose deadline passed while no drive of this call
// held the child (its read, its create, its claim, a wait for another
// holder, a retry's backoff): the child ends cancelled, as its drive's
// stop check ends it when the deadline passes during the drive, and the
// tool's policy applies. Without it the parent's drive stopped with a
// bare context error, the parent left running with nobody driving it.
func (t *agentTool) timedOut(ctx context.Context, pc *parentCall, cs *childStopped) (tool.Result, error) {
	e := pc.d.rt
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(e.ttl, e.commitTO))
	defer cancel()
	why := &RunError{Code: CodeCancelled, Message: fmt.Sprintf("the agent tool's call ended (%v) before the child's drive held it", context.Cause(ctx))}
	cerr := e.cancelOnce(cctx, cs.runID)
	run, err := e.store.RunGet(cctx, &store.RunGetParams{Tenant: e.tenant, ID: cs.runID})
	switch {
	case errors.Is(err, store.ErrNotFound): // never written: nothing started
	case err != nil:
		return tool.Result{}, cs
	case run.Status == store.RunCompleted: // it ended on its own meanwhile
		if cp, err := decodeCheckpoint(run); err == nil {
			return childResult(cp.result(run.ID, run.Status)), nil
		}
		return tool.Result{}, cs
	case !run.Status.Terminal():
		return tool.Result{}, &childStopped{runID: cs.runID, err: fmt.Errorf("%w; the child could not be cancelled: %w", cs.err, cerr)}
	case run.Status != store.RunCancelled:
		if cp, err := decodeCheckpoint(run); err == nil && cp.Error != nil {
			why = cp.Error
		}
	}
	cf := &ChildFailedError{RunID: cs.runID, Status: StatusCancelled, Err: why}
	if run != nil {
		cf.Status = statusOf(run.Status)
	}
	if t.o.Failure == Collect {
		return tool.Result{IsError: true, Content: cf.Error()}, nil
	}
	return tool.Result{}, cf
}

func (t *agentTool) call(ctx context.Context, pc *parentCall, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
	}
	e, parent := pc.d.rt, pc.d
	childID := ChildRunID(pc.runID, pc.callID)
	agent := t.inherit(parent.agent)
	backoff := t.o.Backoff
	for attempt := 1; ; attempt++ {
		res, refused, err := t.drive(ctx, pc, agent, childID, in.Input)
		if refused != "" {
			return tool.Result{Content: refused, IsError: true}, nil
		}
		retry := false
		switch {
		case err != nil:
			if stopsParent(ctx, err) || t.o.Failure != RetrySafe {
				return tool.Result{}, &childStopped{runID: childID, err: err}
			}
			retry = true
		case res.Status == StatusCompleted:
			return childResult(res), nil
		case res.Status == StatusQueued || res.Status == StatusRunning:
			// The child's drive was handed back (a worker's release)
			// without an outcome: the parent stops too, its call started,
			// and re-enters the child when it goes on.
			return tool.Result{}, &childStopped{runID: childID, err: fmt.Errorf("its drive stopped with the child %s: %w", res.Status, context.Cause(ctx))}
		case res.Status == StatusInterrupted:
			if t.o.Failure == RetrySafe && retriable(res.Interruptions) && attempt < t.o.MaxAttempts {
				if err := t.reexecute(ctx, e, childID, res.Interruptions); err != nil {
					return tool.Result{}, &childStopped{runID: childID, err: err}
				}
				retry = true
				break
			}
			return tool.Result{}, &childInterrupted{runID: childID, interruptions: res.Interruptions}
		default: // failed, cancelled: never a success
			if t.o.Failure == Collect {
				return tool.Result{IsError: true, Content: (&ChildFailedError{RunID: childID, Status: res.Status, Err: res.Error}).Error()}, nil
			}
			return tool.Result{}, &ChildFailedError{RunID: childID, Status: res.Status, Err: res.Error}
		}
		if retry && attempt >= t.o.MaxAttempts {
			return tool.Result{}, &ChildFailedError{RunID: childID, Status: StatusFailed,
				Err: &RunError{Code: CodeRetriesExhausted, Message: fmt.Sprintf("%d attempts; last: %v", attempt, err)}}
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return tool.Result{}, &childStopped{runID: childID, err: context.Cause(ctx)}
		case <-timer.C:
		}
		backoff *= 2
	}
}

// stopsParent reports whether a child's drive error is the parent's
// stop too: its context ended (cancellation, Close, a worker's release) or
// the child's claim is another's.
func stopsParent(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrReleased) || errors.Is(err, errLostClaim) ||
		errors.Is(err, ErrDigestMismatch)
}

// retriable: interruptions a retry-safe child may get past on its own.
func retriable(ins []Interruption) bool {
	for _, in := range ins {
		if in.Kind != InterruptRecovery && in.Kind != InterruptProvider {
			return false
		}
	}
	return len(ins) > 0
}

// reexecute records the retry-safe policy's decision to run the child's
// started reads and idempotent writes again, with their keys.
func (t *agentTool) reexecute(ctx context.Context, rt *Runtime, childID string, ins []Interruption) error {
	var ds []Decision
	for _, in := range ins {
		if in.Kind == InterruptRecovery && in.RunID == "" {
			ds = append(ds, Decision{CallID: in.CallID, Kind: DecideReexecute, By: "retry-safe:" + t.spec.Name,
				Reason: "the child's tools are all read or idempotent-write: a new attempt with the same key is safe", byRuntime: true})
		}
	}
	if len(ds) == 0 {
		return nil
	}
	return rt.decide(ctx, childID, ds)
}

func childResult(res *RunResult) tool.Result {
	var text []string
	var data json.RawMessage
	for _, it := range res.Output {
		switch it.Type {
		case item.TypeText:
			text = append(text, it.Text)
		case item.TypeStructured:
			data = it.Structured
			text = append(text, string(it.Structured))
		}
	}
	return tool.Result{Content: strings.Join(text, "\n"), Data: data}
}

// inherit narrows the child's policies by its parent's: a call that needs
// approval in the parent needs it in the child, and the child re-runs a
// started call on its own only if both allow it.
func (t *agentTool) inherit(parent *AgentSpec) *AgentSpec {
	c := *t.child
	if parent == nil {
		return &c
	}
	effects := append([]tool.Effect(nil), c.Approval.Effects...)
	for _, pe := range parent.Approval.Effects {
		found := false
		for _, ce := range effects {
			found = found || ce == pe
		}
		if !found {
			effects = append(effects, pe)
		}
	}
	c.Approval.Effects = effects
	if c.Approval.Policy == nil && parent.Approval.Policy != nil {
		c.Approval.Policy, c.Approval.Version = parent.Approval.Policy, "inherited:"+parent.Approval.Version
	}
	c.Recovery.RerunReads = c.Recovery.RerunReads && parent.Recovery.RerunReads
	c.Recovery.RerunIdempotentWrites = c.Recovery.RerunIdempotentWrites && parent.Recovery.RerunIdempotentWrites
	return &c
}

// drive starts the child run, or resumes it, and drives it to a stop. A
// non-empty refused says why no child was started (a budget).
func (t *agentTool) drive(ctx context.Context, pc *parentCall, agent *AgentSpec, childID, input string) (*RunResult, string, error) {
	e, parent := pc.d.rt, pc.d
	tree := childInfo{Root: pc.runID, Mode: "foreground", Tool: t.spec.Name, CallID: pc.callID, Budget: t.o.Budget, Failure: t.o.Failure}
	if pi := pc.tree; pi != nil {
		tree.Root, tree.Depth, tree.Budget = pi.Root, pi.Depth, pi.Budget.narrow(t.o.Budget)
	}
	tree.Depth++
	takeovers := 0
	for {
		run, err := e.store.RunGet(ctx, &store.RunGetParams{Tenant: e.tenant, ID: childID})
		switch {
		case errors.Is(err, store.ErrNotFound):
			if why, err := e.budgetRefusal(ctx, &tree, childID); err != nil || why != "" {
				return nil, why, err
			}
			if err := e.createChild(ctx, pc, agent, childID, input, &tree); err != nil && !errors.Is(err, store.ErrExists) {
				if tree.Budget.MaxChildren > 0 {
					e.freeChildSlot(ctx, tree.Root, tree.Budget.MaxChildren, childID)
				}
				return nil, "", err
			}
			continue
		case err != nil:
			return nil, "", fmt.Errorf("actoviq: child run %s: %w", childID, err)
		case run.ParentID != pc.runID:
			return nil, "", fmt.Errorf("actoviq: run %s exists and is not a child of %s", childID, pc.runID)
		}
		// A run with this id under this parent that is not this call's
		// child (a background child Spawn wrote under the id) is never
		// taken as the call's answer: two callers would share one child.
		if cp, err := decodeCheckpoint(run); err == nil {
			if ci := cp.Child; ci == nil || ci.Mode == "background" || (ci.CallID != "" && ci.CallID != pc.callID) {
				return nil, "", fmt.Errorf("actoviq: run %s exists and is not the child of call %s of %s", childID, pc.callID, pc.runID)
			}
		}
		left, why, err := e.budgetLeft(ctx, &tree)
		if err != nil {
			return nil, "", err
		}
		if why != "" {
			left = &budgetLeft{} // an existing child: spent, it fails with code budget when it would go on
		}
		// The parent drive's own sinks (a Stream, a Resume with sinks) see the
		// child's events too; each carries the child's run id and its parent's.
		res, err := e.driveChildRun(withBudget(ctx, left), agent, childID, parent.sinks[len(e.sinks):])
		var held *RunHeldError
		lost := ctx.Err() == nil && (errors.Is(err, errLostClaim) || errors.Is(err, store.ErrFenced))
		if errors.As(err, &held) || lost && takeovers < maxChildTakeovers {
			// Another drive holds the child (a worker adopted it when this
			// parent's process died, or it is still stopping), or took it
			// over from this call's drive (whose lease expired: a worker
			// adopted it, another process resumed it): wait for it, then
			// go on from where it left the child. This drive holds its
			// own claim still; stopping it for the child's would leave it
			// running with nobody driving it.
			if lost {
				takeovers++
			}
			if err := e.waitUnheld(ctx, childID); err != nil {
				return nil, "", err
			}
			continue
		}
		return res, "", err
	}
}

// maxChildTakeovers bounds how often one call waits for a child that
// another drive took over from it.
const maxChildTakeovers = 5

// createChild writes the child run: running, deadline no later than its
// parent's, its place in the tree in its checkpoint.
func (rt *Runtime) createChild(ctx context.Context, parent *parentCall, a *AgentSpec, childID, input string, tree *childInfo) error {
	if err := a.Validate(); err != nil {
		return err
	}
	cp := &checkpoint{V: 1, TraceID: parent.traceID, PolicyVersion: a.Approval.version(), Agent: recordAgent(a), Child: tree,
		Items: []item.Item{item.UserText(input)}}
	head, log, err := storedForm(cp)
	if err != nil {
		return err
	}
	run := &store.Run{Tenant: rt.tenant, ID: childID, ParentID: parent.runID, AgentID: a.ID, AgentDigest: a.Digest(),
		Status: store.RunRunning, Checkpoint: head, Log: log, Deadline: parent.deadline}
	if a.Limits.RunTimeout > 0 {
		if dl := rt.clock().Add(a.Limits.RunTimeout); run.Deadline.IsZero() || dl.Before(run.Deadline) {
			run.Deadline = dl
		}
	}
	_, err = rt.store.RunCreate(ctx, &store.RunCreateParams{Run: run})
	return err
}

// driveChildRun drives an existing child run as Resume does, starting it
// when it never ran.
func (rt *Runtime) driveChildRun(ctx context.Context, a *AgentSpec, runID string, sinks []EventSink) (*RunResult, error) {
	d, err := rt.newDrive(a, sinks)
	if err != nil {
		return nil, err
	}
	if err := d.load(ctx, runID); err != nil {
		return nil, err
	}
	if d.run.Status.Terminal() {
		return d.cp.result(runID, d.run.Status), nil
	}
	if err := d.checkAgent(nil); err != nil {
		return nil, err
	}
	start := EvRunResumed
	if d.run.EventSeq == 0 {
		start = EvRunStarted
	}
	return rt.claimAndDrive(ctx, d, start, nil)
}

// waitUnheld waits until nobody holds the run's claim.
func (rt *Runtime) waitUnheld(ctx context.Context, runID string) error {
	delay := 20 * time.Millisecond
	for {
		h, err := rt.runHolder(ctx, runID)
		if err != nil {
			return err
		}
		if h == nil || !h.Live {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// treeUsage sums turns and tokens over a tree, and counts its children.
type treeUsage struct {
	turns    int
	tokens   int64
	children int
}

func (rt *Runtime) usageOf(ctx context.Context, root string) (treeUsage, error) {
	var u treeUsage
	queue := []string{root}
	for first := true; len(queue) > 0; first = false {
		id := queue[0]
		queue = queue[1:]
		run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: id})
		if err != nil {
			return u, fmt.Errorf("actoviq: budget of tree %s: %w", root, err)
		}
		if !first {
			u.children++
		}
		if cp, err := decodeCheckpoint(run); err == nil {
			u.turns += cp.Turn
			u.tokens += cp.Usage.InputTokens + cp.Usage.OutputTokens
		}
		kids, err := rt.store.RunList(ctx, &store.RunListParams{Tenant: rt.tenant, ParentID: id, Summary: true})
		if err != nil && !errors.Is(err, store.ErrData) {
			return u, fmt.Errorf("actoviq: budget of tree %s: %w", root, err)
		}
		for _, k := range kids {
			queue = append(queue, k.ID)
		}
	}
	return u, nil
}

// budgetRefusal says why a new child may not start (depth, count, spent
// budget); empty means it may.
//
// newChild is the id of the child about to be written: it takes one of
// the tree's MaxChildren places (see reserveChildSlot).
func (rt *Runtime) budgetRefusal(ctx context.Context, tree *childInfo, newChild string) (string, error) {
	maxDepth := tree.Budget.MaxDepth
	if maxDepth == 0 {
		maxDepth = 8
	}
	if tree.Depth > maxDepth {
		return fmt.Sprintf("This agent was not started: child runs may nest %d deep and this one would be at depth %d.", maxDepth, tree.Depth), nil
	}
	_, why, err := rt.budgetLeftNew(ctx, tree, true)
	if err != nil || why != "" || tree.Budget.MaxChildren == 0 {
		return why, err
	}
	ok, err := rt.reserveChildSlot(ctx, tree.Root, tree.Budget.MaxChildren, newChild)
	if err != nil || ok != nil {
		return "", err
	}
	return fmt.Sprintf("This agent was not started: the run tree already has %d child runs, its budget.", tree.Budget.MaxChildren), nil
}

// childSlotTTL: a place in a tree's child budget is kept for good (a
// child counts whether or not it ended).
const childSlotTTL = 100 * 365 * 24 * time.Hour

// reserveChildSlot takes one of the MaxChildren places of a run tree for
// a new child, atomically across processes: place n is the claim
// "children:<root>:<n>", held by the child for good. Counting the
// children listed in the store cannot do that: two Spawns that count
// at once both see room for one more. A child that already holds a
// place (a retried Spawn with the same id) keeps it. It returns the place
// taken (nil: none left).
func (rt *Runtime) reserveChildSlot(ctx context.Context, root string, max int, childID string) (*store.Fence, error) {
	for n := range max {
		c, err := rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: store.ChildPlaceKey(root, n),
			Holder: childSlotHolder(childID), TTL: childSlotTTL})
		if err == nil {
			taken := &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}
			return rt.ownChildSlot(ctx, root, max, n, taken)
		}
		if !errors.Is(err, store.ErrClaimHeld) {
			return nil, fmt.Errorf("actoviq: child budget of tree %s: %w", root, err)
		}
	}
	return nil, nil
}

// ownChildSlot keeps a child to one place: a place given back by a Spawn
// whose write failed leaves a hole before the places others hold, and a
// retried Spawn of a child that holds a later place took the hole above
// as a second one. When the child holds a place after n, the place n just
// taken is given back and the child's own is returned.
func (rt *Runtime) ownChildSlot(ctx context.Context, root string, max, n int, taken *store.Fence) (*store.Fence, error) {
	now := rt.clock()
	for from := n + 1; from < max; from += store.MaxLedgerRuns {
		var keys []string
		for m := from; m < max && m < from+store.MaxLedgerRuns; m++ {
			keys = append(keys, store.ChildPlaceKey(root, m))
		}
		cs, err := rt.store.ClaimList(ctx, &store.ClaimListParams{Tenant: rt.tenant, Keys: keys})
		if err != nil {
			return nil, fmt.Errorf("actoviq: child budget of tree %s: %w", root, err)
		}
		for _, c := range cs {
			if c.Holder != taken.Holder || !c.ExpiresAt.After(now) {
				continue
			}
			if err := rt.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: rt.tenant, Fence: *taken}); err != nil {
				return nil, fmt.Errorf("actoviq: child budget of tree %s: %w", root, err)
			}
			return &store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}, nil
		}
	}
	return taken, nil
}

func childSlotHolder(childID string) string { return "child " + childID }

// freeChildSlot gives back the place a child took when its write failed
// and no run with its id exists (a retried Spawn whose child was written
// keeps its place): a Spawn that writes no child spends no place.
func (rt *Runtime) freeChildSlot(ctx context.Context, root string, max int, childID string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rt.commitTO)
	defer cancel()
	if _, err := rt.store.RunGet(rctx, &store.RunGetParams{Tenant: rt.tenant, ID: childID}); !errors.Is(err, store.ErrNotFound) {
		return
	}
	for n := range max {
		c, err := rt.store.ClaimGet(rctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: store.ChildPlaceKey(root, n)})
		if err == nil && c.Holder == childSlotHolder(childID) {
			// Removed, not kept expired: when a prune removed the tree
			// after this Spawn read it, the place was written anew, and
			// the prune is over.
			_ = rt.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: rt.tenant, Remove: true,
				Fence: store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}})
			return
		}
	}
}

func (rt *Runtime) budgetLeft(ctx context.Context, tree *childInfo) (*budgetLeft, string, error) {
	return rt.budgetLeftNew(ctx, tree, false)
}

func (rt *Runtime) budgetLeftNew(ctx context.Context, tree *childInfo, isNew bool) (*budgetLeft, string, error) {
	b := tree.Budget
	if b.MaxTurns == 0 && b.MaxTokens == 0 && b.MaxChildren == 0 {
		return nil, "", nil
	}
	u, err := rt.usageOf(ctx, tree.Root)
	if err != nil {
		return nil, "", err
	}
	if isNew && b.MaxChildren > 0 && u.children >= b.MaxChildren {
		return nil, fmt.Sprintf("This agent was not started: the run tree already has %d child runs, its budget.", u.children), nil
	}
	left := &budgetLeft{turns: -1, tokens: -1}
	if b.MaxTurns > 0 {
		left.turns = b.MaxTurns - u.turns
	}
	if b.MaxTokens > 0 {
		left.tokens = b.MaxTokens - u.tokens
	}
	if left.turns == 0 || left.turns < -1 || left.tokens == 0 || left.tokens < -1 {
		return nil, fmt.Sprintf("This agent was not started: the run tree spent its budget (%d turns, %d tokens used).", u.turns, u.tokens), nil
	}
	return left, "", nil
}

// budgetLeft is what a child drive may still spend (-1: no bound),
// counted from the drive's first check.
type budgetLeft struct {
	turns  int
	tokens int64

	started     bool
	startTurn   int
	startTokens int64
}

type budgetKey struct{}

// withBudget sets the child drive's budget; nil (no bound) also hides the
// budget of the drive that runs the agent tool.
func withBudget(ctx context.Context, b *budgetLeft) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// overBudget ends a child run failed when its tree's budget is spent.
func (d *drive) overBudget(ctx context.Context) (*RunResult, error, bool) {
	b, _ := ctx.Value(budgetKey{}).(*budgetLeft)
	if b == nil || d.cp.Child == nil {
		return nil, nil, false
	}
	tokens := d.cp.Usage.InputTokens + d.cp.Usage.OutputTokens
	if !b.started {
		b.started, b.startTurn, b.startTokens = true, d.cp.Turn, tokens
	}
	if b.turns >= 0 && d.cp.Turn-b.startTurn >= b.turns || b.tokens >= 0 && tokens-b.startTokens >= b.tokens {
		d.cp.Error = &RunError{Code: CodeBudget, Message: fmt.Sprintf("the run tree of %s spent its budget (%+v)", d.cp.Child.Root, d.cp.Child.Budget)}
		res, err := d.end(ctx, store.RunFailed, EvRunFailed)
		return res, err, true
	}
	return nil, nil, false
}

// childOutcome records what an agent tool's child run came to, when it
// is not a plain result.
func (d *drive) childOutcome(ctx context.Context, en *store.LedgerEntry, err error) (*Interruption, error, bool) {
	if err == nil {
		return nil, nil, false
	}
	var ci *childInterrupted
	var cs *childStopped
	var cf *ChildFailedError
	switch {
	case errors.As(err, &ci):
		// The call stays started: resuming the parent re-enters the child.
		in := d.interruption(InterruptApproval, d.entry(en.CallID), "the child run "+ci.runID+" is interrupted", nil)
		in.RunID = ci.runID
		for _, n := range ci.interruptions {
			if n.RunID == "" {
				n.RunID = ci.runID
			}
			in.nested = append(in.nested, n)
		}
		return &in, nil, true
	case errors.As(err, &cs):
		if ctx.Err() != nil {
			// The parent's drive is stopping too (Close, a release, a
			// cancellation): its stop checks say how; the call stays
			// started, and a later drive re-enters the child.
			return nil, nil, true
		}
		return nil, fmt.Errorf("actoviq: run %s call %s: %w", d.run.ID, en.CallID, cs), true
	case errors.As(err, &cf):
		at, _ := d.agentToolOf(en.Tool)
		policy := FailFast
		if at != nil {
			policy = at.o.Failure
		}
		rec := childFailureRecord{Code: CodeChildFailed, RunID: cf.RunID, Status: cf.Status, Policy: policy, Message: cf.Error()}
		return nil, d.commitResult(ctx, en, ledger.Commit, EvToolCommitted, tool.Result{Content: cf.Error(), IsError: true},
			func(n *store.LedgerEntry) { n.Error = mustJSON(rec) }), true
	}
	return nil, nil, false
}

// reenterChild: a started (or unknown) call of an agent tool is run
// again, which resumes its child run from the child's own checkpoint. It
// keeps its key; the attempt it had started was allowed to start, so the
// new attempt does not ask for approval again.
func (d *drive) reenterChild(ctx context.Context, en *store.LedgerEntry) (bool, error) {
	if _, ok := d.agentToolOf(en.Tool); !ok || !ledger.MayHaveRun(en.State) {
		return false, nil
	}
	next := cloneEntry(en)
	next.State = store.LedgerPrepared
	now := d.rt.clock()
	reason := "the call's child run " + ChildRunID(d.run.ID, en.CallID) + " keeps its own ledger: it resumes from its checkpoint"
	next.Resolution = &store.DecisionRecord{Kind: "resume-child", By: "runtime", At: now, Reason: reason}
	next.Approval = &store.DecisionRecord{Kind: string(DecideReexecute), By: "runtime", At: now, Reason: reason,
		ArgsDigest: en.ArgsDigest, PolicyVersion: d.pv, Attempt: en.Attempt + 1}
	return true, d.transition(ctx, en, next, ledger.Reexecute, EvToolReexecute)
}

// childFailFast ends the parent failed when a fail-fast child call of the
// settled turn failed. The failure is in the call's ledger entry, so a
// crash between the commit and this write fails the parent on resume too.
func (d *drive) childFailFast(ctx context.Context) (*RunResult, error, bool) {
	for _, id := range d.cp.Pending {
		en := d.ledger[id]
		if en == nil || len(en.Error) == 0 {
			continue
		}
		var rec childFailureRecord
		if json.Unmarshal(en.Error, &rec) != nil || rec.Code != "child_failed" || rec.Policy == Collect {
			continue
		}
		d.fold() // the error result is part of the record
		// This drive is cancelled, or past the run's deadline: the child
		// ended cancelled with it (its context derives from this drive's),
		// or failed before the stop reached this step. The caller's
		// decision, or the deadline, ends the run (cancelled), not the
		// child's policy (failed).
		if d.pastDeadline() || d.cancelled(ctx) {
			if res, err, stop := d.stopCheck(ctx); stop {
				return res, err, true
			}
		}
		d.cp.Error = &RunError{Code: CodeChildFailed, Message: fmt.Sprintf("call %s: %s (policy %s)", en.CallID, rec.Message, rec.Policy)}
		res, err := d.end(ctx, store.RunFailed, EvRunFailed)
		return res, err, true
	}
	return nil, nil, false
}

// flattenChild puts a child's interruptions in the place of the parent's
// call that waits for them.
func flattenChild(ins []Interruption) []Interruption {
	var out []Interruption
	for _, in := range ins {
		if in.nested != nil {
			out = append(out, in.nested...)
			continue
		}
		out = append(out, in)
	}
	return out
}

// routeChildDecisions records, on their child runs, the decisions given to
// a parent for its children's calls, and returns the others.
func (rt *Runtime) routeChildDecisions(ctx context.Context, runID string, decisions []Decision) ([]Decision, error) {
	rest, kids, err := rt.splitChildDecisions(ctx, runID, decisions)
	if err != nil {
		return nil, err
	}
	return rest, kids.record(ctx, rt)
}

// childDecisions are decisions given to a parent for its children's calls,
// checked against the children's ledgers, not recorded yet.
type childDecisions struct {
	order []string
	by    map[string][]Decision
}

// record records them on the children, in order (a nil one records
// nothing). Resume and Requeue call it once the parent is stored running
// or queued: a process that dies after the children's decisions and
// before the parent's write would leave the parent interrupted with its
// children's questions answered and nothing open, which no worker claims.
func (k *childDecisions) record(ctx context.Context, rt *Runtime) error {
	if k == nil {
		return nil
	}
	for _, child := range k.order {
		if err := rt.Decide(ctx, child, k.by[child]...); err != nil {
			return fmt.Errorf("actoviq: decisions for child run %s: %w", child, err)
		}
	}
	return nil
}

// check checks each child's decisions against its ledger as it is now, as
// Decide does before it takes the claim, so that a decision that does not
// fit is refused before the parent is written.
func (k *childDecisions) check(ctx context.Context, rt *Runtime) error {
	if k == nil {
		return nil
	}
	for _, child := range k.order {
		d := rt.bareDrive()
		if err := d.load(ctx, child); err != nil {
			return err
		}
		if d.run.Status.Terminal() {
			if err := d.checkFinishedDecisions(k.by[child]); err != nil {
				return fmt.Errorf("actoviq: decisions for child run %s: %w", child, err)
			}
		}
		if err := d.checkDecisions(k.by[child]); err != nil {
			return fmt.Errorf("actoviq: decisions for child run %s: %w", child, err)
		}
	}
	return nil
}

// splitChildDecisions sorts the decisions given to a parent into its own
// (returned) and those for its children's calls (by child run).
func (rt *Runtime) splitChildDecisions(ctx context.Context, runID string, decisions []Decision) ([]Decision, *childDecisions, error) {
	if len(decisions) == 0 {
		return decisions, nil, nil
	}
	var open []Interruption
	var own map[string]bool
	load := func() error {
		if own != nil {
			return nil
		}
		own = map[string]bool{}
		run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: runID})
		if err != nil {
			return nil // the parent's own checks report it
		}
		if cp, err := decodeCheckpoint(run); err == nil {
			open = cp.Interruptions
		}
		entries, err := rt.store.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.tenant, RunID: runID})
		if err != nil {
			return fmt.Errorf("actoviq: ledger of %s: %w", runID, err)
		}
		for _, en := range entries {
			own[en.CallID] = true
		}
		return nil
	}
	var rest []Decision
	byChild := map[string][]Decision{}
	var order []string
	for _, dec := range decisions {
		target := dec.RunID
		if target == "" {
			if err := load(); err != nil {
				return nil, nil, err
			}
			if !own[dec.CallID] {
				for _, in := range open {
					if in.RunID != "" && in.CallID == dec.CallID {
						if target != "" && target != in.RunID {
							return nil, nil, &DecisionError{CallID: dec.CallID, Reason: fmt.Sprintf(
								"child runs %s and %s both wait on a call with this id; name the run (Decision.RunID)", target, in.RunID)}
						}
						target = in.RunID
					}
				}
			}
		}
		if target == "" || target == runID {
			dec.RunID = ""
			rest = append(rest, dec)
			continue
		}
		dec.RunID = ""
		if _, seen := byChild[target]; !seen {
			order = append(order, target)
		}
		byChild[target] = append(byChild[target], dec)
	}
	if len(order) == 0 {
		return rest, nil, nil
	}
	return rest, &childDecisions{order: order, by: byChild}, nil
}

// closeChildren applies the parent-close policy to a cancelled run's
// children that have not ended, each cancelled as Runtime.Cancel does
// (waiting, bounded by ctx, for a drive in another process). A child it
// misses (written after the list was read, or its canceller died) is
// cancelled by its first drive (parentClosed) or by Spawn's re-read.
func (rt *Runtime) closeChildren(ctx context.Context, parentID string) {
	kids, _ := rt.store.RunList(ctx, &store.RunListParams{Tenant: rt.tenant, ParentID: parentID})
	for _, k := range kids {
		if k.Status.Terminal() {
			continue
		}
		cp, err := decodeCheckpoint(k)
		if err != nil || cp.Child != nil && cp.Child.ParentClose == ParentCloseAbandon {
			continue
		}
		_ = rt.Cancel(ctx, k.ID)
	}
}

// parentClosed ends a child run cancelled, before its drive does anything,
// when its parent closed it: the parent ended cancelled (a background
// child with parent-close cancel, or any foreground child), or an
// operator settled the parent's call that a foreground child answers.
// This catches a child written after its parent's parent-close listed
// the children, and a child whose canceller stopped half-way.
func (d *drive) parentClosed(ctx context.Context) (*RunResult, error, bool) {
	ci := d.cp.Child
	if ci == nil || d.run.ParentID == "" || ci.Mode == "background" && ci.ParentClose == ParentCloseAbandon {
		return nil, nil, false
	}
	parent, err := d.rt.store.RunGet(ctx, &store.RunGetParams{Tenant: d.rt.tenant, ID: d.run.ParentID})
	if err != nil {
		return nil, nil, false
	}
	why := ""
	switch {
	case parent.Status == store.RunCancelled:
		why = fmt.Sprintf("its parent run %s was cancelled (parent-close: cancel)", parent.ID)
	case ci.Mode == "foreground" && ci.CallID != "":
		en, err := d.rt.store.LedgerGet(ctx, &store.LedgerGetParams{Tenant: d.rt.tenant, RunID: parent.ID, CallID: ci.CallID})
		if err == nil && en.State == store.LedgerCommitted {
			why = fmt.Sprintf("its parent run %s recorded the outcome of call %s without it (settled by an operator)", parent.ID, ci.CallID)
		}
	}
	if why == "" {
		return nil, nil, false
	}
	d.cp.Error = &RunError{Code: CodeCancelled, Message: why}
	res, err := d.end(ctx, store.RunCancelled, EvRunCancelled)
	return res, err, true
}

// closeSettledChildren cancels the foreground children of calls an
// operator settled (committed or failed) on their parent: the parent's
// call has its outcome, so nobody will read the child's, and the child
// must not go on on its own.
func (rt *Runtime) closeSettledChildren(ctx context.Context, parentID string, decisions []Decision) {
	for _, dec := range decisions {
		if dec.Kind != DecideCommitted && dec.Kind != DecideFailed {
			continue
		}
		childID := ChildRunID(parentID, dec.CallID)
		run, err := rt.store.RunGet(ctx, &store.RunGetParams{Tenant: rt.tenant, ID: childID})
		if err != nil || run.ParentID != parentID || run.Status.Terminal() {
			continue
		}
		_ = rt.cancelOnce(ctx, childID)
	}
}
