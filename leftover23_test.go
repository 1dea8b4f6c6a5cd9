package actoviq_test

// Leftovers of issues 21 and 23 (review-21-23 items 3 and 4): a prune of a
// finished tree takes its MaxChildren places with it, and a Spawn racing
// the prune of its parent leaves no child without a parent. On the memory
// store, a SQLite file and, with ACTOVIQ_TEST_PG_URL, PostgreSQL.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// eachBackend runs fn on the memory store, a SQLite file and, when
// ACTOVIQ_TEST_PG_URL is set, a fresh PostgreSQL schema.
func eachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, storemem.New(nil)) })
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteStore(t)) })
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("ACTOVIQ_TEST_PG_URL")
		if url == "" {
			t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
		}
		raw := make([]byte, 6)
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		schema := "t_left_" + hex.EncodeToString(raw)
		st, err := storepg.Open(context.Background(), url, &storepg.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			st.Close()
		})
		fn(t, st)
	})
}

// pruneAll removes every finished run (a cut-off in the future).
func pruneAll(t *testing.T, st store.Store) []string {
	t.Helper()
	var out []string
	var after *store.RunCursor
	for {
		res, err := st.RunPrune(context.Background(), &store.RunPruneParams{Tenant: store.DefaultTenant,
			FinishedBefore: time.Now().Add(time.Hour), Limit: 100, After: after})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.RunIDs...)
		if !res.More {
			return out
		}
		if res.Last != nil {
			after = res.Last
		}
	}
}

// A finished tree that a prune removes takes its MaxChildren places (and
// its cancel requests) with it: a new run that reuses the root's id may
// spawn its own children, and no claim of the old tree is left in the
// store. On main the places stayed (100 years) and the new root was
// refused "the run tree already has 1 child runs, its budget".
func TestPruneRemovesTheTreesChildPlaces(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		opts := &actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 1}}
		if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		kid, err := rt.Spawn(ctx, "root", childAgent("bg", scripted.New(scripted.Turn{Text: "x"})), &actoviq.Input{RunID: "root.k1"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Cancel(ctx, kid); err != nil {
			t.Fatal(err)
		}
		// A cancel request of the root's drive, as another process leaves
		// one (it expires, but its row stays until the run goes).
		if _, err := st.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: store.DefaultTenant,
			Key: "cancel:root:1", Holder: "B", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		place := "children:root:0"
		if _, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: place}); err != nil {
			t.Fatalf("the child holds no place before the prune: %v", err)
		}
		if got := pruneAll(t, st); len(got) != 2 {
			t.Fatalf("pruned %v, want root and its child", got)
		}
		for _, k := range []string{place, "cancel:root:1", store.RunClaimKey("root")} {
			if c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: k}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("claim %s of the pruned tree is still stored: %+v %v", k, c, err)
			}
		}
		// A new tree under the old root's id has its whole budget.
		if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root again"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Spawn(ctx, "root", childAgent("bg", scripted.New(scripted.Turn{Text: "x"})), &actoviq.Input{RunID: "root.k2"}, opts); err != nil {
			t.Fatalf("the new tree's first child is refused: %v", err)
		}
		if _, err := rt.Spawn(ctx, "root", childAgent("bg", scripted.New(scripted.Turn{Text: "x"})), &actoviq.Input{RunID: "root.k3"}, opts); err == nil {
			t.Fatal("a second child was spawned under MaxChildren 1")
		}
	})
}

// pruneBeforeCreate prunes every finished run just before the first
// RunCreate of a child of parent, as a prune that runs between Spawn's
// read of the parent and the child's write does.
type pruneBeforeCreate struct {
	store.Store
	t      *testing.T
	parent string
	pruned []string
}

func (s *pruneBeforeCreate) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if p.Run.ParentID == s.parent && s.pruned == nil {
		s.pruned = pruneAll(s.t, s.Store)
	}
	return s.Store.RunCreate(ctx, p)
}

// A Spawn whose finished parent a prune removes meanwhile is refused with
// an error matching ErrNotFound; no child is left without its parent, no
// place of the tree's budget is left behind, and the store has no run. On
// main the child was written with a parent that no longer existed.
func TestSpawnRacingThePruneOfItsParent(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		rt := newRT(t, st, "A", time.Minute)
		if _, err := rt.Run(ctx, agent(scripted.New(scripted.Turn{Text: "root"})), &actoviq.Input{RunID: "root"}); err != nil {
			t.Fatal(err)
		}
		racing := &pruneBeforeCreate{Store: st, t: t, parent: "root"}
		rt2 := newRT(t, racing, "B", time.Minute)
		id, err := rt2.Spawn(ctx, "root", childAgent("bg", scripted.New(scripted.Turn{Text: "x"})), &actoviq.Input{RunID: "root.k1"},
			&actoviq.SpawnOptions{Budget: actoviq.Budget{MaxChildren: 2}})
		t.Logf("pruned %v; Spawn = %q, %v", racing.pruned, id, err)
		if len(racing.pruned) != 1 {
			t.Fatalf("the prune removed %v, want the parent", racing.pruned)
		}
		var nf *store.NotFoundError
		if !errors.Is(err, actoviq.ErrNotFound) || !errors.As(err, &nf) || nf.ID != "root" {
			t.Fatalf("Spawn of a pruned parent = %q, %v; want an error matching ErrNotFound naming the parent", id, err)
		}
		if r, err := st.RunGet(ctx, &store.RunGetParams{Tenant: store.DefaultTenant, ID: "root.k1"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a child was written without its parent: %+v %v", r, err)
		}
		for n := range 2 {
			k := fmt.Sprintf("children:root:%d", n)
			if c, err := st.ClaimGet(ctx, &store.ClaimGetParams{Tenant: store.DefaultTenant, Key: k}); err == nil && c.ExpiresAt.After(time.Now()) {
				t.Errorf("place %s is still held after the refused Spawn: %+v", k, c)
			}
		}
	})
}
