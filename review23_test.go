package actoviq_test

// Adversarial review of issue 23: probes of the fixed promises.

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// A Spawn that writes no child (its agent is invalid, or its run id is
// taken) must not spend one of the tree's MaxChildren places.
func TestReview23FailedSpawnSpendsNoPlace(t *testing.T) {
	ctx := context.Background()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt := newRT(t, st, "A", time.Minute)
	if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
		t.Fatal(err)
	}
	opts := &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 1}}
	good := childAgent("bg", scripted.New(scripted.Turn{Text: "x"}))
	bad := &actoviq.AgentSpec{ID: "bad", Provider: scripted.New(scripted.Turn{Text: "x"}), Model: ""}
	_, err1 := rt.Spawn(ctx, "root", bad, &actoviq.Input{RunID: "root.bad"}, opts)
	_, err2 := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root"}, opts) // id taken by the parent itself
	t.Logf("invalid agent: %v; taken id: %v", err1, err2)
	kids, err := st.RunList(ctx, &store.RunListParams{Tenant: "default", ParentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 0 {
		t.Fatalf("%d children written by failed Spawns", len(kids))
	}
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.k1"}, opts); err != nil {
		t.Fatalf("the tree has no child, MaxChildren 1, yet Spawn is refused: %v", err)
	}
}

// A background child spawned with the run id an agent tool's call would
// give its child must not become that call's child.
func TestReview23SpawnedIDIsNotACallsChild(t *testing.T) {
	ctx := context.Background()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt := newRT(t, st, "A", time.Minute)
	helper := childAgent("helper", scripted.New(scripted.Turn{Text: "answer"}))
	m := newGate(0, scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "helper", `{"input":"good"}`)}}, scripted.Turn{Text: "done"})
	parent := &actoviq.AgentSpec{ID: "payer", Instructions: "pay", Provider: m, Model: "scripted-1", Tools: []toolT{mustAgentTool(t, helper, nil)}}
	drove := make(chan driveOut, 1)
	go func() {
		res, err := rt.Run(ctx, parent, &actoviq.Input{RunID: "p", Items: input("go").Items})
		drove <- driveOut{res, err}
	}()
	<-m.entered
	id, err := rt.Spawn(ctx, "p", helper, &actoviq.Input{RunID: actoviq.ChildRunID("p", "c1"), Items: input("evil").Items}, nil)
	t.Logf("Spawn: %q %v", id, err)
	close(m.open)
	d := <-drove
	t.Logf("parent: %+v %v", d.res, d.err)
	kids, _ := st.RunList(ctx, &store.RunListParams{Tenant: "default", ParentID: "p"})
	for _, k := range kids {
		t.Logf("child %s status %s", k.ID, k.Status)
	}
	if err != nil {
		return // refusing the Spawn also keeps the call's child its own
	}
	if d.err == nil && d.res.Status == actoviq.StatusCompleted && len(kids) == 1 {
		t.Fatalf("the call c1 took the spawned background child %s (input 'evil') as its own child: %d child runs for a Spawn and a call", kids[0].ID, len(kids))
	}
	if len(kids) != 1 || kids[0].Status != store.RunQueued {
		t.Fatalf("the spawned background child was driven by the parent's call: %d children, %v", len(kids), kids)
	}
}

// createFailStore fails RunCreate, as a store error after Spawn took its
// place in the tree's budget: the next one once armed, and the one of run
// gateID, which first closes entered and waits for release (a failing
// Spawn that others overtake).
type createFailStore struct {
	store.Store
	armed   atomic.Bool
	gateID  string
	entered chan struct{}
	release chan struct{}
}

func (s *createFailStore) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if s.gateID != "" && p.Run != nil && p.Run.ID == s.gateID {
		close(s.entered)
		<-s.release
		return nil, errors.New("the store failed the write")
	}
	if s.armed.CompareAndSwap(true, false) {
		return nil, errors.New("the store failed the write")
	}
	return s.Store.RunCreate(ctx, p)
}

// spawnTree is a runtime over a SQLite file behind a createFailStore
// gating run gateID ("" for none), with the run "root" done, ready to
// Spawn children under it.
func spawnTree(t *testing.T, gateID string) (*createFailStore, *actoviq.Runtime) {
	t.Helper()
	sq, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := &createFailStore{Store: sq, gateID: gateID, entered: make(chan struct{}), release: make(chan struct{})}
	rt := newRT(t, st, "A", time.Minute)
	if _, err := rt.Run(context.Background(), agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
		t.Fatal(err)
	}
	return st, rt
}

// The review's leftover: a Spawn whose child write fails after it took a
// place of MaxChildren (a store error) kept the place for good, so the
// tree, with no child, refused the next Spawn. The place is given back when
// no child with that id exists.
func TestSpawnWhoseWriteFailsSpendsNoPlace(t *testing.T) {
	ctx := context.Background()
	st, rt := spawnTree(t, "")
	opts := &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 1}}
	good := childAgent("bg", scripted.New(scripted.Turn{Text: "x"}))
	st.armed.Store(true)
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.k0"}, opts); err == nil {
		t.Fatal("a Spawn whose write failed returned no error")
	}
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.k1"}, opts); err != nil {
		t.Fatalf("the tree has no child, MaxChildren 1, yet Spawn is refused: %v", err)
	}
	// The place is the child's now: another child is refused.
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.k2"}, opts); err == nil {
		t.Fatal("a second child was spawned under MaxChildren 1")
	}
}
