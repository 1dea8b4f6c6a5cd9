package actoviq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// A worker says which agents it serves with one claim per agent id,
// "serves:<agent id>" ("serves:*" for a worker that resolves any agent),
// held with the runtime's lease and renewed every LeaseTTL/3. Several
// workers serving one agent share the claim: whoever holds it renews it,
// and when that worker stops another takes it at its next renewal. So
// "a live claim exists" means "a worker serves this agent now", which is
// what the console and the CLI ask before offering the queue as the way
// to resume a run.

func servesKey(agentID string) string { return "serves:" + agentID }

// advertise holds the serves claims of the agents the worker drives (all
// when agentIDs is nil) and runs the approvals escalation, until ctx
// ends; stop releases the claims.
func (rt *Runtime) advertise(ctx context.Context, agentIDs []string, o *WorkOptions) (stop func()) {
	keys := []string{servesKey("*")}
	if agentIDs != nil {
		keys = keys[:0]
		for _, id := range agentIDs {
			keys = append(keys, servesKey(id))
		}
	}
	holder := rt.holder + "/serves"
	renew := func() {
		for _, k := range keys {
			_, err := rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: k, Holder: holder, TTL: rt.ttl})
			var held *store.ClaimHeldError
			if errors.As(err, &held) && rt.releaseDead(ctx, k, held) {
				_, _ = rt.store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: rt.tenant, Key: k, Holder: holder, TTL: rt.ttl})
			}
		}
	}
	escalate := func() {
		if rt.approvers == nil || o.EscalateEvery < 0 {
			return
		}
		got, err := rt.EscalateApprovals(ctx)
		for _, e := range got {
			o.Logger.Info("approval escalated", "run", e.RunID, "call", e.CallID, "tool", e.Tool, "waiting_since", e.WaitingSince)
		}
		if err != nil && ctx.Err() == nil {
			o.Logger.Warn("approval escalation", "err", err)
		}
	}
	renew()
	escalate()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		beat := time.NewTicker(max(rt.ttl/3, time.Millisecond))
		defer beat.Stop()
		every := o.EscalateEvery
		if every <= 0 {
			every = time.Hour
		}
		esc := time.NewTicker(every)
		defer esc.Stop()
		for {
			select {
			case <-beat.C:
				renew()
			case <-esc.C:
				escalate()
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rt.commitTO)
		defer cancel()
		for _, k := range keys {
			c, err := rt.store.ClaimGet(rctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: k})
			if err == nil && c.Holder == holder {
				_ = rt.store.ClaimRelease(rctx, &store.ClaimReleaseParams{Tenant: rt.tenant, Fence: store.Fence{Key: k, Holder: holder, Epoch: c.Epoch}})
			}
		}
	}
}

// AgentServed reports whether a worker ([Runtime.Work]) of this tenant
// serves agentID now (or resolves any agent): handing a run of that agent
// to the queue ([Runtime.Requeue]) gets it driven. It returns the live
// worker's claim, or nil when none serves it.
func (rt *Runtime) AgentServed(ctx context.Context, agentID string) (*RunClaim, error) {
	for _, k := range []string{servesKey(agentID), servesKey("*")} {
		c, err := rt.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: rt.tenant, Key: k})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("actoviq: workers serving agent %s: %w", agentID, err)
		}
		if rc := rt.runClaim(c); rc.Live {
			return rc, nil
		}
	}
	return nil, nil
}
