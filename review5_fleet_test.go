package actoviq_test

// Review 5A: attacks on this session's write path through the public API:
// the engine handing its values over to the memory store
// (internal/handoff), runs created already claimed, and the claim released
// in a drive's last write. On the memory store, a SQLite file and, with
// ACTOVIQ_TEST_PG_URL, PostgreSQL.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// frozenStore checks, around every write of one run, that nothing the
// store holds for that run changed without a write: the stored run (its
// checkpoint and log), its ledger entries and its events read the same
// just before a write as just after the previous one; and across a write,
// an entry whose revision did not move and every earlier event are
// unchanged. A value the engine handed over and then changed in place
// (or a caller of the store changing what a result shares) shows here.
type frozenStore struct {
	store.Store
	t     *testing.T
	mu    sync.Mutex
	last  map[string]*runSnap
	bad   []string
	write int
}

type runSnap struct {
	run     string
	entries map[string]string // call id -> entry JSON
	revs    map[string]int64
	events  []string
}

func (s *frozenStore) snap(runID string) *runSnap {
	ctx := context.Background()
	out := &runSnap{entries: map[string]string{}, revs: map[string]int64{}}
	r, err := s.Store.RunGet(ctx, &store.RunGetParams{Tenant: store.DefaultTenant, ID: runID})
	if err != nil {
		s.t.Errorf("RunGet %s: %v", runID, err)
		return out
	}
	b, _ := json.Marshal(struct {
		Rev int64
		CP  json.RawMessage
		Log []json.RawMessage
	}{r.Revision, r.Checkpoint, r.Log})
	out.run = string(b)
	ens, err := s.Store.LedgerList(ctx, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: runID})
	if err != nil {
		s.t.Errorf("LedgerList %s: %v", runID, err)
	}
	for _, en := range ens {
		b, _ := json.Marshal(en)
		out.entries[en.CallID], out.revs[en.CallID] = string(b), en.Revision
	}
	evs, err := s.Store.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: runID, Limit: 10000})
	if err != nil {
		s.t.Errorf("EventList %s: %v", runID, err)
	}
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		out.events = append(out.events, string(b))
	}
	return out
}

// compare reports what changed from a to b; across says a write came
// between them (entries whose revision moved, the run and new events may
// differ then).
func (s *frozenStore) compare(when string, a, b *runSnap, across bool) {
	if !across && a.run != b.run {
		s.bad = append(s.bad, fmt.Sprintf("%s: the run changed without a write:\n was %s\n now %s", when, a.run, b.run))
	}
	for id, ea := range a.entries {
		if across && a.revs[id] != b.revs[id] {
			continue
		}
		if eb := b.entries[id]; ea != eb {
			s.bad = append(s.bad, fmt.Sprintf("%s: ledger entry %s changed at the same revision:\n was %s\n now %s", when, id, ea, eb))
		}
	}
	for i, ev := range a.events {
		if i >= len(b.events) || b.events[i] != ev {
			now := "<gone>"
			if i < len(b.events) {
				now = b.events[i]
			}
			s.bad = append(s.bad, fmt.Sprintf("%s: stored event %d changed:\n was %s\n now %s", when, i+1, ev, now))
		}
	}
	if !across && len(a.events) != len(b.events) {
		s.bad = append(s.bad, fmt.Sprintf("%s: %d events became %d without a write", when, len(a.events), len(b.events)))
	}
}

func (s *frozenStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write++
	n := s.write
	if prev := s.last[p.RunID]; prev != nil {
		s.compare(fmt.Sprintf("before write %d", n), prev, s.snap(p.RunID), false)
	}
	before := s.snap(p.RunID)
	res, err := s.Store.RunWrite(ctx, p)
	after := s.snap(p.RunID)
	s.compare(fmt.Sprintf("across write %d", n), before, after, true)
	s.last[p.RunID] = after
	return res, err
}

// check compares the run with the store's state after its last write.
func (s *frozenStore) check(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.last[runID]; prev != nil {
		s.compare("after the drive", prev, s.snap(runID), false)
	}
	for _, b := range s.bad {
		s.t.Error(b)
	}
	s.bad = nil
}

