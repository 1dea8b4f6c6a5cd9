package actoviq_test

// review7A: the cause of a stop (Close, a worker's release, a lost claim,
// Cancel from this or another process, the caller's cancellation, the
// run's deadline, an agent tool's timeout) reaches every drive of a run
// tree, and the tree ends the way docs/design.md says: closed or released,
// resumable; cancelled (caller, Cancel, deadline), cancelled for good.

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// r7tree is root → mid → leaf, each child through a fail-fast agent tool
// (opts); leaf answers from m.
func r7tree(t *testing.T, m *gateModel, opts *actoviq.AgentToolOptions) *actoviq.AgentSpec {
	t.Helper()
	leaf := &actoviq.AgentSpec{ID: "leaf", Instructions: "leaf", Provider: m, Model: "scripted-1"}
	mid := childAgent("mid", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("m1", "leaf", `{"input":"x"}`)}}, scripted.Turn{Text: "mid done"}),
		mustAgentTool(t, leaf, opts))
	return agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("r1", "mid", `{"input":"y"}`)}}, scripted.Turn{Text: "root done"}),
		mustAgentTool(t, mid, opts))
}

// A run cancelled while its foreground child runs ends cancelled, with
// every run of the tree below it; it does not end failed because the
// child it cancelled is "not a success" (fail-fast). The same for the
// run's deadline (cancelled, code deadline). On main the root and the
// middle run ended failed (child_failed: ... cancelled), and Cancel
// reported "it ended before the cancellation took effect; nothing was
// cancelled" although it had cancelled the leaf.
func TestReview7StopOfParentEndsTreeCancelled(t *testing.T) {
	kinds := []string{"caller", "cancel", "cancel-other-process", "deadline"}
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, kind := range kinds {
			t.Run(kind, func(t *testing.T) {
				ctx := context.Background()
				g := newGate(0, scripted.Turn{Text: "leaf answer"})
				a := r7tree(t, g, nil)
				ttl := time.Minute
				if kind == "cancel-other-process" {
					ttl = 1500 * time.Millisecond // the heartbeat (every ttl/3) reads the request; shorter leases expire under -race and load
				}
				if kind == "deadline" {
					// Long enough for the tree to reach the leaf's model
					// call on a loaded machine (root and mid each write
					// and create a child first), short enough to pass
					// while the leaf waits at the gate.
					a.Limits.RunTimeout = 2 * time.Second
				}
				rt := newRT(t, st, "A", ttl)
				id := "p-" + kind
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				out := make(chan driveOut, 1)
				go func() {
					res, err := rt.Run(rctx, a, &actoviq.Input{RunID: id, Items: input("go").Items})
					out <- driveOut{res, err}
				}()
				select {
				case <-g.entered:
				case d := <-out:
					t.Fatalf("the root's drive ended before the leaf's model was called: %+v %v", d.res, d.err)
				case <-time.After(2 * time.Minute):
					t.Fatal("the leaf's model was not called in two minutes")
				}
				var cerr error
				switch kind {
				case "caller":
					cancel()
				case "cancel":
					cerr = rt.Cancel(ctx, id)
				case "cancel-other-process":
					cerr = newRT(t, st, "B", time.Minute).Cancel(ctx, id)
				}
				d := r7wait(t, out)
				code := actoviq.CodeCancelled
				if kind == "deadline" {
					code = actoviq.CodeDeadline
				}
				if cerr != nil {
					t.Errorf("Cancel: %v, want nil (the run ended cancelled)", cerr)
				}
				if d.err != nil || d.res.Status != actoviq.StatusCancelled || d.res.Error == nil || d.res.Error.Code != code {
					t.Fatalf("root's drive: %+v %v, want cancelled with code %s", d.res, d.err, code)
				}
				mid, leaf := actoviq.ChildRunID(id, "r1"), actoviq.ChildRunID(actoviq.ChildRunID(id, "r1"), "m1")
				for _, rid := range []string{id, mid, leaf} {
					info, err := rt.Get(ctx, rid)
					if err != nil {
						t.Fatal(err)
					}
					if info.Status != actoviq.StatusCancelled || info.Error == nil || info.Error.Code != code {
						t.Errorf("run %s: %s %+v, want cancelled with code %s", rid, info.Status, info.Error, code)
					}
					evs := strings.Join(eventTypes(t, rt, rid), " ")
					if !strings.HasSuffix(evs, actoviq.EvRunCancelled) || strings.Contains(evs, actoviq.EvRunFailed) {
						t.Errorf("run %s events: %s, want run.cancelled last and no run.failed", rid, evs)
					}
				}
			})
		}
	})
}

