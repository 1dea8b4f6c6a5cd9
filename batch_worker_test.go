package actoviq_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// stuckTool is a side effect that ignores its context: it runs until
// released, then returns a result nobody may record.
type stuckTool struct {
	timeout  time.Duration
	entered  chan struct{}
	release  chan struct{}
	returned atomic.Bool
}

func (s *stuckTool) Spec() tool.Spec {
	return tool.Spec{Name: "stuck", Description: "ignores its context", Effect: tool.SideEffect, Timeout: s.timeout}
}

func (s *stuckTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	close(s.entered)
	<-s.release
	s.returned.Store(true)
	return tool.Result{Content: "late"}, nil
}

// countTool is a side effect that counts its calls.
type countTool struct{ n atomic.Int64 }

func (c *countTool) Spec() tool.Spec {
	return tool.Spec{Name: "count", Description: "counts", Effect: tool.SideEffect}
}

func (c *countTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	c.n.Add(1)
	return tool.Result{Content: "ok"}, nil
}

// A batch's calls run on one worker goroutine, each tool on the worker
// itself (drive_batch.go). A tool in the middle of the batch that ignores
// its context must still let Run return at the call's deadline, at
// Runtime.Cancel, at Runtime.Close, at the run's deadline and at the
// caller's cancellation, the
// call unknown, the calls after it not started; and when the stuck tool
// returns at last, the worker it ran on must end without writing or
// emitting anything.
func TestBatchWorkerStuckToolMidBatch(t *testing.T) {
	for _, how := range []string{"deadline", "run-deadline", "cancel", "close", "caller"} {
		t.Run(how, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			st := storemem.New(nil)
			var emitted atomic.Int64
			sink := actoviq.EventSinkFunc(func(context.Context, actoviq.Event) { emitted.Add(1) })
			rt, err := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{sink}})
			if err != nil {
				t.Fatal(err)
			}
			stuck := &stuckTool{entered: make(chan struct{}), release: make(chan struct{})}
			if how == "deadline" {
				stuck.timeout = 50 * time.Millisecond
			}
			count := &countTool{}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
				call("c1", "count", `{}`), call("c2", "stuck", `{}`), call("c3", "count", `{}`)}},
				scripted.Turn{Text: "done"})
			a := agent(p, count, stuck)
			if how == "run-deadline" {
				a.Limits.RunTimeout = 100 * time.Millisecond
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type out struct {
				res *actoviq.RunResult
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1"})
				done <- out{res, err}
			}()
			<-stuck.entered
			switch how {
			case "cancel":
				if err := rt.Cancel(context.Background(), "r1"); err != nil {
					t.Fatal(err)
				}
			case "close":
				rt.Close()
			case "caller":
				cancel()
			}
			o := <-done
			switch how {
			case "deadline", "close": // a Close during a side effect stops the run for reconciliation, as a crash would
				if o.err != nil || o.res.Status != actoviq.StatusInterrupted || len(o.res.Interruptions) != 1 ||
					o.res.Interruptions[0].CallID != "c2" || o.res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
					t.Fatalf("run: %+v %v, want interrupted for c2's reconciliation", o.res, o.err)
				}
			case "cancel", "caller", "run-deadline":
				if o.err != nil || o.res.Status != actoviq.StatusCancelled {
					t.Fatalf("run: %+v %v, want cancelled", o.res, o.err)
				}
			}
			if stuck.returned.Load() {
				t.Fatal("Run waited for the stuck tool")
			}
			bg := context.Background()
			ledger := func() map[string]*store.LedgerEntry {
				es, err := st.LedgerList(bg, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: "r1"})
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]*store.LedgerEntry{}
				for _, e := range es {
					m[e.CallID] = e
				}
				return m
			}
			events := func() int {
				evs, err := st.EventList(bg, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r1"})
				if err != nil {
					t.Fatal(err)
				}
				return len(evs)
			}
			l := ledger()
			if l["c1"].State != store.LedgerCommitted || l["c2"].State != store.LedgerUnknown ||
				l["c3"].State != store.LedgerPrepared || l["c3"].Attempt != 0 || count.n.Load() != 1 {
				t.Fatalf("ledger c1 %s, c2 %s, c3 %s (attempt %d), %d counted calls; want committed, unknown, prepared (0), 1",
					l["c1"].State, l["c2"].State, l["c3"].State, l["c3"].Attempt, count.n.Load())
			}
			nev, nemit, rev := events(), emitted.Load(), l["c2"].Revision

			// The stuck tool returns: its worker ends, having written and
			// emitted nothing.
			close(stuck.release)
			rt.Close()
			goleak.VerifyNone(t, ignore)
			if !stuck.returned.Load() {
				t.Fatal("the stuck tool never returned")
			}
			l = ledger()
			if l["c2"].State != store.LedgerUnknown || l["c2"].Revision != rev || l["c3"].State != store.LedgerPrepared ||
				events() != nev || emitted.Load() != nemit || count.n.Load() != 1 {
				t.Fatalf("after the late return: c2 %s rev %d (was %d), c3 %s, %d events (was %d), %d emitted (was %d), %d counted calls",
					l["c2"].State, l["c2"].Revision, rev, l["c3"].State, events(), nev, emitted.Load(), nemit, count.n.Load())
			}
		})
	}
}

