package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// fakeTool counts its invocations and runs fn.
type fakeTool struct {
	spec  tool.Spec
	calls atomic.Int32
	fn    func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }

func (f *fakeTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	f.calls.Add(1)
	return f.fn(ctx, args)
}

const transferSchema = `{"type":"object","properties":{"to":{"type":"string","minLength":1},"amount":{"type":"integer","minimum":1}},"required":["to","amount"],"additionalProperties":false}`

func newFake(name string, fn func(ctx context.Context, args json.RawMessage) (tool.Result, error)) *fakeTool {
	if fn == nil {
		fn = func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			return tool.Result{Content: "ok " + tool.IdempotencyKey(ctx) + fmt.Sprintf(" #%d", tool.Attempt(ctx)), Data: json.RawMessage(`{"id":"t1"}`)}, nil
		}
	}
	return &fakeTool{spec: tool.Spec{
		Name: name, InputSchema: json.RawMessage(transferSchema),
		OutputSchema: json.RawMessage(`{"type":"object","required":["id"]}`),
	}, fn: fn}
}

func TestRunnerBranches(t *testing.T) {
	t.Parallel()
	good := json.RawMessage(`{"to":"bob","amount":5}`)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	tests := []struct {
		name        string
		fn          func(ctx context.Context, args json.RawMessage) (tool.Result, error)
		policy      tool.Policy
		approval    bool // spec.RequireApproval
		ctx         context.Context
		call        tool.Call
		wantKind    tool.Kind // "" means success
		wantCalls   int32
		wantUnknown bool
		wantStarted bool
		check       func(t *testing.T, res tool.Result, err *tool.Error)
	}{
		{name: "success", call: tool.Call{Args: good, Key: "run1:call1", Attempt: 2}, wantCalls: 1,
			check: func(t *testing.T, res tool.Result, _ *tool.Error) {
				if res.Content != "ok run1:call1 #2" {
					t.Errorf("content %q: key or attempt not passed", res.Content)
				}
			}},
		{name: "attempt defaults to 1", call: tool.Call{Args: good, Key: "k"}, wantCalls: 1,
			check: func(t *testing.T, res tool.Result, _ *tool.Error) {
				if !strings.HasSuffix(res.Content, "#1") {
					t.Errorf("content %q", res.Content)
				}
			}},
		{name: "not found", call: tool.Call{Name: "nope", Args: good}, wantKind: tool.KindNotFound},
		{name: "validation reports every violation", call: tool.Call{Args: json.RawMessage(`{"to":"","amount":0,"extra":true}`)},
			wantKind: tool.KindValidation,
			check: func(t *testing.T, _ tool.Result, err *tool.Error) {
				if len(err.Violations) != 3 {
					t.Errorf("want 3 violations, got %q", err.Violations)
				}
				for _, want := range []string{"/to", "/amount", "extra"} {
					if !slices.ContainsFunc(err.Violations, func(v string) bool { return strings.Contains(v, want) }) {
						t.Errorf("no violation mentions %s: %q", want, err.Violations)
					}
				}
			}},
		{name: "validation missing required", call: tool.Call{}, wantKind: tool.KindValidation},
		{name: "validation not an object", call: tool.Call{Args: json.RawMessage(`[1]`)}, wantKind: tool.KindValidation},
		{name: "validation bad json", call: tool.Call{Args: json.RawMessage(`{"to":`)}, wantKind: tool.KindValidation},
		{name: "denied", call: tool.Call{Args: good, Approved: true}, wantKind: tool.KindDenied,
			policy: tool.PolicyFunc(func(context.Context, tool.Spec, json.RawMessage) tool.Verdict {
				return tool.Verdict{Permission: tool.Deny, Reason: "over limit"}
			}),
			check: func(t *testing.T, _ tool.Result, err *tool.Error) {
				if !strings.Contains(err.Error(), "over limit") {
					t.Errorf("reason lost: %v", err)
				}
			}},
		{name: "zero verdict fails closed", call: tool.Call{Args: good}, wantKind: tool.KindDenied,
			policy: tool.PolicyFunc(func(context.Context, tool.Spec, json.RawMessage) tool.Verdict { return tool.Verdict{} })},
		{name: "ask without approval", approval: true, call: tool.Call{Args: good}, wantKind: tool.KindApprovalRequired},
		{name: "ask with approval", approval: true, call: tool.Call{Args: good, Approved: true}, wantCalls: 1},
		{name: "policy sees args", call: tool.Call{Args: json.RawMessage(`{"to":"eve","amount":9}`)}, wantKind: tool.KindApprovalRequired,
			policy: tool.PolicyFunc(func(_ context.Context, _ tool.Spec, args json.RawMessage) tool.Verdict {
				if strings.Contains(string(args), "eve") {
					return tool.Verdict{Permission: tool.Ask}
				}
				return tool.Verdict{Permission: tool.Allow}
			})},
		{name: "cancelled before start", ctx: cancelled, call: tool.Call{Args: good}, wantKind: tool.KindCancelled},
		{name: "deadline passed before start", ctx: expired, call: tool.Call{Args: good}, wantKind: tool.KindTimeout},
		{name: "tool error", call: tool.Call{Args: good}, wantKind: tool.KindExecution, wantCalls: 1, wantStarted: true,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) {
				return tool.Result{}, errors.New("bank said no")
			}},
		{name: "tool error outcome unknown", call: tool.Call{Args: good}, wantKind: tool.KindExecution, wantCalls: 1, wantStarted: true, wantUnknown: true,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) {
				return tool.Result{}, fmt.Errorf("connection reset after send: %w", tool.ErrOutcomeUnknown)
			}},
		{name: "panic", call: tool.Call{Args: good}, wantKind: tool.KindExecution, wantCalls: 1, wantStarted: true, wantUnknown: true,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) { panic("boom") }},
		{name: "error result is not a runtime error", call: tool.Call{Args: good}, wantCalls: 1,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) {
				return tool.Result{Content: "account closed", IsError: true}, nil
			}},
		{name: "output invalid", call: tool.Call{Args: good}, wantKind: tool.KindValidation, wantCalls: 1, wantStarted: true,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) {
				return tool.Result{Content: "x", Data: json.RawMessage(`{"other":1}`)}, nil
			},
			check: func(t *testing.T, res tool.Result, err *tool.Error) {
				if res.Content != "x" {
					t.Error("result of a tool that ran must be returned with the error")
				}
			}},
		{name: "output missing", call: tool.Call{Args: good}, wantKind: tool.KindValidation, wantCalls: 1, wantStarted: true,
			fn: func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{Content: "x"}, nil }},
		{name: "tool honours deadline", call: tool.Call{Args: good}, wantKind: tool.KindTimeout, wantCalls: 1, wantStarted: true, wantUnknown: true,
			fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ft := newFake("transfer", tt.fn)
			ft.spec.RequireApproval = tt.approval
			if tt.name == "tool honours deadline" {
				ft.spec.Timeout = 10 * time.Millisecond
			}
			r, err := tool.NewRunner([]tool.Tool{ft}, &tool.RunnerConfig{Policy: tt.policy})
			if err != nil {
				t.Fatal(err)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			call := tt.call
			if call.Name == "" {
				call.Name = "transfer"
			}
			res, err := r.Run(ctx, &call)
			got := ft.calls.Load()
			if tt.name == "tool honours deadline" && got == 0 {
				// The runner gave up at the deadline before the tool's
				// goroutine was scheduled (a loaded machine): the tool is
				// then never started, and Run has said started with the
				// outcome unknown all the same.
				got = tt.wantCalls
			}
			if got != tt.wantCalls {
				t.Fatalf("tool invoked %d times, want %d", got, tt.wantCalls)
			}
			var te *tool.Error
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
			} else {
				if !errors.As(err, &te) {
					t.Fatalf("err = %v, want *tool.Error", err)
				}
				if te.Kind != tt.wantKind || te.OutcomeUnknown != tt.wantUnknown || te.Started != tt.wantStarted {
					t.Fatalf("got kind=%s unknown=%v started=%v, want %s/%v/%v (%v)",
						te.Kind, te.OutcomeUnknown, te.Started, tt.wantKind, tt.wantUnknown, tt.wantStarted, err)
				}
				if errors.Is(err, tool.ErrOutcomeUnknown) != tt.wantUnknown {
					t.Fatalf("errors.Is(ErrOutcomeUnknown) mismatch: %v", err)
				}
			}
			if tt.check != nil {
				tt.check(t, res, te)
			}
		})
	}
}