// stallChild makes the at-th store call about run prefix (its id, its
// claim) that is bounded by a deadline less than 5 s away wait for that
// deadline: a drive's context ending at that store call. Calls on
// detached contexts (writes that record what happened, bounded by the
// commit timeout) go through.
type stallChild struct {
	store.Store
	prefix string
	at     int64
	n      atomic.Int64
}

func (s *stallChild) hit(ctx context.Context, id string) error {
	if !strings.HasPrefix(id, s.prefix) && !strings.HasPrefix(id, "run:"+s.prefix) {
		return nil
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > 5*time.Second || s.n.Add(1) != s.at {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stallChild) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := s.hit(ctx, p.ID); err != nil {
		return nil, err
	}
	return s.Store.RunGet(ctx, p)
}

func (s *stallChild) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if err := s.hit(ctx, p.Run.ID); err != nil {
		return nil, err
	}
	return s.Store.RunCreate(ctx, p)
}

func (s *stallChild) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := s.hit(ctx, p.RunID); err != nil {
		return nil, err
	}
	return s.Store.LedgerList(ctx, p)
}

func (s *stallChild) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := s.hit(ctx, p.Key); err != nil {
		return nil, err
	}
	return s.Store.ClaimAcquire(ctx, p)
}

func (s *stallChild) ClaimGet(ctx context.Context, p *store.ClaimGetParams) (*store.Claim, error) {
	if err := s.hit(ctx, p.Key); err != nil {
		return nil, err
	}
	return s.Store.ClaimGet(ctx, p)
}

func (s *stallChild) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := s.hit(ctx, p.RunID); err != nil {
		return nil, err
	}
	return s.Store.RunWrite(ctx, p)
}

// An agent tool's timeout, or the run's deadline, that passes at any
// store call of the child's drive (also before the drive holds the
// child's claim: the child's read, its create, its claim) ends the tree
// as it does once the child is being driven: the timeout by the tool's
// policy (fail-fast: the parent fails, the child is cancelled), the
// deadline cancelled. On main, a timeout or deadline at the child's load
// or claim returned a bare "context deadline exceeded" from Run and left
// the parent running without a claim (stalled), its call started.
func TestReview7TimeoutAtEveryStoreCallOfChild(t *testing.T) {
	for _, kind := range []string{"tool-timeout", "deadline"} {
		t.Run(kind, func(t *testing.T) {
			for at := int64(1); ; at++ {
				ctx := context.Background()
				base := storemem.New(nil)
				st := &stallChild{Store: base, prefix: "p.c1", at: at}
				rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				g := newGate(0, scripted.Turn{Text: "never"})
				child := &actoviq.AgentSpec{ID: "reader", Instructions: "read", Provider: g, Model: "scripted-1"}
				var opts *actoviq.AgentToolOptions
				if kind == "tool-timeout" {
					opts = &actoviq.AgentToolOptions{Timeout: 150 * time.Millisecond}
				}
				parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "reader", `{"input":"look"}`)}},
					scripted.Turn{Text: "done"}), mustAgentTool(t, child, opts))
				if kind == "deadline" {
					parent.Limits.RunTimeout = 150 * time.Millisecond
				}
				res, err := rt.Run(ctx, parent, &actoviq.Input{RunID: "p", Items: input("go").Items})
				rt.Close()
				stalled := st.n.Load() >= at
				want, code := actoviq.StatusFailed, actoviq.CodeChildFailed
				if kind == "deadline" {
					want, code = actoviq.StatusCancelled, actoviq.CodeDeadline
				}
				if err != nil || res.Status != want || res.Error == nil || res.Error.Code != code {
					t.Errorf("stalled at child store call %d: Run: %+v %v, want %s with code %s", at, res, err, want, code)
				}
				rt2 := newRT(t, base, "B", time.Minute)
				if c, err := rt2.Get(ctx, "p.c1"); err == nil && c.Status != actoviq.StatusCancelled {
					t.Errorf("stalled at child store call %d: the child is %s, want cancelled", at, c.Status)
				}
				if !stalled {
					t.Logf("the child's drive made %d store calls bounded by the timeout", at-1)
					break
				}
			}
		})
	}
}