// goexitTool ends its goroutine, as a test's t.FailNow does.
type goexitTool struct{}

func (goexitTool) Spec() tool.Spec {
	return tool.Spec{Name: "goexit", Description: "ends its goroutine", Effect: tool.SideEffect}
}

func (goexitTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	runtime.Goexit()
	return tool.Result{}, nil
}

// A tool that panics, or ends its goroutine, in the middle of a batch run
// on the worker: the call's outcome is unknown (it may have acted), the
// calls after it do not start, and Run returns.
func TestBatchWorkerPanicAndGoexitMidBatch(t *testing.T) {
	for _, bad := range []tool.Tool{panicTool{effect: tool.SideEffect}, goexitTool{}} {
		name := bad.Spec().Name
		t.Run(name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			s := newSetup(t)
			count := &countTool{}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{
				call("c1", "count", `{}`), call("c2", name, `{}`), call("c3", "count", `{}`)}},
				scripted.Turn{Text: "done"})
			res, err := s.rt.Run(s.ctx, agent(p, count, bad), &actoviq.Input{RunID: "r1"})
			want := "panic: tool bug"
			if name == "goexit" {
				want = "runtime.Goexit"
			}
			if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 ||
				res.Interruptions[0].CallID != "c2" || res.Interruptions[0].State != store.LedgerUnknown ||
				!strings.Contains(res.Interruptions[0].Reason, want) {
				t.Fatalf("%+v %v", res, err)
			}
			info, err := s.rt.Get(s.ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if info.Ledger[2].State != store.LedgerPrepared || count.n.Load() != 1 {
				t.Fatalf("c3 %s, %d counted calls; want prepared, 1", info.Ledger[2].State, count.n.Load())
			}
			s.rt.Close()
			goleak.VerifyNone(t, ignore)
		})
	}
}

// timedTool is a side effect with its own timeout that sleeps, honouring
// its context, before it returns.
type timedTool struct {
	name    string
	timeout time.Duration
	sleep   time.Duration
	n       atomic.Int64
}

func (s *timedTool) Spec() tool.Spec {
	return tool.Spec{Name: s.name, Description: "sleeps", Effect: tool.SideEffect, Timeout: s.timeout}
}

func (s *timedTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	s.n.Add(1)
	select {
	case <-time.After(s.sleep):
		return tool.Result{Content: "ok"}, nil
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
}

// The worker's one timer is set for the first call's deadline and moved
// only to an earlier one: when it fires for a call that already returned,
// the running call, whose deadline is later, goes on and commits; when a
// later call's deadline is earlier than the timer's, the timer moves, and
// that call is taken over at its own deadline.
func TestBatchWorkerDeadlineTimer(t *testing.T) {
	t.Run("stale", func(t *testing.T) {
		s := newSetup(t)
		quick := &timedTool{name: "quick", timeout: 20 * time.Millisecond}
		slow := &timedTool{name: "slow", timeout: time.Hour, sleep: 100 * time.Millisecond}
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "quick", `{}`), call("c2", "slow", `{}`)}},
			scripted.Turn{Text: "done"})
		res, err := s.rt.Run(s.ctx, agent(p, quick, slow), &actoviq.Input{RunID: "r1"})
		if err != nil || res.Status != actoviq.StatusCompleted || quick.n.Load() != 1 || slow.n.Load() != 1 {
			t.Fatalf("%+v %v: the slow call, past the quick one's deadline, within its own, must commit", res, err)
		}
	})
	t.Run("earlier", func(t *testing.T) {
		s := newSetup(t)
		first := &timedTool{name: "first", timeout: time.Hour}
		stuck := &stuckTool{timeout: 50 * time.Millisecond, entered: make(chan struct{}), release: make(chan struct{})}
		defer close(stuck.release)
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "first", `{}`), call("c2", "stuck", `{}`)}},
			scripted.Turn{Text: "done"})
		res, err := s.rt.Run(s.ctx, agent(p, first, stuck), &actoviq.Input{RunID: "r1"})
		if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].CallID != "c2" ||
			res.Interruptions[0].State != store.LedgerUnknown {
			t.Fatalf("%+v %v: the stuck call must be taken over at its own deadline", res, err)
		}
	})
}
