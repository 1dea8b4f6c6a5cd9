package actoviq_test

// Leftovers of issue 23 (leftovers-4): a prune keeps a tree while any run
// of it is unfinished, and a Spawn refused because a prune removed its
// parent leaves no place row of the tree's budget behind. On the memory
// store, a SQLite file and, with ACTOVIQ_TEST_PG_URL, PostgreSQL.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A finished root whose finished child has a queued grandchild is kept by
// a prune (with its child and every other finished branch), so that the
// grandchild can still spawn under the tree's budget. On main the prune
// removed the root (its only child was finished) and the grandchild's
// Spawn failed with "budget of tree root: not found".
func TestPruneKeepsTheTreeOfARunningGrandchild(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		opts := &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 5}}
		if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"root.k", "root.b"} {
			bg := childAgent("bg", scripted.New(scripted.Turn{Text: "done " + id}))
			if _, err := rt.Spawn(ctx, "root", bg, &actoviq.Input{RunID: id}, opts); err != nil {
				t.Fatal(err)
			}
			if res, err := rt.Resume(ctx, bg, id, nil); err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("child %s: %+v %v", id, res, err)
			}
		}
		if _, err := rt.Spawn(ctx, "root.k", childAgent("bg", scripted.New()), &actoviq.Input{RunID: "root.k.g"}, opts); err != nil {
			t.Fatal(err)
		}
		if got := pruneAll(t, st); len(got) != 0 {
			t.Fatalf("pruned %v from a tree whose grandchild is queued", got)
		}
		if _, err := rt.Spawn(ctx, "root.k.g", childAgent("bg", scripted.New()), &actoviq.Input{RunID: "root.k.g.1"}, opts); err != nil {
			t.Fatalf("the grandchild cannot spawn after a prune: %v", err)
		}
		// Once every run of the tree ended, the whole tree goes.
		for _, id := range []string{"root.k.g.1", "root.k.g"} {
			if err := rt.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		got := pruneAll(t, st)
		slices.Sort(got)
		if want := []string{"root", "root.b", "root.k", "root.k.g", "root.k.g.1"}; !slices.Equal(got, want) {
			t.Fatalf("pruned %v once the tree ended, want %v", got, want)
		}
	})
}

// pruneBeforePlace prunes every finished run just before the first place
// of tree root's budget is taken: after Spawn read the parent and the
// tree's usage, before its place and its child's write.
type pruneBeforePlace struct {
	store.Store
	t      *testing.T
	root   string
	pruned []string
}

func (s *pruneBeforePlace) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if strings.HasPrefix(p.Key, "children:"+s.root+":") && s.pruned == nil {
		s.pruned = pruneAll(s.t, s.Store)
	}
	return s.Store.ClaimAcquire(ctx, p)
}

// A Spawn whose parent a prune removes before it takes its place in the
// tree's budget is refused, and no row of that place is left in the
// store. On main the place was written anew after the prune and, the
// Spawn refused, released: an expired row of a removed tree stayed for
// good.
func TestSpawnRefusedByAPruneLeavesNoPlace(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		racing := &pruneBeforePlace{Store: st, t: t, root: "root"}
		rt2 := newRT(t, racing, "B", time.Minute)
		_, err := rt2.Spawn(ctx, "root", childAgent("bg", scripted.New(scripted.Turn{Text: "x"})), &actoviq.Input{RunID: "root.k1"},
			&actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 2}})
		if len(racing.pruned) != 1 || !errors.Is(err, actoviq.ErrNotFound) {
			t.Fatalf("pruned %v; Spawn = %v, want the parent pruned and the Spawn refused with ErrNotFound", racing.pruned, err)
		}
		for _, k := range []string{"children:root:0", "children:root:1"} {
			if c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: k}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("place %s of the removed tree is stored after the refused Spawn: %+v %v", k, c, err)
			}
		}
	})
}