// A read-only agent tool runs beside the other reads of its batch, which
// commit while its child is being created: the tool reads what it needs
// of its parent (run id, deadline, trace, place in the tree) from what
// the drive handed it before the calls ran, not from the drive's run,
// which the drive's writes may replace. A guard (held on main: a call's
// commit does not replace the drive's run; the race was on the path
// where the runner gave up on the tool, TestReview7AgentToolTimeoutAtOnce).
func TestReview7ParallelReadChildReadsNoLiveParentState(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		child := childAgent("reader", scripted.New(scripted.Turn{Text: "child answer"}), &payTool{name: "look", effect: tool.Read})
		var calls []scripted.ToolCall
		for i := range 4 {
			calls = append(calls, call(fmt.Sprintf("l%d", i), "lookup", `{"amount":1}`), call(fmt.Sprintf("c%d", i), "reader", `{"input":"look"}`))
		}
		parent := agent(scripted.New(scripted.Turn{ToolCalls: calls}, scripted.Turn{Text: "done"}),
			mustAgentTool(t, child, nil), &payTool{name: "lookup", effect: tool.Read})
		res, err := rt.Run(ctx, parent, &actoviq.Input{RunID: "pr", Items: input("go").Items})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("parent: %+v %v", res, err)
		}
		info, err := rt.Get(ctx, "pr")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if r := toolResults(t, info)[fmt.Sprintf("c%d", i)]; r.Content != "child answer" {
				t.Fatalf("call c%d: %+v, want the child's answer", i, r)
			}
		}
	})
}

// An agent tool whose timeout passes at once (the runner may give up
// before the tool is entered, or the child's drive before it holds the
// child's claim) applies its policy every time: fail-fast fails the
// parent, collect gives the model an error result; never a bare context
// error from Run with the parent left running. On main Run returned
// "context deadline exceeded" (the parent stalled), and -race reported
// the tool reading its parent's run while the parent's drive wrote it.
func TestReview7AgentToolTimeoutAtOnce(t *testing.T) {
	for _, policy := range []actoviq.ChildFailure{actoviq.FailFast, actoviq.Collect} {
		t.Run(string(policy), func(t *testing.T) {
			for i := range 20 {
				s := newSetup(t)
				child := &actoviq.AgentSpec{ID: "reader", Instructions: "read", Provider: scripted.New(scripted.Turn{Text: "x"}), Model: "scripted-1"}
				parent := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "reader", `{"input":"look"}`)}},
					scripted.Turn{Text: "done"}), mustAgentTool(t, child, &actoviq.AgentToolOptions{Timeout: time.Nanosecond, Failure: policy}))
				ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
				res, err := s.rt.Run(ctx, parent, &actoviq.Input{RunID: "pt", Items: input("go").Items})
				cancel()
				switch {
				case err != nil:
					t.Fatalf("try %d: Run: %v, want the policy's outcome", i, err)
				case policy == actoviq.FailFast && (res.Status != actoviq.StatusFailed || res.Error == nil || res.Error.Code != actoviq.CodeChildFailed):
					t.Fatalf("try %d: %+v, want failed with code child_failed", i, res)
				case policy == actoviq.Collect && res.Status != actoviq.StatusCompleted:
					t.Fatalf("try %d: %+v, want completed (the model got an error result)", i, res)
				}
				if c, err := s.rt.Get(s.ctx, "pt.c1"); err == nil && c.Status != actoviq.StatusCancelled {
					t.Fatalf("try %d: the child is %s, want cancelled", i, c.Status)
				}
			}
		})
	}
}

