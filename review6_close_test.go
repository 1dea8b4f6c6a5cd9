package actoviq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// closeAtCall closes the runtime at the n-th store call after armed.
type closeAtCall struct {
	store.Store
	rt    *actoviq.Runtime
	armed atomic.Bool
	n, at atomic.Int64
}

func (s *closeAtCall) hit(ctx context.Context) error {
	if !s.armed.Load() || s.n.Add(1) != s.at.Load() {
		return nil
	}
	go s.rt.Close()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
		return nil
	}
}
func (s *closeAtCall) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunGet(ctx, p)
}
func (s *closeAtCall) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.LedgerList(ctx, p)
}
func (s *closeAtCall) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunWrite(ctx, p)
}
func (s *closeAtCall) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.ClaimAcquire(ctx, p)
}
func (s *closeAtCall) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.SessionLoad(ctx, p)
}
func (s *closeAtCall) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	if err := s.hit(ctx); err != nil {
		return 0, err
	}
	return s.Store.SessionAppend(ctx, p)
}

// A Close at any store call of a Resume that approves a side effect reads
// as ErrClosed (or the run's result, when the drive finished first), and
// the run stays resumable: another runtime completes it, paying once.
func TestReview6CloseAtEveryStoreCallOfResume(t *testing.T) {
	for at := int64(1); at <= 40; at++ {
		base := storemem.New(nil)
		st := &closeAtCall{Store: base}
		rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op"})
		if err != nil {
			t.Fatal(err)
		}
		st.rt = rt
		pay := &payTool{name: "pay"}
		a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
			scripted.Turn{Text: "paid"}), pay)
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
		ctx := context.Background()
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "rA", SessionID: "s1", Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("run: %+v %v", res, err)
		}
		st.at.Store(at)
		st.armed.Store(true)
		res, err = rt.Resume(ctx, a, "rA", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}}})
		hit := st.n.Load() >= at
		rt.Close()
		if !hit {
			t.Logf("Resume made %d store calls of those wrapped: Close tried at each", at-1)
			break // fewer store calls than at
		}
		t.Logf("close at %d: %v %v", at, res != nil && res.Status == actoviq.StatusCompleted, err)
		if err != nil && !errors.Is(err, actoviq.ErrClosed) {
			t.Errorf("close at store call %d: Resume: %v, want ErrClosed or the run's result", at, err)
		}
		rt2, err2 := actoviq.New(base, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op2"})
		if err2 != nil {
			t.Fatal(err2)
		}
		info, _ := rt2.Get(ctx, "rA")
		if info != nil && info.Status != actoviq.StatusCompleted {
			r2, e2 := rt2.Resume(ctx, a, "rA", nil)
			if e2 != nil || r2.Status != actoviq.StatusCompleted {
				// an approval lost with the close is asked again: approve once more
				r2, e2 = rt2.Resume(ctx, a, "rA", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}}})
				if e2 != nil || r2.Status != actoviq.StatusCompleted {
					t.Errorf("close at store call %d (Resume: %v %v): the run did not complete afterwards: %+v %v (status before %s)", at, res, err, r2, e2, info.Status)
				}
			}
		}
		rt2.Close()
		if n := len(pay.calls); n > 1 {
			t.Errorf("close at store call %d: pay ran %d times", at, n)
		}
	}
}

// cancelAtCall cancels the Resume's context at the n-th store call.
type cancelAtCall struct {
	closeAtCall
	cancel context.CancelFunc
}

func (s *cancelAtCall) hit(ctx context.Context) error {
	if !s.armed.Load() || s.n.Add(1) != s.at.Load() {
		return nil
	}
	s.cancel()
	return ctx.Err()
}
func (s *cancelAtCall) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunGet(ctx, p)
}
func (s *cancelAtCall) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.LedgerList(ctx, p)
}
func (s *cancelAtCall) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.RunWrite(ctx, p)
}
func (s *cancelAtCall) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.ClaimAcquire(ctx, p)
}
func (s *cancelAtCall) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if err := s.hit(ctx); err != nil {
		return nil, err
	}
	return s.Store.SessionLoad(ctx, p)
}

// A caller's cancellation at any store call of a Resume that approves a
// side effect: the run ends cancelled, completes, or (cancelled before
// the drive started) keeps waiting; never left running, never paid twice.
func TestReview6CancelAtEveryStoreCallOfResume(t *testing.T) {
	for at := int64(1); at <= 40; at++ {
		base := storemem.New(nil)
		st := &cancelAtCall{closeAtCall: closeAtCall{Store: base}}
		rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: time.Minute, Holder: "op"})
		if err != nil {
			t.Fatal(err)
		}
		pay := &payTool{name: "pay"}
		a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "pay", `{"amount":3}`)}},
			scripted.Turn{Text: "paid"}), pay)
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
		res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "rA", SessionID: "s1", Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("run: %+v %v", res, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		st.cancel = cancel
		st.at.Store(at)
		st.armed.Store(true)
		res, err = rt.Resume(ctx, a, "rA", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "k1", Kind: actoviq.DecideApprove, By: "op"}}})
		cancel()
		hit := st.n.Load() >= at
		st.armed.Store(false)
		info, gerr := rt.Get(context.Background(), "rA")
		rt.Close()
		if gerr != nil {
			t.Fatal(gerr)
		}
		if !hit {
			t.Logf("Resume made %d store calls of those wrapped: cancelled at each", at-1)
			break
		}
		t.Logf("cancel at %d: stored %s; Resume %v %v", at, info.Status, res != nil && res.Status != "", err)
		if info.Status == actoviq.StatusRunning {
			t.Errorf("cancel at store call %d: run left running (Resume: %+v %v)", at, res, err)
		}
		if n := len(pay.calls); n > 1 {
			t.Errorf("cancel at store call %d: pay ran %d times", at, n)
		}
	}
}
func (s *cancelAtCall) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	if err := s.hit(ctx); err != nil {
		return 0, err
	}
	return s.Store.SessionAppend(ctx, p)
}
