package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// testIdleFilterEdges: the idle and live claim filters of RunList and
// RunCount at their edges: a claim that expires exactly now (not live), a
// released claim, a held claim expired (stalled), a live claim of another
// holder or of this host's prefix, a run without a claim, and a live claim
// of the same run id in another tenant (it holds nothing in this one).
func testIdleFilterEdges(t *testing.T, bb *bundle) {
	for _, id := range []string{"at-now", "released", "stalled", "other", "mine", "none", "x"} {
		r := newRun("t1", id)
		if id == "released" || id == "none" {
			r.Status, r.WaitKind = store.RunInterrupted, "approval"
		}
		mustCreate(t, bb, r)
	}
	mustCreate(t, bb, newRun("t2", "x"))
	take := func(tenant, id, holder string, ttl time.Duration) *store.Claim {
		t.Helper()
		c, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: tenant, Key: store.RunClaimKey(id), Holder: holder, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	take("t1", "at-now", "o:1:a", time.Minute)
	take("t1", "stalled", "o:2:a", 10*time.Second)
	rel := take("t1", "released", "o:3:a", time.Hour)
	if err := bb.s.ClaimRelease(bb.ctx, &store.ClaimReleaseParams{Tenant: "t1", Fence: store.Fence{Key: rel.Key, Holder: rel.Holder, Epoch: rel.Epoch}}); err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(time.Minute)
	take("t1", "other", "o:4:a", time.Hour)
	take("t1", "mine", "h:5:a", time.Hour)
	take("t2", "x", "o:6:a", time.Hour)
	now := bb.clock.Now()
	sts := []store.RunStatus{store.RunInterrupted, store.RunRunning}
	for _, c := range []struct {
		cf   store.ClaimFilter
		want []string
	}{
		{store.ClaimFilter{State: store.ClaimIdle}, []string{"at-now", "none", "released", "stalled", "x"}},
		{store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: "h:"}, []string{"at-now", "mine", "none", "released", "stalled", "x"}},
		{store.ClaimFilter{State: store.ClaimLive}, []string{"mine", "other"}},
		{store.ClaimFilter{State: store.ClaimLive, HolderPrefix: "h:"}, []string{"mine"}},
	} {
		runs := pageAll(t, bb, store.RunListParams{Tenant: "t1", Statuses: sts, Claim: c.cf, Now: now, Summary: true}, 2)
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.cf, got, c.want)
		}
		if c.cf.HolderPrefix != "" {
			continue
		}
		counts, err := bb.s.RunCount(bb.ctx, &store.RunCountParams{Tenant: "t1", Statuses: sts, Claim: c.cf, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, rc := range counts {
			n += rc.N
		}
		if n != int64(len(c.want)) {
			t.Errorf("%+v: counted %d, want %d (%+v)", c.cf, n, len(c.want), counts)
		}
	}
}
