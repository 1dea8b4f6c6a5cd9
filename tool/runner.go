package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/internal/toolrun"
)

// DefaultTimeout bounds a call whose spec and runner set no timeout.
const DefaultTimeout = 5 * time.Minute

// RunnerConfig configures a [Runner]. A nil *RunnerConfig means all
// defaults.
type RunnerConfig struct {
	// Policy decides whether a call may run; nil means [DefaultPolicy].
	Policy Policy
	// DefaultTimeout bounds a call whose Spec.Timeout is zero. Zero means
	// the package's [DefaultTimeout]; a negative value means no bound
	// other than the caller's context.
	DefaultTimeout time.Duration
}

// Runner executes tool calls: one call, one invocation, never a retry.
// It is safe for concurrent use.
type Runner struct {
	policy  Policy
	timeout time.Duration
	tools   map[string]*entry
	order   []string
}

type entry struct {
	tool Tool
	spec Spec
	in   *schema
	out  *schema // nil: output not validated
}

// NewRunner builds a runner over tools. It validates every spec and
// compiles its schemas once; an invalid spec or a duplicate name is an
// error.
func NewRunner(tools []Tool, cfg *RunnerConfig) (*Runner, error) {
	var c RunnerConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Policy == nil {
		c.Policy = DefaultPolicy()
	}
	switch {
	case c.DefaultTimeout == 0:
		c.DefaultTimeout = DefaultTimeout
	case c.DefaultTimeout < 0:
		c.DefaultTimeout = 0
	}
	r := &Runner{policy: c.Policy, timeout: c.DefaultTimeout, tools: make(map[string]*entry, len(tools))}
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("tool: NewRunner: tools[%d] is nil", i)
		}
		if ie, ok := t.(interface{ initErr() error }); ok && ie.initErr() != nil {
			return nil, ie.initErr()
		}
		spec := t.Spec()
		in, out, err := spec.compile()
		if err != nil {
			return nil, err
		}
		if _, dup := r.tools[spec.Name]; dup {
			return nil, fmt.Errorf("tool: NewRunner: duplicate tool name %q", spec.Name)
		}
		r.tools[spec.Name] = &entry{tool: t, spec: spec, in: in, out: out}
		r.order = append(r.order, spec.Name)
	}
	return r, nil
}

// Lookup returns the tool with the given name.
func (r *Runner) Lookup(name string) (Tool, bool) {
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Specs returns the specs of the runner's tools, in the order given to
// [NewRunner].
func (r *Runner) Specs() []Spec {
	specs := make([]Spec, 0, len(r.order))
	for _, n := range r.order {
		specs = append(specs, r.tools[n].spec)
	}
	return specs
}

// Call is one tool call to run.
type Call struct {
	// Name is the tool to run.
	Name string
	// Args is the arguments object; empty means {}.
	Args json.RawMessage
	// Key is the call's idempotency key, handed to the tool through the
	// context ([IdempotencyKey]). The runtime sets it to <runID>:<callID>.
	Key string
	// Attempt is the attempt number, starting at 1; zero means 1.
	Attempt int
	// Approved says a person approved this call, so a policy's [Ask] lets
	// it run.
	Approved bool

	// checked and checkedArgs are set by a check that validated Args
	// against checked's input schema: [Runner.Run] after [Runner.Check] on
	// the same Call does not validate the same bytes again.
	checked     *entry
	checkedArgs []byte
}

// checkedBy reports whether c's Args are the very bytes a check validated
// against e's input schema.
func (c *Call) checkedBy(e *entry) bool {
	return c.checked == e && len(c.Args) > 0 && len(c.checkedArgs) == len(c.Args) && &c.checkedArgs[0] == &c.Args[0]
}

// Run executes call once. It never retries. The steps, in order:
//
//  1. resolve the tool ([KindNotFound]);
//  2. validate the arguments against the input schema, reporting every
//     violation ([KindValidation]);
//  3. ask the policy: Deny is [KindDenied], Ask without call.Approved is
//     [KindApprovalRequired];
//  4. refuse to start when ctx is already cancelled or past its deadline
//     ([KindCancelled], [KindTimeout]; the tool is not invoked);
//  5. invoke the tool once, under the call's deadline (Spec.Timeout, else
//     the runner's default), with the key and attempt in the context;
//  6. validate Result.Data against the output schema ([KindValidation]
//     with Started set; the result is returned too, because the tool ran).
//
// If the deadline passes or ctx is cancelled while the tool runs, Run
// returns at once with [KindTimeout] or [KindCancelled] and OutcomeUnknown
// set; it does not wait for a tool that ignores its context, so that tool's
// goroutine may outlive the call. A tool error wrapping [ErrOutcomeUnknown],
// [context.DeadlineExceeded] or [context.Canceled] (the tool gave up
// waiting on its own), a panic, and a tool that ends its goroutine
// (runtime.Goexit, a test's t.FailNow) before it returns, are
// [KindExecution] with OutcomeUnknown set; any other tool error is
// [KindExecution] with the outcome known.
func (r *Runner) Run(ctx context.Context, call *Call) (Result, error) {
	e, args, err := r.check(ctx, call)
	if err != nil {
		return Result{}, err
	}
	name := e.spec.Name
	// 4. Never start with an expired deadline or a cancelled context.
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Kind: ctxKind(err), Tool: name, Err: err}
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= 0 {
		return Result{}, &Error{Kind: KindTimeout, Tool: name, Err: context.DeadlineExceeded}
	}

	// 5. Invoke the tool one time; the runner never retries.
	res, err := r.invoke(ctx, e, call, args)
	if err != nil {
		return Result{}, err
	}

	// 6. Validate output.
	if e.out != nil && !res.IsError {
		var v []string
		if len(res.Data) == 0 {
			v = []string{"/: missing structured output (Data) required by the output schema"}
		} else {
			v = e.out.validate(res.Data)
		}
		if v != nil {
			return res, &Error{Kind: KindValidation, Tool: name, Started: true, Violations: v,
				Err: errors.New("output does not match the output schema")}
		}
	}
	return res, nil
}

