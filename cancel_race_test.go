package actoviq_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// cancelAtCreate runs a Cancel from another process (another runtime on
// the same store) the moment the run's create returns to Run, before the
// drive does anything else, and lets the drive go on once that Cancel has
// acted: taken the run's claim, or recorded its request for the drive.
type cancelAtCreate struct {
	store.Store
	runID   string
	cancel  func()
	acted   chan struct{}
	tried   chan struct{} // the drive's own ClaimAcquire of the run returned
	once    sync.Once
	triedMu sync.Once
}

func (s *cancelAtCreate) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	r, err := s.Store.RunCreate(ctx, p)
	if err == nil && p.Run.ID == s.runID {
		s.once.Do(func() {
			s.cancel()
			<-s.acted
		})
	}
	return r, err
}

func (s *cancelAtCreate) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	c, err := s.Store.ClaimAcquire(ctx, p)
	if p.Key == store.RunClaimKey(s.runID) {
		s.triedMu.Do(func() { close(s.tried) })
	}
	return c, err
}

// cancellerStore is the cancelling process's view of the store: it says
// when its Cancel acted. Having taken the run's claim, it holds it until
// the drive has tried to claim the run (the widest the window was).
type cancellerStore struct {
	store.Store
	runID string
	race  *cancelAtCreate
	drove chan struct{}
	once  sync.Once
}

func (s *cancellerStore) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	c, err := s.Store.ClaimAcquire(ctx, p)
	if err == nil && (p.Key == store.RunClaimKey(s.runID) || strings.HasPrefix(p.Key, "cancel:"+s.runID+":")) {
		s.once.Do(func() { close(s.race.acted) })
		if p.Key == store.RunClaimKey(s.runID) {
			select {
			case <-s.race.tried:
			case <-s.drove:
			}
		}
	}
	return c, err
}

// A Cancel from another process that arrives between the run's creation
// and anything its drive does cannot take the run from under Run: the run
// is created already claimed, the Cancel asks the drive, and Run returns
// the run's cancelled result (before, the Cancel could claim the run
// between its create and its claim, and Run returned RunHeldError naming
// the canceller). The payment the model asks for never runs.
func TestRunCancelledFromAnotherProcessAtItsCreate(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay"}
		m := newGate(0, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":7}`)}}, scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{pay},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		race := &cancelAtCreate{Store: st, runID: "r1", acted: make(chan struct{}), tried: make(chan struct{})}
		drove := make(chan struct{})
		canceller := &cancellerStore{Store: st, runID: "r1", race: race, drove: drove}
		driver := newRT(t, race, "A", time.Minute)
		other := newRT(t, canceller, "B", time.Minute)
		cancelled := make(chan error, 1)
		race.cancel = func() {
			go func() {
				err := other.Cancel(ctx, "r1")
				canceller.once.Do(func() { close(race.acted) }) // it returned without acting
				cancelled <- err
			}()
		}
		out := make(chan driveOut, 1)
		go func() {
			res, err := driver.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("pay").Items})
			close(drove)
			out <- driveOut{res, err}
		}()
		<-race.acted
		close(m.open) // the drive asks for the payment, which waits for an approval
		d := <-out
		if d.err != nil {
			t.Fatalf("Run lost to a Cancel from another process: %v (want the cancelled result)", d.err)
		}
		if d.res.Status != actoviq.StatusCancelled || d.res.Error == nil || d.res.Error.Code != actoviq.CodeCancelled {
			t.Fatalf("Run: %+v, want status cancelled with a %s error", d.res, actoviq.CodeCancelled)
		}
		if err := <-cancelled; err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		info, err := other.Get(ctx, "r1")
		if err != nil || info.Status != actoviq.StatusCancelled {
			t.Fatalf("the run after Run and Cancel: %+v %v", info, err)
		}
		if pay.count() != 0 {
			t.Fatalf("the payment ran %d times in a cancelled run", pay.count())
		}
		// The drive's claim was given up with its last write.
		c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("r1")})
		if err != nil || c.ExpiresAt.After(time.Now()) {
			t.Fatalf("the run's claim after its drive ended: %+v %v", c, err)
		}
	})
}

// A claim left under a new run's key (taken directly, not by a run: a
// run's claims go with it) does not stop Run: the run is created unclaimed
// and claimed as a resume claims, at the next epoch, and its drive still
// gives the claim up at its end.
func TestRunOverALeftClaim(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		left, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("r2"), Holder: "X", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: store.DefaultTenant,
			Fence: store.Fence{Key: left.Key, Holder: "X", Epoch: left.Epoch}}); err != nil {
			t.Fatal(err)
		}
		a := &actoviq.AgentSpec{ID: "a", Provider: scripted.New(scripted.Turn{Text: "done"}), Model: "scripted-1"}
		rt := newRT(t, st, "A", time.Minute)
		var evs []actoviq.Event
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r2", Items: input("hi").Items},
			actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) { evs = append(evs, ev) }))
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run over a left claim: %+v %v", res, err)
		}
		if len(evs) == 0 || evs[0].Type != actoviq.EvRunStarted || evs[0].Seq != 1 || !strings.Contains(string(evs[0].Data), `"epoch":2`) {
			t.Fatalf("first event: %+v", evs)
		}
		c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("r2")})
		if err != nil || c.Epoch != 2 || c.ExpiresAt.After(time.Now()) {
			t.Fatalf("the claim after the run: %+v %v", c, err)
		}
		// A live claim of another holder under a new run's key: refused
		// as held (as a resume would be), naming the holder.
		if _, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("r3"), Holder: "Y", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		_, err = rt.Run(ctx, a, &actoviq.Input{RunID: "r3", Items: input("hi").Items})
		var held *actoviq.RunHeldError
		if !errors.As(err, &held) || !strings.Contains(err.Error(), "Y") {
			t.Fatalf("Run under another holder's live claim: %v, want RunHeldError naming Y", err)
		}
	})
}

// A run created by Run starts with its run.started event (seq 1, epoch 1,
// this drive's holder), stored with the run, and ends with its claim given
// up by its last write.
func TestRunCreatedClaimed(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a := &actoviq.AgentSpec{ID: "a", Provider: scripted.New(scripted.Turn{Text: "done"}), Model: "scripted-1"}
		rt := newRT(t, st, "A", time.Minute)
		var sunk []actoviq.Event
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("hi").Items},
			actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
				if ev.Seq > 0 { // stored ones, not the ephemeral
					sunk = append(sunk, ev)
				}
			}))
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		stored, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r1"})
		if err != nil || len(stored) != 3 || len(sunk) != 3 {
			t.Fatalf("events: stored %d, sunk %d, %v", len(stored), len(sunk), err)
		}
		for i, ev := range stored {
			if sunk[i].ID != ev.ID || sunk[i].Seq != ev.Seq || sunk[i].Type != ev.Type || !sunk[i].Time.Equal(ev.Time) {
				t.Fatalf("event %d: sunk %+v, stored %+v", i, sunk[i], ev)
			}
		}
		if stored[0].Type != actoviq.EvRunStarted || stored[0].Seq != 1 || !strings.Contains(string(stored[0].Data), `"epoch":1`) ||
			!strings.Contains(string(stored[0].Data), `"holder":"A/`) || stored[0].TraceID == "" {
			t.Fatalf("run.started: %+v %s", stored[0], stored[0].Data)
		}
		c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey("r1")})
		if err != nil || c.Epoch != 1 || c.ExpiresAt.After(time.Now()) {
			t.Fatalf("the claim after the run: %+v %v", c, err)
		}
	})
}
