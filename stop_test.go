package actoviq_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A run cancelled while a side effect's outcome was unknown used to be
// closed to the truth: Decide returned ErrRunFinished. It records what
// happened (committed or failed) for the audit trail; the run stays
// cancelled and nothing runs.
func TestDecideSettlesCallOfCancelledRun(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if err := s.rt.Cancel(s.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.rt.Get(s.ctx, "r1"); len(info.Unsettled) != 1 || info.Unsettled[0].CallID != "c1" || info.Unsettled[0].State != "unknown" {
		t.Fatalf("the cancelled run's unknown call is not listed as unsettled: %+v", info.Unsettled)
	}
	// What would make the run go on is refused, typed.
	for _, dec := range []actoviq.Decision{
		{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops"},
		{CallID: "c1", Kind: actoviq.DecideApprove, By: "ops"},
	} {
		if err := s.rt.Decide(s.ctx, "r1", dec); !errors.Is(err, actoviq.ErrRunFinished) {
			t.Fatalf("%s on a cancelled run: %v, want ErrRunFinished", dec.Kind, err)
		}
	}
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops",
		Reason: "the bank shows payment p-1", Result: "paid 5"}); err != nil {
		t.Fatalf("recording the truth about the started call of a cancelled run: %v", err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	en := info.Ledger[0]
	if info.Status != actoviq.StatusCancelled || en.State != store.LedgerCommitted || en.Resolution == nil ||
		en.Resolution.By != "ops" || len(en.Resolution.Evidence) == 0 || len(info.Unsettled) != 0 {
		t.Fatalf("run %s, entry %s resolution %+v", info.Status, en.State, en.Resolution)
	}
	// The run does not continue.
	res, err := s.rt.Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusCancelled || pay.count() != 1 {
		t.Fatalf("resume of the cancelled run: %+v %v, %d calls", res, err, pay.count())
	}
	// A second settlement is refused: the call is settled.
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideFailed, By: "ops", Message: "x"}); err == nil {
		t.Fatal("a settled call was settled again")
	}
}

// The same for a run that ended cancelled because its deadline passed.
func TestDecideSettlesCallOfRunPastDeadline(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	a.Limits.RunTimeout = time.Hour
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	s.clock.Advance(2 * time.Hour)
	if res, err := s.rt.Resume(s.ctx, a, "r1", nil); err != nil || res.Status != actoviq.StatusCancelled || res.Error.Code != "deadline" {
		t.Fatalf("%+v %v", res, err)
	}
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideFailed, By: "ops", Message: "the bank has no such payment"}); err != nil {
		t.Fatalf("recording the truth after the deadline: %v", err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Status != actoviq.StatusCancelled || info.Ledger[0].State != store.LedgerCommitted || info.Ledger[0].Resolution.Message != "the bank has no such payment" {
		t.Fatalf("%s %+v", info.Status, info.Ledger[0])
	}
}

// Resume on a finished run used to drop the decisions it was given
// silently.
func TestResumeFinishedRunRefusesDecisions(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	_, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops"}}})
	var fin *actoviq.RunFinishedError
	if !errors.As(err, &fin) || fin.Status != actoviq.StatusCompleted || !strings.Contains(err.Error(), "Runtime.Decide") {
		t.Fatalf("resume of a completed run with a decision: %v", err)
	}
	if res, err := s.rt.Resume(s.ctx, a, "r1", nil); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume without decisions: %+v %v", res, err)
	}
}

// failingStore fails the RunWrite that touches a given call, once.
type failingStore struct {
	store.Store
	call   string
	failed atomic.Bool
	writes atomic.Int32
}

func (f *failingStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	for _, w := range p.Ledger {
		if w.Entry.CallID == f.call && f.failed.CompareAndSwap(false, true) {
			// Known to have written nothing (an error of unknown outcome
			// would be read back and the write made again).
			return nil, &store.FullError{Err: errors.New("disk on fire")}
		}
	}
	f.writes.Add(1)
	return f.Store.RunWrite(ctx, p)
}