// A run through the engine's write paths (a parallel group of reads, a
// side effect stopped for approval, a tool error, an approval and resume,
// a final answer), with sinks that keep every event: nothing stored
// changes except by a write. On the memory store the engine hands its
// values over (internal/handoff), so an entry, event or JSON the engine
// changed after its write would change the store's copy.
func TestReview5StoredRunChangesOnlyByWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		fs := &frozenStore{Store: st, t: t, last: map[string]*runSnap{}}
		r1, r2 := &payTool{name: "look", effect: tool.Read}, &payTool{name: "peek", effect: tool.Read}
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		bad := &payTool{name: "fail", effect: tool.IdempotentWrite, fail: errors.New("card declined")}
		m := scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("l1", "look", `{"amount":1}`), call("l2", "peek", `{"amount":2}`),
				call("p1", "pay", `{"amount":3,"api_key":"sk-SECRET-123"}`), call("f1", "fail", `{"amount":4}`)}},
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("l3", "look", `{"amount":5}`)}},
			scripted.Turn{Text: "done"})
		a := &actoviq.AgentSpec{ID: "payer", Provider: m, Model: "scripted-1", Tools: []toolT{r1, r2, pay, bad},
			Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
		rt := newRT(t, fs, "A", time.Minute)
		var kept []actoviq.Event
		sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) { kept = append(kept, ev) })
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "fz", Items: input("pay").Items}, sink)
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		fs.check("fz")
		res, err = rt.Resume(ctx, a, "fz", &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{sink},
			Decisions: []actoviq.Decision{{CallID: "p1", Kind: actoviq.DecideApprove, By: "op", Reason: "ok"}}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Resume: %+v %v", res, err)
		}
		fs.check("fz")
		if n := pay.count(); n != 1 {
			t.Fatalf("pay ran %d times", n)
		}
		ens, err := st.LedgerList(ctx, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: "fz"})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "fz", Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		all, _ := json.Marshal(struct {
			E []*store.LedgerEntry
			V []*store.EventRecord
		}{ens, evs})
		if bytes.Contains(all, []byte("sk-SECRET-123")) {
			t.Fatalf("a secret argument is stored in clear")
		}
	})
}

// A sink owns the events it is given ("ev and its Data are the sink's to
// keep"): a sink that reuses an event's Data buffer must change neither
// the stored event nor what the next sink sees.
func TestReview5SinkOwnsEventData(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		look := &payTool{name: "look", effect: tool.Read}
		a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "look", `{"amount":1}`)}},
			scripted.Turn{Text: "done"}), look)
		rt := newRT(t, st, "A", time.Minute)
		var seen []string
		scribble := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
			for i := range ev.Data {
				ev.Data[i] = ' '
			}
		})
		record := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
			if ev.Seq > 0 {
				seen = append(seen, string(ev.Data))
			}
		})
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "sk", Items: input("go").Items}, scribble, record)
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("Run: %+v %v", res, err)
		}
		for i, s := range seen {
			if strings.TrimSpace(s) == "" {
				t.Errorf("the second sink got event %d's Data blanked by the first sink", i+1)
			}
		}
		evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "sk", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if !json.Valid(ev.Data) {
				t.Errorf("stored event %d (%s) changed by a sink: %q", ev.Seq, ev.Type, ev.Data)
			}
		}
	})
}

// leaseGoneAtCreate lets the claim a run is created with lapse at once
// and another process take the run over and drive it to its end, before
// Run's drive does anything.
type leaseGoneAtCreate struct {
	store.Store
	runID    string
	takeover func()
	once     sync.Once
}

func (s *leaseGoneAtCreate) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if p.Holder != "" && p.Run.ID == s.runID {
		r, err := s.Store.RunCreate(ctx, p)
		if err == nil {
			// The lease lapses: as if the process stalled past its TTL.
			f := store.Fence{Key: store.RunClaimKey(p.Run.ID), Holder: p.Holder, Epoch: store.CreatedClaimEpoch}
			if rerr := s.Store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: p.Run.Tenant, Fence: f}); rerr != nil {
				panic(rerr)
			}
			s.once.Do(s.takeover)
		}
		return r, err
	}
	return s.Store.RunCreate(ctx, p)
}

// A run whose created claim expires at once is taken over by another
// process, which runs its side effect and ends it. The first drive must
// not run the side effect again, nor write anything: its fence is stale.
func TestReview5LeaseLostRightAfterCreate(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		script := func() *scripted.Provider {
			return scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":9}`)}},
				scripted.Turn{Text: "paid"})
		}
		b := newRT(t, st, "B", time.Minute)
		var bres *actoviq.RunResult
		var berr error
		gone := &leaseGoneAtCreate{Store: st, runID: "lz", takeover: func() {
			bres, berr = b.Resume(ctx, agent(script(), pay), "lz", nil)
		}}
		a := newRT(t, gone, "A", time.Minute)
		res, err := a.Run(ctx, agent(script(), pay), &actoviq.Input{RunID: "lz", Items: input("pay").Items})
		if berr != nil || bres == nil || bres.Status != actoviq.StatusCompleted {
			t.Fatalf("the takeover: %+v %v", bres, berr)
		}
		if err == nil {
			t.Fatalf("the first drive, fenced out from its start, returned %+v without an error", res)
		}
		if n := pay.count(); n != 1 {
			t.Fatalf("the side effect ran %d times", n)
		}
		info, ierr := b.Get(ctx, "lz")
		if ierr != nil || info.Status != actoviq.StatusCompleted {
			t.Fatalf("Get: %+v %v", info, ierr)
		}
		evs, _ := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "lz", Limit: 1000})
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), `"holder":"A/`) && ev.Type != actoviq.EvRunStarted {
				t.Errorf("the fenced drive stored %s: %s", ev.Type, ev.Data)
			}
		}
	})
}