// dropRenew loses the renewals of one claim (a network that drops them)
// while drop is set.
type dropRenew struct {
	store.Store
	key  string
	drop atomic.Bool
}

func (s *dropRenew) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	if s.drop.Load() && p.Fence.Key == s.key {
		return nil, errors.New("network down")
	}
	return s.Store.ClaimRenew(ctx, p)
}

// A foreground child whose lease expired and that another process took
// over (and completed) stops its own drive (lost claim); its parent, whose
// claim is live, waits for the new holder and goes on with the child's
// outcome, and so does the root. On main the lost claim of the leaf stopped
// the whole tree: Run returned "lost the run's claim run:p.r1.m1", and the
// root and the middle run were left running with nobody driving them
// (stalled) although their claims were live.
func TestReview7ChildTakenOverParentGoesOn(t *testing.T) {
	eachBackend(t, func(t *testing.T, base store.Store) {
		ctx := context.Background()
		st := &dropRenew{Store: base, key: store.RunClaimKey("p.r1.m1")}
		g := newGate(0, scripted.Turn{Text: "leaf answer A"})
		rtA := newRT(t, st, "A", 600*time.Millisecond)
		out := make(chan driveOut, 1)
		go func() {
			res, err := rtA.Run(ctx, r7tree(t, g, nil), &actoviq.Input{RunID: "p", Items: input("go").Items})
			out <- driveOut{res, err}
		}()
		<-g.entered
		st.drop.Store(true)
		rtB := newRT(t, base, "B", time.Minute)
		for { // the leaf's lease expires
			c, err := base.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("p.r1.m1")})
			if err != nil {
				t.Fatal(err)
			}
			if !c.ExpiresAt.After(time.Now()) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		leaf := &actoviq.AgentSpec{ID: "leaf", Instructions: "leaf", Provider: scripted.New(scripted.Turn{Text: "leaf answer B"}), Model: "scripted-1"}
		if res, err := rtB.Resume(ctx, leaf, "p.r1.m1", nil); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("B resumes the leaf: %+v %v", res, err)
		}
		st.drop.Store(false) // A's next renewal is fenced out: its leaf drive stops
		d := r7wait(t, out)
		if d.err != nil || d.res.Status != actoviq.StatusCompleted {
			t.Fatalf("the root after its leaf was taken over: %+v %v, want completed", d.res, d.err)
		}
		info, err := rtB.Get(ctx, "p.r1")
		if err != nil {
			t.Fatal(err)
		}
		if r := toolResults(t, info)["m1"]; r.Content != "leaf answer B" {
			t.Fatalf("the middle run's result for its leaf: %+v, want the answer of the leaf's new holder", r)
		}
	})
}

// The stops that are no decision about the run match tool.ErrDriveStopped
// (a tool leaves work it started elsewhere running); a cancellation does
// not.
func TestReview7DriveStoppedCauses(t *testing.T) {
	for _, err := range []error{actoviq.ErrClosed, actoviq.ErrReleased, &actoviq.ClosedError{RunID: "r"}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(err)
		if !tool.DriveStopped(ctx) || !errors.Is(err, tool.ErrDriveStopped) {
			t.Errorf("%v does not read as a stopped drive", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if tool.DriveStopped(ctx) || tool.DriveStopped(context.Background()) {
		t.Error("a cancellation (or no end) reads as a stopped drive")
	}
}

// r7wait waits for a drive's outcome, at most two minutes: a drive that
// does not stop fails the test with every goroutine's stack, instead of
// the package's timeout.
func r7wait(t *testing.T, out <-chan driveOut) driveOut {
	t.Helper()
	select {
	case d := <-out:
		return d
	case <-time.After(2 * time.Minute):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("the drive did not stop in two minutes; goroutines:\n%s", b.String())
		return driveOut{}
	}
}