// A Decide with several decisions used to write them one by one: when a
// later write failed, the earlier decisions stayed recorded. They are one
// atomic write now.
func TestDecideSeveralIsAtomic(t *testing.T) {
	s := newSetup(t)
	fs := &failingStore{Store: s.st, call: "c2"}
	rt, err := actoviq.New(fs, &actoviq.Config{Clock: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`), call("c2", "pay", `{"amount":6}`)}},
		scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	fs.failed.Store(true) // let the run prepare both calls
	res, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// Both calls wait for approval (c2 as a build that asked for every
	// approval of a batch at once left it).
	en, _ := s.st.LedgerGet(s.ctx, &store.LedgerGetParams{Tenant: "default", RunID: "r1", CallID: "c2"})
	if en.State == store.LedgerPrepared {
		c2 := *en
		c2.State = store.LedgerAwaitingApproval
		if _, err := s.st.RunWrite(s.ctx, &store.RunWriteParams{Tenant: "default", RunID: "r1",
			Ledger: []store.LedgerWrite{{Entry: &c2, ExpectedRevision: en.Revision}}}); err != nil {
			t.Fatal(err)
		}
	}
	fs.failed.Store(false)
	decs := []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}, {CallID: "c2", Kind: actoviq.DecideReject, By: "alice", Reason: "no"}}
	if err := rt.Decide(s.ctx, "r1", decs...); err == nil {
		t.Fatal("the failing write did not fail the Decide")
	}
	info, _ := rt.Get(s.ctx, "r1")
	for _, en := range info.Ledger {
		if en.State != store.LedgerAwaitingApproval || en.Approval != nil {
			t.Fatalf("a failed Decide left call %s %s with approval %+v: not atomic", en.CallID, en.State, en.Approval)
		}
	}
	before := fs.writes.Load()
	if err := rt.Decide(s.ctx, "r1", decs...); err != nil {
		t.Fatal(err)
	}
	if n := fs.writes.Load() - before; n != 1 {
		t.Fatalf("two decisions took %d writes, want one", n)
	}
	info, _ = rt.Get(s.ctx, "r1")
	if info.Ledger[0].State != store.LedgerPrepared || info.Ledger[1].State != store.LedgerCommitted {
		t.Fatalf("after Decide: %s %s", info.Ledger[0].State, info.Ledger[1].State)
	}
}

// Cancel during a side effect used to end the run interrupted for
// reconciliation, although cancelled is final. It ends cancelled for good;
// the unsettled call stays reconcilable for the record.
func TestCancelDuringSideEffectIsFinal(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	defer close(pay.block)
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	type out struct {
		res *actoviq.RunResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
		done <- out{res, err}
	}()
	<-pay.started
	if err := s.rt.Cancel(s.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Status != actoviq.StatusCancelled {
		t.Fatalf("a run cancelled during a side effect: %+v %v, want cancelled", o.res, o.err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if info.Status != actoviq.StatusCancelled || info.Ledger[0].State != store.LedgerUnknown {
		t.Fatalf("stored %s, entry %s", info.Status, info.Ledger[0].State)
	}
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusCancelled || pay.count() != 1 {
		t.Fatalf("resume: %+v %v, %d calls", res, err, pay.count())
	}
	if err := s.rt.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops", Result: "paid 5"}); err != nil {
		t.Fatalf("the cancelled run's call is not reconcilable: %v", err)
	}
}

// waitCtx is a provider whose model call blocks until its context ends.
type waitCtx struct {
	*scripted.Provider
	entered chan struct{}
	block   atomic.Bool
}

func (w *waitCtx) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if w.block.Load() {
		w.entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return w.Provider.Generate(ctx, req)
}

func (w *waitCtx) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		if w.block.Load() {
			w.entered <- struct{}{}
			<-ctx.Done()
			yield(llm.StreamEvent{}, ctx.Err())
			return
		}
		for ev, err := range w.Provider.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Close used to end the runs it was driving cancelled, for good. It is a
// process shutting down: a run in a model call stays running and another
// runtime continues it at once; a run in a side effect stops interrupted
// for reconciliation, as after a crash.
func TestCloseLeavesRunsResumable(t *testing.T) {
	s := newSetup(t)
	w := &waitCtx{Provider: scripted.New(scripted.Turn{Text: "done"}), entered: make(chan struct{}, 1)}
	w.block.Store(true)
	a := agent(nil)
	a.Provider = w
	rt := s.runtime(t)
	errc := make(chan error, 1)
	go func() {
		_, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
		errc <- err
	}()
	<-w.entered
	rt.Close()
	if err := <-errc; !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("the drive stopped by Close: %v, want ErrClosed", err)
	}
	if _, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "r0"}); !errors.Is(err, actoviq.ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	// Stored as running; with no live process driving it, it reads stalled.
	if info.StoredStatus != actoviq.StatusRunning || info.Status != actoviq.StatusStalled {
		t.Fatalf("a run driven at Close ended %s (stored %s)", info.Status, info.StoredStatus)
	}
	w.block.Store(false)
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("another runtime's resume: %+v %v", res, err)
	}

	// During a side effect.
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	defer close(pay.block)
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	b := agent(p, pay)
	rt = s.runtime(t)
	type out struct {
		res *actoviq.RunResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := rt.Run(s.ctx, b, &actoviq.Input{RunID: "r2"})
		done <- out{res, err}
	}()
	<-pay.started
	rt.Close()
	o := <-done
	if o.err != nil || o.res.Status != actoviq.StatusInterrupted || o.res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		t.Fatalf("closed during a side effect: %+v %v, want interrupted for reconciliation", o.res, o.err)
	}
	res, err = s.runtime(t).Resume(s.ctx, b, "r2", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops", Result: "paid 5"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("another runtime's resume: %+v %v, %d calls", res, err, pay.count())
	}
}

// Requeue past the run's deadline used to record its decisions and queue
// the run, which then ended cancelled with its ledger changed. It ends the
// run cancelled, ledger untouched, and refuses the decisions, typed.
func TestRequeuePastDeadlineRefusesDecisions(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	a.Limits.RunTimeout = time.Hour
	if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	s.clock.Advance(2 * time.Hour)
	before, _ := s.rt.Get(s.ctx, "r1")
	err := s.rt.Requeue(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideApprove, By: "ops"})
	var fin *actoviq.RunFinishedError
	if !errors.As(err, &fin) || fin.Status != actoviq.StatusCancelled {
		t.Fatalf("Requeue past the deadline: %v, want a RunFinishedError (cancelled)", err)
	}
	after, _ := s.rt.Get(s.ctx, "r1")
	if after.StoredStatus != actoviq.StatusCancelled || after.Ledger[0].Revision != before.Ledger[0].Revision {
		t.Fatalf("stored %s, ledger rev %d -> %d", after.StoredStatus, before.Ledger[0].Revision, after.Ledger[0].Revision)
	}
}
