package actoviq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// atCall runs hook at the at-th store call (counted once armed), then
// lets that call wait for its context (at most a moment).
type atCall struct {
	store.Store
	at   int64
	n    atomic.Int64
	hook func()
}

func (s *atCall) hit(ctx context.Context) error {
	if s.n.Add(1) != s.at {
		return nil
	}
	go s.hook()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Millisecond):
		return nil
	}
}

func (s *atCall) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunGet(ctx, p)
}
func (s *atCall) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunCreate(ctx, p)
}
func (s *atCall) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunWrite(ctx, p)
}
func (s *atCall) RunList(ctx context.Context, p *store.RunListParams) ([]*store.Run, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunList(ctx, p)
}
func (s *atCall) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.LedgerList(ctx, p)
}
func (s *atCall) LedgerGet(ctx context.Context, p *store.LedgerGetParams) (*store.LedgerEntry, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.LedgerGet(ctx, p)
}
func (s *atCall) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.ClaimAcquire(ctx, p)
}
func (s *atCall) ClaimGet(ctx context.Context, p *store.ClaimGetParams) (*store.Claim, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.ClaimGet(ctx, p)
}
func (s *atCall) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	if err := s.hit(ctx); err != nil {
		return err
	}
	return s.Store.ClaimRelease(ctx, p)
}

// r7payTree is root → mid → leaf; leaf pays (a side effect) and answers.
func r7payTree(t *testing.T, pay *payTool) *actoviq.AgentSpec {
	t.Helper()
	leaf := childAgent("leaf", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}}, scripted.Turn{Text: "leaf paid"}), pay)
	mid := childAgent("mid", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("m1", "leaf", `{"input":"x"}`)}}, scripted.Turn{Text: "mid done"}),
		mustAgentTool(t, leaf, nil))
	return agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("r1", "mid", `{"input":"y"}`)}}, scripted.Turn{Text: "root done"}),
		mustAgentTool(t, mid, nil))
}

var r7tree3 = []string{"s", "s.r1", "s.r1.m1"}

// finishTree resumes the tree until it ends, deciding what a person would
// (a started payment: committed, as the payee confirms), and returns its
// status.
func finishTree(t *testing.T, st store.Store, pay *payTool) *actoviq.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // fail, not hang
	defer cancel()
	rt := newRT(t, st, "B", time.Minute)
	var res *actoviq.RunResult
	var ds []actoviq.Decision
	for range 6 {
		var err error
		res, err = rt.Resume(ctx, r7payTree(t, pay), "s", &actoviq.ResumeOptions{Decisions: ds})
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if res.Status != actoviq.StatusInterrupted {
			return res
		}
		ds = nil
		for _, in := range res.Interruptions {
			switch in.Kind {
			case actoviq.InterruptReconciliation, actoviq.InterruptRecovery:
				ds = append(ds, actoviq.Decision{RunID: in.RunID, CallID: in.CallID, Kind: actoviq.DecideCommitted, By: "op", Result: "paid 3 (confirmed)"})
			default:
				ds = append(ds, actoviq.Decision{RunID: in.RunID, CallID: in.CallID, Kind: actoviq.DecideApprove, By: "op"})
			}
		}
	}
	t.Fatalf("the tree did not end: %+v", res)
	return nil
}

// A Close, a Cancel (this process) or the caller's cancellation at each
// store call of a three-run tree whose leaf pays: the tree ends the way
// its stop says, at every instant. Close: ErrClosed (or the result),
// nothing ended cancelled or failed, a second runtime completes the tree.
// Cancel and the caller: the root ends cancelled (or completed, when the
// stop came after), no run of the tree ends failed, and none is left
// running. Never a payment twice.
func TestReview7StopAtEveryStoreCallOfTree(t *testing.T) {
	kinds := []string{"close", "cancel", "caller"}
	if k := os.Getenv("R7_KIND"); k != "" {
		kinds = []string{k}
	}
	step := int64(1)
	if s, _ := strconv.Atoi(os.Getenv("R7_STEP")); s > 0 {
		step = int64(s)
	}
	backends := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return storemem.New(nil) },
		"sqlite": sqliteStore,
	}
	names := []string{"memory"}
	if os.Getenv("R7_LONG") != "" { // 25 s without -race, minutes with it
		names = append(names, "sqlite")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, kind := range kinds {
				t.Run(kind, func(t *testing.T) {
					for at := int64(1); ; at += step {
						if !r7stopAt(t, backends[name](t), kind, at) {
							t.Logf("the tree's drive made %d store calls", at-1)
							break
						}
					}
				})
			}
		})
	}
}

