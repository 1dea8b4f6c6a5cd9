package actoviq_test

// Adversarial review (second) of issues 21 and 23: probes of this
// session's promises through the public API.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// A place given back by a failed Spawn leaves a hole before the places
// other children hold. A retried Spawn of a child that exists (its first
// answer was lost) must keep the child's one place, not take the hole as
// a second one: the tree, with one child and MaxChildren 2, must still
// accept another child.
func TestReview23RetriedSpawnTakesNoSecondPlace(t *testing.T) {
	ctx := context.Background()
	st, rt := spawnTree(t, "root.a")
	opts := &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 2}}
	good := childAgent("bg", scripted.New(scripted.Turn{Text: "x"}))
	failed := make(chan error, 1)
	go func() {
		_, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.a"}, opts)
		failed <- err
	}()
	<-st.entered // root.a holds place 0
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.b"}, opts); err != nil {
		t.Fatalf("first child: %v", err)
	}
	close(st.release)
	if err := <-failed; err == nil {
		t.Fatal("the failing Spawn returned no error")
	}
	// root.b's caller did not see its answer and asks again.
	id, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.b"}, opts)
	t.Logf("retried Spawn of root.b: %q %v", id, err)
	kids, err := st.RunList(ctx, &store.RunListParams{Tenant: "default", ParentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 {
		t.Fatalf("%d children, want 1", len(kids))
	}
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.c"}, opts); err != nil {
		t.Fatalf("the tree has 1 child and MaxChildren 2, yet Spawn is refused: %v", err)
	}
	if _, err := rt.Spawn(ctx, "root", good, &actoviq.Input{RunID: "root.d"}, opts); err == nil {
		t.Fatal("a third child was spawned under MaxChildren 2")
	}
}

// A run driven by a process of this host that died (its lease not yet
// expired) is listed by the inbox as stalled, since the pid is gone: the
// totals must count it too, or the console shows a stalled run under a
// total of 0 stalled.
func TestReview21InboxTotalsCountADeadLocalHolder(t *testing.T) {
	ctx := context.Background()
	sq, err := storesqlite.Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skip("no hostname: no local holder")
	}
	// The drive below holds its claim under the name of a process of this
	// host that has exited: to the inbox, a driver killed mid-run.
	dead := newRT(t, sq, fmt.Sprintf("%s:%d:1.x", host, gone.Process.Pid), time.Hour)
	m := newGate(0, scripted.Turn{Text: "done"})
	drove := make(chan driveOut, 1)
	go func() {
		res, err := dead.Run(ctx, &actoviq.AgentSpec{ID: "a", Instructions: "x", Provider: m, Model: "scripted-1"}, &actoviq.Input{RunID: "r1"})
		drove <- driveOut{res, err}
	}()
	<-m.entered
	defer func() { close(m.open); <-drove }()
	rt := newRT(t, sq, "B", time.Hour)
	page, err := rt.Inbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int64{}
	for _, r := range page.Runs {
		listed[r.Kind]++
	}
	t.Logf("listed %v, totals %v (total %d)", listed, page.Totals, page.Total)
	if listed[actoviq.InboxKindStalled] != 1 {
		t.Fatalf("the run of a dead local holder is not listed as stalled: %v", listed)
	}
	if page.Totals[actoviq.InboxKindStalled] != listed[actoviq.InboxKindStalled] || page.Total != int64(len(page.Runs)) {
		t.Fatalf("inbox lists %v but its totals say %v (total %d)", listed, page.Totals, page.Total)
	}
}
