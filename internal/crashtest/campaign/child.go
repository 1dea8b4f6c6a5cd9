package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// target says where a cell's runs live.
type target struct {
	Kind   string `json:"kind"` // "sqlite" or "pg"
	DSN    string `json:"dsn"`  // file path or PostgreSQL URL
	Schema string `json:"schema,omitempty"`
}

func (tg target) open(ctx context.Context) (store.Store, error) {
	switch tg.Kind {
	case "sqlite":
		return storesqlite.Open(tg.DSN, nil)
	case "pg":
		return storepg.Open(ctx, tg.DSN, &storepg.Config{Schema: tg.Schema, MaxConns: 4})
	}
	return nil, fmt.Errorf("campaign: unknown store kind %q", tg.Kind)
}

// childSpec is what the parent hands a child drive (env CAMPAIGN_CHILD).
type childSpec struct {
	Target   target     `json:"target"`
	Scenario string     `json:"scenario"`
	Dir      string     `json:"dir"`
	Runs     []runPlan  `json:"runs"`
	Decide   []decision `json:"decide,omitempty"`
	// KillAt arms a kill at a store write: position 2k-1 is just before
	// the k-th write, 2k just after it returned; 0 means none.
	KillAt int `json:"kill_at,omitempty"`
	// KillPoint arms a kill inside the store's own write instead: "name:n"
	// for the n-th time the child reaches internal/killpoint's point name
	// (inside a journal write, or inside a log compaction).
	KillPoint string `json:"kill_point,omitempty"`
	// CloseAfter, in microseconds after READY, closes the child's runtime
	// (Runtime.Close: a shutdown, not a kill); 0 means never.
	CloseAfter int64 `json:"close_after,omitempty"`
}

// decision is an operator's decision for one call of one run.
type decision struct {
	Run      string           `json:"run"`
	Decision actoviq.Decision `json:"decision"`
}

const leaseTTL = 2 * time.Second

// childMain drives the spec's runs and prints one line per run, then the
// number of writes.
func childMain() error {
	var sp childSpec
	if err := json.Unmarshal([]byte(os.Getenv("CAMPAIGN_CHILD")), &sp); err != nil {
		return fmt.Errorf("CAMPAIGN_CHILD: %w", err)
	}
	sc, ok := scenarioByName(sp.Scenario)
	if !ok {
		return fmt.Errorf("unknown scenario %q", sp.Scenario)
	}
	ctx := context.Background()
	s, err := sp.Target.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	ks := &killStore{Store: s, at: int64(sp.KillAt)}
	ttl := leaseTTL
	if sc.workers {
		ttl = workerTTL
	}
	rt, err := actoviq.New(ks, &actoviq.Config{LeaseTTL: ttl})
	if err != nil {
		return err
	}
	defer rt.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	w := world{dir: sp.Dir, self: self}
	fmt.Println("READY")
	start := time.Now()
	if sp.CloseAfter > 0 {
		t := time.AfterFunc(time.Duration(sp.CloseAfter)*time.Microsecond, func() { rt.Close() })
		defer t.Stop()
	}
	drive := func(rp runPlan) string {
		a, closeAgent, err := sc.agent(w, rp)
		if err != nil {
			return "error " + oneLine(err)
		}
		defer closeAgent()
		var decs []actoviq.Decision
		for _, d := range sp.Decide {
			if d.Run == rp.ID {
				decs = append(decs, d.Decision)
			}
		}
		res, err := driveRun(ctx, rt, a, rp, decs)
		if errors.Is(err, actoviq.ErrDecision) {
			// The operator decided on what it read; a drive that died
			// after that read (its last statement still committing on
			// the server) may have moved the call on. The refusal is
			// the runtime reading the truth: typed, nothing changed.
			return "refused " + oneLine(err)
		}
		if errors.Is(err, actoviq.ErrClosed) {
			return "closed" // a shutdown: the run stays resumable
		}
		if err != nil {
			return "error " + oneLine(err)
		}
		return string(res.Status)
	}
	out := make([]string, len(sp.Runs))
	if sc.takeover {
		st := takeoverPool(ctx, rt, w, sp)
		for i, rp := range sp.Runs {
			out[i] = st[rp.ID]
		}
	} else if sc.workers {
		a, closeAgent, err := sc.agent(w, runPlan{})
		if err != nil {
			return err
		}
		defer closeAgent()
		st := workPool(ctx, rt, []*actoviq.AgentSpec{a}, sp)
		for i, rp := range sp.Runs {
			out[i] = st[rp.ID]
		}
	} else if sc.sequential {
		// A session's next run starts only once this one completed.
		for i, rp := range sp.Runs {
			if out[i] = drive(rp); out[i] != string(actoviq.StatusCompleted) {
				for j := i + 1; j < len(sp.Runs); j++ {
					out[j] = "waiting"
				}
				break
			}
		}
	} else {
		var wg sync.WaitGroup
		for i, rp := range sp.Runs {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = drive(rp) }()
		}
		wg.Wait()
	}
	for i, rp := range sp.Runs {
		fmt.Printf("RUN %s %s\n", rp.ID, out[i])
	}
	fmt.Printf("WRITES %d %d\n", ks.n.Load(), time.Since(start).Microseconds())
	return nil
}