func r7stopAt(t *testing.T, base store.Store, kind string, at int64) (hit bool) {
	t.Helper()
	ctx := context.Background()
	pay := &payTool{name: "pay"}
	st := &atCall{Store: base, at: at}
	rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "A"})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch kind {
	case "close":
		st.hook = func() { rt.Close() }
	case "cancel":
		st.hook = func() { _ = rt.Cancel(ctx, "s") }
	case "caller":
		st.hook = cancel
	}
	res, err := rt.Run(rctx, r7payTree(t, pay), &actoviq.Input{RunID: "s", Items: input("go").Items})
	hit = st.n.Load() >= at
	rt.Close()
	rt2 := newRT(t, base, "C", time.Minute)
	status := map[string]actoviq.Status{}
	for _, id := range r7tree3 {
		if info, err := rt2.Get(ctx, id); err == nil {
			status[id] = info.Status
		}
	}
	where := fmt.Sprintf("%s at store call %d (Run: %v %v; tree %v)", kind, at, res, err, status)
	switch kind {
	case "close":
		if err != nil && !errors.Is(err, actoviq.ErrClosed) {
			t.Errorf("%s: want ErrClosed or the result", where)
		}
		for id, s := range status {
			if s == actoviq.StatusCancelled || s == actoviq.StatusFailed {
				t.Errorf("%s: run %s ended %s after a Close", where, id, s)
			}
		}
		if r := finishTree(t, base, pay); r.Status != actoviq.StatusCompleted {
			t.Errorf("%s: the tree resumed after the Close ended %s %+v", where, r.Status, r.Error)
		}
	default:
		if err != nil {
			if _, created := status["s"]; created {
				t.Errorf("%s: want the run's end", where)
			}
		} else if res.Status != actoviq.StatusCancelled && res.Status != actoviq.StatusCompleted {
			t.Errorf("%s: want cancelled (or completed)", where)
		}
		for id, s := range status {
			if s == actoviq.StatusFailed || s == actoviq.StatusRunning || s == actoviq.StatusStalled {
				t.Errorf("%s: run %s is %s", where, id, s)
			}
		}
	}
	if n := pay.count(); n > 1 {
		t.Errorf("%s: paid %d times", where, n)
	}
	return hit
}

// A worker's shutdown with no grace (every drive released at once) at each
// store call of a tree it drives: the drive is handed back (or ends), no
// run of the tree ends cancelled or failed, and a later drive completes
// the tree, never paying twice.
func TestReview7ReleaseAtEveryStoreCallOfTree(t *testing.T) {
	for at := int64(1); ; at++ {
		if !r7releaseAt(t, storemem.New(nil), at) {
			t.Logf("the worker's drive of the tree made %d store calls", at-1)
			break
		}
	}
}

func r7releaseAt(t *testing.T, base store.Store, at int64) (hit bool) {
	t.Helper()
	ctx := context.Background()
	pay := &payTool{name: "pay"}
	client := newRT(t, base, "C", time.Minute)
	if _, err := client.Enqueue(ctx, r7payTree(t, pay), &actoviq.Input{RunID: "s", Items: input("go").Items}); err != nil {
		t.Fatal(err)
	}
	st := &atCall{Store: base, at: at}
	w, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "W"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Register(r7payTree(t, pay)); err != nil {
		t.Fatal(err)
	}
	wctx, drain := context.WithCancel(ctx)
	defer drain()
	st.hook = drain
	type drove struct {
		res *actoviq.RunResult
		err error
	}
	drives := make(chan drove, 4)
	worked := make(chan error, 1)
	go func() {
		worked <- w.Work(wctx, &actoviq.WorkOptions{PollInterval: 5 * time.Millisecond, Grace: -1, EscalateEvery: -1,
			OnDrive: func(_ string, res *actoviq.RunResult, err error) { drives <- drove{res, err} }})
	}()
	var d drove
	select {
	case d = <-drives:
	case err := <-worked:
		t.Logf("release at store call %d: the worker stopped before it drove the run (%v)", at, err)
		return true
	}
	hit = st.n.Load() >= at
	drain()
	<-worked
	where := fmt.Sprintf("release at store call %d (drive: %+v %v)", at, d.res, d.err)
	for _, id := range r7tree3 {
		if info, err := client.Get(ctx, id); err == nil && (info.Status == actoviq.StatusCancelled || info.Status == actoviq.StatusFailed) {
			t.Errorf("%s: run %s ended %s", where, id, info.Status)
		}
	}
	if r := finishTree(t, base, pay); r.Status != actoviq.StatusCompleted {
		t.Errorf("%s: the tree ended %s %+v", where, r.Status, r.Error)
	}
	if n := pay.count(); n > 1 {
		t.Errorf("%s: paid %d times", where, n)
	}
	return hit
}
