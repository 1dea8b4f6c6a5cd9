package crashtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// sealKey is the codec key of the secret scenarios, in the
// ACTOVIQ_SEAL_KEY form (hex).
var sealKey = strings.Repeat("5a", 32)

func codecFrom(s string) (actoviq.Codec, error) {
	keys, err := actoviq.ParseSealKeys(s)
	if err != nil {
		return nil, err
	}
	return actoviq.NewSealCodec(keys[0], keys[1:]...)
}

var secretArgs = fmt.Sprintf(`{"n":1,"api_key":%q}`, crashSecret)

// parentWith is b.parent with an optional codec.
func (b *bundle) parentWith(t *testing.T, key string) *actoviq.Runtime {
	t.Helper()
	if key == "" {
		return b.parent(t)
	}
	s, err := b.tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	codec, err := codecFrom(key)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: leaseTTL, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		s.Close()
	})
	return rt
}

// A re-run of a call whose arguments held a secret used to tell the model
// "this call was not run … call the tool again" after a SIGKILL while the
// call ran: the model called again under a new call id, so the effect
// happened twice under two keys (issue 10, break 1). Now the re-run keeps
// the key and bumps the attempt where the codec can open the arguments,
// and stops with an interruption that says why where it cannot; in no
// case is the model told "not run".
func TestCrashSecretArgs(t *testing.T) {
	t.Parallel()
	type cell struct {
		name     string
		effect   tool.Effect
		recovery actoviq.RecoveryPolicy
		kill     string
		codec    bool
	}
	cells := []cell{
		{"rerun-idempotent/codec", tool.IdempotentWrite, actoviq.RecoveryPolicy{RerunIdempotentWrites: true}, pointRunning, true},
		{"rerun-idempotent/no-codec", tool.IdempotentWrite, actoviq.RecoveryPolicy{RerunIdempotentWrites: true}, pointRunning, false},
		{"reexecute-side-effect/codec", tool.SideEffect, actoviq.RecoveryPolicy{}, pointStarted, true},
		{"reexecute-side-effect/no-codec", tool.SideEffect, actoviq.RecoveryPolicy{}, pointStarted, false},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			for _, c := range cells {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					b := setup(t, bk)
					var env []string
					key := ""
					if c.codec {
						key = sealKey
						env = append(env, envSealKey+"="+key)
					}
					sc := scenario{effect: c.effect, recovery: c.recovery, kill: c.kill}
					crashChild(t, b, sc, "run", "", c.kill, append(env, envArgs+"="+secretArgs)...)
					atKill := len(readEffects(t, b.counter))

					rt := b.parentWith(t, key)
					checkNoSecret(t, rt, b)
					agent := newAgentArgs(c.effect, c.recovery, b.counter, nil, secretArgs)
					res, err := resumeWhenFree(ctx, rt, agent, b.runID)
					if err != nil {
						t.Fatal(err)
					}
					if c.effect == tool.SideEffect {
						// The operator knows it did not happen and asks for a
						// new attempt under the same key.
						checkInterrupted(t, rt, b, res, actoviq.InterruptReconciliation, 1)
						res, err = rt.Resume(ctx, agent, b.runID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: callID, Kind: actoviq.DecideReexecute, By: "test"}}})
						if err != nil {
							t.Fatal(err)
						}
					}
					want := []int{2} // killed at started: attempt 1 never acted
					if atKill == 1 {
						want = []int{1, 2} // killed while attempt 1 acted
					}
					if c.codec {
						checkCompleted(t, rt, b, res, want)
						checkNoSecret(t, rt, b)
						return
					}
					// Without a codec: an interruption that says why, the
					// effect not repeated, and no result for the model.
					if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
						t.Fatalf("status %s, interruptions %+v", res.Status, res.Interruptions)
					}
					in := res.Interruptions[0]
					wantKind := actoviq.InterruptRecovery
					if c.effect == tool.SideEffect {
						wantKind = actoviq.InterruptReconciliation
					}
					if in.Kind != wantKind || in.IdempotencyKey != b.key || in.Attempt != 1 || !strings.Contains(in.Reason, "no codec") {
						t.Fatalf("interruption %+v", in)
					}
					if got := readEffects(t, b.counter); len(got) != atKill {
						t.Fatalf("effects %v, want %d", got, atKill)
					}
					info, err := rt.Get(ctx, b.runID)
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range info.Transcript {
						if it.Type == item.TypeToolResult {
							t.Fatalf("the model got a result: %+v", it.ToolResult)
						}
					}
					if st := info.Ledger[0].State; st != store.LedgerStarted && st != store.LedgerUnknown {
						t.Fatalf("entry %s, want started or unknown", st)
					}
					checkNoSecret(t, rt, b)
				})
			}
		})
	}
}

// checkNoSecret fails when the secret is in the run, its ledger or its
// events, or (SQLite) anywhere in the database files.
func checkNoSecret(t *testing.T, rt *actoviq.Runtime, b *bundle) {
	t.Helper()
	if b.tg.Kind == "sqlite" {
		for _, suffix := range []string{"", "-wal"} {
			raw, err := os.ReadFile(b.tg.DSN + suffix)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), crashSecret) {
				t.Fatalf("the secret is in %s%s", b.tg.DSN, suffix)
			}
		}
	}
	ctx := context.Background()
	st := rt.Store()
	run, err := st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: b.runID})
	if err != nil {
		t.Fatal(err)
	}
	led, _ := st.LedgerList(ctx, &store.LedgerListParams{Tenant: rt.Tenant(), RunID: b.runID})
	evs, _ := st.EventList(ctx, &store.EventListParams{Tenant: rt.Tenant(), RunID: b.runID})
	all := string(run.Checkpoint)
	for _, it := range run.Log {
		all += string(it)
	}
	for _, en := range led {
		all += string(en.Args) + string(en.Result) + string(en.Error)
	}
	for _, ev := range evs {
		all += string(ev.Data)
	}
	if strings.Contains(all, crashSecret) {
		t.Fatal("the secret is in the store")
	}
}