// driveRun starts the run if it does not exist yet, or resumes it, waiting
// (bounded) while another drive still holds it.
func driveRun(ctx context.Context, rt *actoviq.Runtime, a *actoviq.AgentSpec, rp runPlan, decs []actoviq.Decision) (*actoviq.RunResult, error) {
	info, err := rt.Get(ctx, rp.ID)
	if errors.Is(err, actoviq.ErrNotFound) {
		return rt.Run(ctx, a, userInput(rp))
	}
	if err != nil {
		return nil, err
	}
	if info.Status == actoviq.StatusCompleted {
		return &actoviq.RunResult{Status: actoviq.StatusCompleted}, nil
	}
	deadline := time.Now().Add(3 * leaseTTL)
	for {
		res, err := rt.Resume(ctx, a, rp.ID, &actoviq.ResumeOptions{Decisions: decs})
		if !errors.Is(err, actoviq.ErrRunHeld) || time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func oneLine(err error) string {
	b, _ := json.Marshal(err.Error())
	return string(b)
}

// killStore counts the child's store writes (heartbeats excepted: their
// number depends on timing) and SIGKILLs the process at the armed
// position.
type killStore struct {
	store.Store
	at int64
	n  atomic.Int64
}

// before counts a write and dies if the kill is armed just before it; it
// returns the write's number for after.
func (k *killStore) before() int64 {
	n := k.n.Add(1)
	if k.at != 0 && 2*n-1 == k.at {
		die()
	}
	return n
}

// after dies if the kill is armed just after write n returned.
func (k *killStore) after(n int64) {
	if k.at != 0 && 2*n == k.at {
		die()
	}
}

// die is a real SIGKILL: no deferred function, no flush runs.
func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func (k *killStore) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	n := k.before()
	c, err := k.Store.ClaimAcquire(ctx, p)
	k.after(n)
	return c, err
}

func (k *killStore) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	n := k.before()
	err := k.Store.ClaimRelease(ctx, p)
	k.after(n)
	return err
}

func (k *killStore) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	n := k.before()
	r, err := k.Store.RunCreate(ctx, p)
	k.after(n)
	return r, err
}

func (k *killStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	n := k.before()
	r, err := k.Store.RunWrite(ctx, p)
	k.after(n)
	return r, err
}

func (k *killStore) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	n := k.before()
	r, err := k.Store.SessionAppend(ctx, p)
	k.after(n)
	return r, err
}

func (k *killStore) SessionSnapshotPut(ctx context.Context, p *store.SessionSnapshotPutParams) error {
	n := k.before()
	err := k.Store.SessionSnapshotPut(ctx, p)
	k.after(n)
	return err
}

func (k *killStore) OncePut(ctx context.Context, p *store.OncePutParams) (*store.OnceRecord, error) {
	n := k.before()
	r, err := k.Store.OncePut(ctx, p)
	k.after(n)
	return r, err
}