// Check runs the steps of [Runner.Run] that come before invocation:
// resolve, validate input and ask the policy. It returns the tool's spec, or
// the error Run would return. The engine calls it before it records that a
// call started, so that a call that would be refused is never started.
//
// A later Run of the same *Call whose Args still hold the same bytes (the
// same slice, not modified in place) does not validate them again; it
// asks the policy again.
func (r *Runner) Check(ctx context.Context, call *Call) (Spec, error) {
	e, _, err := r.check(ctx, call)
	if err != nil {
		return Spec{}, err
	}
	return e.spec, nil
}

func (r *Runner) check(ctx context.Context, call *Call) (*entry, json.RawMessage, error) {
	if call == nil {
		return nil, nil, &Error{Kind: KindNotFound, Err: errors.New("nil call")}
	}
	// 1. Resolve.
	e, ok := r.tools[call.Name]
	if !ok {
		return nil, nil, &Error{Kind: KindNotFound, Tool: call.Name}
	}
	name := e.spec.Name
	// 2. Validate input.
	args := call.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	t := bytes.TrimSpace(args)
	if t[0] != '{' {
		return nil, nil, &Error{Kind: KindValidation, Tool: name, Violations: []string{"/: arguments must be a JSON object"}}
	}
	if !call.checkedBy(e) && !(e.in.emptyOK && string(t) == "{}") {
		if v := e.in.validate(args); v != nil {
			return nil, nil, &Error{Kind: KindValidation, Tool: name, Violations: v}
		}
		call.checked, call.checkedArgs = e, call.Args
	}
	// 3. Policy.
	verdict, perr := r.decide(ctx, e.spec, args)
	if perr != nil {
		// A policy that panics has not allowed anything: fail closed.
		return nil, nil, &Error{Kind: KindDenied, Tool: name, Err: perr}
	}
	switch verdict.Permission {
	case Allow:
	case Ask:
		if !call.Approved {
			return nil, nil, &Error{Kind: KindApprovalRequired, Tool: name, Err: reasonErr(verdict.Reason)}
		}
	default: // Deny, and anything unrecognised: fail closed.
		return nil, nil, &Error{Kind: KindDenied, Tool: name, Err: reasonErr(verdict.Reason)}
	}
	return e, args, nil
}

// decide asks the policy, recovering a panic in it as an error.
func (r *Runner) decide(ctx context.Context, spec Spec, args json.RawMessage) (v Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the approval policy panicked: %v", p)
		}
	}()
	return r.policy.Decide(ctx, spec, args), nil
}

func reasonErr(reason string) error {
	if reason == "" {
		return nil
	}
	return errors.New(reason)
}

func ctxKind(err error) Kind {
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return KindCancelled
}

type outcome struct {
	res        Result
	err        error
	panicked   any
	notStarted error // the call's context had ended before the tool was called
}

func (r *Runner) invoke(ctx context.Context, e *entry, call *Call, args json.RawMessage) (Result, error) {
	timeout := e.spec.Timeout
	if timeout == 0 {
		timeout = r.timeout
	}
	attempt := call.Attempt
	if attempt < 1 {
		attempt = 1
	}
	// As WithAttempt(WithIdempotencyKey(WithTimeout(ctx, timeout)...)),
	// made lazily (callCtx).
	callCtx := newCallCtx(ctx, timeout, call.Key, attempt)
	defer callCtx.cancel()

	if h := toolrun.From(ctx); h != nil {
		return r.invokeHere(h, e, callCtx, args)
	}

	// Buffered, so a tool that finishes after we gave up does not block.
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { done <- o }() // also when the tool ends the goroutine
		if err := callCtx.ended(); err != nil {
			// Scheduled after the runner gave up on the call (its deadline
			// passed, its parent ended): the tool is not started with its
			// context already ended (docs/design.md#effects-and-keys).
			o.notStarted = err
			return
		}
		callTool(&o, e.tool, callCtx, args)
	}()

	name := e.spec.Name
	var expired <-chan time.Time
	if !callCtx.deadline.IsZero() {
		t := getTimer(time.Until(callCtx.deadline))
		defer putTimer(t)
		expired = t.C
	}
	var o outcome
	ended := false
	select {
	case o = <-done:
	case <-expired:
		callCtx.expire()
		o, ended = giveUp(done)
	case <-ctx.Done():
		o, ended = giveUp(done)
	}
	if ended {
		cause := callCtx.Err()
		return Result{}, &Error{Kind: ctxKind(cause), Tool: name, Started: true, OutcomeUnknown: true, Err: cause}
	}
	return r.outcome(name, callCtx, o)
}