// TestRunnerAbandonsStuckTool checks that the runner returns when the call's
// deadline passes even though the tool ignores its context.
func TestRunnerAbandonsStuckTool(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	exited := make(chan struct{})
	stuck := &fakeTool{
		spec: tool.Spec{Name: "stuck", Timeout: 20 * time.Millisecond},
		fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			defer close(exited)
			close(started)
			<-release // ignores ctx on purpose
			return tool.Result{Content: "late"}, nil
		},
	}
	t.Cleanup(func() { close(release); <-exited })
	r, err := tool.NewRunner([]tool.Tool{stuck}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background(), &tool.Call{Name: "stuck"})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindTimeout || !te.OutcomeUnknown || !errors.Is(err, tool.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	// On a loaded machine the deadline can pass before the tool's
	// goroutine is scheduled: the call was handed over all the same.
	<-started
	if stuck.calls.Load() != 1 {
		t.Fatalf("calls = %d", stuck.calls.Load())
	}
}

// TestRunnerCancelledWhileRunning cancels the caller's context after the
// tool has started.
func TestRunnerCancelledWhileRunning(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	exited := make(chan struct{})
	ft := &fakeTool{
		spec: tool.Spec{Name: "slow"},
		fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			defer close(exited)
			close(started)
			<-release
			return tool.Result{}, nil
		},
	}
	t.Cleanup(func() { close(release); <-exited })
	r, err := tool.NewRunner([]tool.Tool{ft}, &tool.RunnerConfig{DefaultTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err = r.Run(ctx, &tool.Call{Name: "slow"})
	if !errors.Is(err, tool.ErrCancelled) || !errors.Is(err, tool.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRunnerRejects(t *testing.T) {
	t.Parallel()
	ok := newFake("a", nil)
	cases := map[string][]tool.Tool{
		"duplicate":      {ok, newFake("a", nil)},
		"bad name":       {newFake("has space", nil)},
		"bad schema":     {&fakeTool{spec: tool.Spec{Name: "s", InputSchema: json.RawMessage(`{"type":"nonsense"}`)}}},
		"bad out schema": {&fakeTool{spec: tool.Spec{Name: "s", OutputSchema: json.RawMessage(`{"minimum":"x"}`)}}},
		"not json":       {&fakeTool{spec: tool.Spec{Name: "s", InputSchema: json.RawMessage(`{`)}}},
		"bad effect":     {&fakeTool{spec: tool.Spec{Name: "s", Effect: 7}}},
		"nil tool":       {nil},
		"underivable": {tool.Func(tool.Spec{Name: "f"}, func(context.Context, chan int) (string, error) {
			return "", nil
		})},
	}
	for name, tools := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := tool.NewRunner(tools, nil); err == nil {
				t.Fatal("NewRunner accepted it")
			}
		})
	}
	r, err := tool.NewRunner([]tool.Tool{newFake("b", nil), ok}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, found := r.Lookup("a"); !found || got != ok {
		t.Error("Lookup a")
	}
	if _, found := r.Lookup("zz"); found {
		t.Error("Lookup zz")
	}
	if specs := r.Specs(); len(specs) != 2 || specs[0].Name != "b" || specs[1].Name != "a" {
		t.Errorf("Specs = %v", specs)
	}
}

func TestSpecValidateName(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"a", "get_weather", "ns.tool-1", strings.Repeat("x", 128)} {
		if err := (tool.Spec{Name: n}).Validate(); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "a b", "é", strings.Repeat("x", 129), "a/b"} {
		if err := (tool.Spec{Name: n}).Validate(); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
	if err := (tool.Spec{Name: "t", Timeout: -time.Second}).Validate(); err == nil {
		t.Error("negative timeout accepted")
	}
}

func TestContextValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if tool.IdempotencyKey(ctx) != "" || tool.Attempt(ctx) != 0 {
		t.Fatal("empty context has values")
	}
	ctx = tool.WithAttempt(tool.WithIdempotencyKey(ctx, "r:c"), 3)
	if tool.IdempotencyKey(ctx) != "r:c" || tool.Attempt(ctx) != 3 {
		t.Fatal("values lost")
	}
}
