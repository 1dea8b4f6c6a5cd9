package actoviq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// slowStore is a store whose every run write takes `took` on the
// runtime's clock: the write advances that clock (the store keeps its own,
// so no claim expires).
type slowStore struct {
	store.Store
	clock *fakeClock
	took  time.Duration
}

func (s *slowStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	s.clock.Advance(s.took)
	return s.Store.RunWrite(ctx, p)
}

// eventLog keeps the events a sink receives.
type eventLog struct {
	mu  sync.Mutex
	evs []actoviq.Event
}

func (l *eventLog) Emit(_ context.Context, ev actoviq.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) of(typ string) []actoviq.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []actoviq.Event
	for _, ev := range l.evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// The issue saw, with a 1 ms lease and no faults, 5 of 10 runs stop for
// reconciliation with no word that the lease is shorter than a store
// write. The runtime measures its store round trips now and says when one
// does not fit the lease (LeaseSafeMultiple of them must): Runtime.
// LeaseWarning, a run.lease_short event, and a warning in Work's log. A
// round trip that fits says nothing.
func TestLeaseShorterThanAStoreWriteIsReported(t *testing.T) {
	const lease = time.Minute
	for _, tc := range []struct {
		name string
		took time.Duration
		warn bool
	}{
		{"fits", lease / actoviq.LeaseSafeMultiple, false},
		{"too slow", lease/actoviq.LeaseSafeMultiple + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rtClock := &fakeClock{now: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)}
			stClock := &fakeClock{now: rtClock.now}
			st := &slowStore{Store: storemem.New(&storemem.Config{Clock: stClock.Now}), clock: rtClock, took: tc.took}
			evs := &eventLog{}
			var logBuf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logBuf, nil))
			rt, err := actoviq.New(st, &actoviq.Config{LeaseTTL: lease, Clock: rtClock.Now, Sinks: []actoviq.EventSink{evs}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			a := agent(scripted.New(scripted.Turn{Text: "one"}, scripted.Turn{Text: "two"}))
			res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: input("go").Items})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("run: %+v %v", res, err)
			}
			// A worker's log says it too.
			if err := rt.Register(a); err != nil {
				t.Fatal(err)
			}
			if _, err := rt.Enqueue(ctx, a, &actoviq.Input{RunID: "r2", Items: input("go").Items}); err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- rt.Work(wctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond, Logger: logger})
			}()
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			out, err := rt.Wait(waitCtx, "r2")
			stop()
			if werr := <-done; werr != nil && !errors.Is(werr, context.Canceled) {
				t.Fatal(werr)
			}
			if err != nil || out.Status != actoviq.StatusCompleted {
				t.Fatalf("queued run: %+v %v", out, err)
			}

			w := rt.LeaseWarning()
			short := evs.of(actoviq.EvRunLeaseShort)
			logged := strings.Count(logBuf.String(), "lease too short for the store")
			if !tc.warn {
				if w != nil || len(short) != 0 || logged != 0 {
					t.Fatalf("writes of %s under a %s lease: warning %+v, %d run.lease_short events, %d log lines; want none",
						tc.took, lease, w, len(short), logged)
				}
				return
			}
			if w == nil || w.Op != "write" || w.Took != tc.took || w.LeaseTTL != lease || w.Suggested != tc.took*actoviq.LeaseSafeMultiple {
				t.Fatalf("LeaseWarning after writes of %s under a %s lease: %+v", tc.took, lease, w)
			}
			if !strings.Contains(w.String(), "set Config.LeaseTTL to at least "+w.Suggested.String()) {
				t.Fatalf("warning text: %s", w)
			}
			// Every write took as long: one event for the first, none for
			// the others (no flood), and one log line.
			if len(short) != 1 || short[0].RunID != "r1" {
				t.Fatalf("run.lease_short events: %+v; want one, for r1", short)
			}
			pl, err := short[0].Payload()
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := pl.(*actoviq.LeaseShortData); !ok || d.Took != tc.took || d.Op != "write" {
				t.Fatalf("run.lease_short payload: %#v", pl)
			}
			if logged != 1 || !strings.Contains(logBuf.String(), "level=WARN") {
				t.Fatalf("Work's log has %d lease warnings: %s", logged, logBuf.String())
			}
		})
	}
}

// A store round trip that takes longer than a third of the lease is
// reported: here a clock that moves 30 s at each reading makes every store
// call of the run last 30 s, under a 1 min lease.
func ExampleRuntime_LeaseWarning() {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	slowClock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(30 * time.Second)
		return now
	}
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{LeaseTTL: time.Minute, Clock: slowClock})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	a := &actoviq.AgentSpec{ID: "greeter", Model: "scripted-1", Provider: scripted.New(scripted.Turn{Text: "hello"})}
	if _, err := rt.Run(context.Background(), a, nil); err != nil {
		panic(err)
	}
	if w := rt.LeaseWarning(); w != nil {
		fmt.Printf("a %s took %s under a %s lease; suggested: %s\n", w.Op, w.Took, w.LeaseTTL, w.Suggested)
	}
	// Output: a claim took 30s under a 1m0s lease; suggested: 1m30s
}