// callTool calls the tool into o, recovering a panic. A tool that ends
// its goroutine (runtime.Goexit: a test's t.FailNow) has not returned
// either: its outcome is unknown, as a panic's is. On a goroutine of its
// own the outcome is still delivered (invoke's deferred send); on the
// engine's worker the goroutine ends and the worker reports it
// (drive_batch.go).
func callTool(o *outcome, t Tool, ctx context.Context, args json.RawMessage) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			*o = outcome{panicked: p}
		} else if !returned {
			*o = outcome{panicked: errGoexit}
		}
	}()
	o.res, o.err = t.Call(ctx, args)
	returned = true
}

// errGoexit is the "panic" of a tool that ended its goroutine.
var errGoexit = errors.New("the tool ended its goroutine (runtime.Goexit) before it returned")

// invokeHere runs the tool on the calling goroutine, for the engine's
// worker (internal/toolrun): h lets the call go while the tool runs, and
// whoever takes it over then ends it with end, the error the goroutine
// path returns at the deadline or a cancellation. A call taken over
// returns toolrun.ErrTakenOver, whatever the tool returned.
func (r *Runner) invokeHere(h toolrun.Host, e *entry, callCtx *callCtx, args json.RawMessage) (Result, error) {
	name := e.spec.Name
	if err := callCtx.ended(); err != nil {
		return r.outcome(name, callCtx, outcome{notStarted: err})
	}
	h.Enter(callCtx.deadline, func(expired bool) error {
		if expired {
			callCtx.expire()
		}
		cause := callCtx.Err()
		if cause == nil { // ended for the tool by its runner, as invoke's deferred cancel does
			cause = context.Canceled
		}
		callCtx.cancel()
		return &Error{Kind: ctxKind(cause), Tool: name, Started: true, OutcomeUnknown: true, Err: cause}
	})
	var o outcome
	if err := callCtx.ended(); err != nil {
		// Ended as Enter let the batch go (taken over at its deadline, a
		// cancellation): the tool is not started with its context ended,
		// as on a goroutine of its own (invoke).
		o.notStarted = err
	} else {
		callTool(&o, e.tool, callCtx, args)
	}
	if !h.Leave() {
		return Result{}, toolrun.ErrTakenOver
	}
	return r.outcome(name, callCtx, o)
}

// giveUp is called when the call's context ended: a result that arrived
// at the same moment is preferred; ended says there was none.
func giveUp(done chan outcome) (o outcome, ended bool) {
	select {
	case o = <-done:
		return o, false
	default:
		return outcome{}, true
	}
}

// outcome turns what the tool returned into Run's result or error.
func (r *Runner) outcome(name string, callCtx context.Context, o outcome) (Result, error) {
	switch {
	case o.notStarted != nil:
		return Result{}, &Error{Kind: ctxKind(o.notStarted), Tool: name, Err: o.notStarted}
	case o.panicked == errGoexit:
		return Result{}, &Error{Kind: KindExecution, Tool: name, Started: true, OutcomeUnknown: true, Err: errGoexit}
	case o.panicked != nil:
		return Result{}, &Error{Kind: KindExecution, Tool: name, Started: true, OutcomeUnknown: true,
			Err: fmt.Errorf("panic: %v", o.panicked)}
	case o.err == nil:
		return o.res, nil
	case callCtx.Err() != nil:
		// The tool gave up because its context ended; it did not say
		// whether its effect happened.
		return Result{}, &Error{Kind: ctxKind(callCtx.Err()), Tool: name, Started: true, OutcomeUnknown: true, Err: o.err}
	default:
		// A tool that gave up on a deadline or cancellation of its own (an
		// HTTP client timeout, a child context) cannot know whether the
		// other side acted either.
		unknown := errors.Is(o.err, ErrOutcomeUnknown) || errors.Is(o.err, context.DeadlineExceeded) || errors.Is(o.err, context.Canceled)
		return Result{}, &Error{Kind: KindExecution, Tool: name, Started: true, OutcomeUnknown: unknown, Err: o.err}
	}
}
