package actoviq_test

import (
	"encoding/json"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

func listIDs(t *testing.T, s *setup, status actoviq.Status) []string {
	t.Helper()
	runs, err := s.rt.List(s.ctx, &actoviq.ListParams{Status: status})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID+"="+string(r.Status))
	}
	return ids
}

func sameIDs(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Liveness is derived from the claim, never stored: a run stored running
// whose claim expired reads stalled; a run stored interrupted that a live
// process resumes reads running; filters see the derived status.
func TestDerivedLiveness(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	if _, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "waits"}); err != nil {
		t.Fatal(err)
	}
	// A first drive that died: stored running, claim held by a holder that
	// will stop renewing.
	b := agent(scripted.New(scripted.Turn{Text: "hello"}))
	cp := json.RawMessage(`{"v":1,"items":[],"turn":0,"usage":{},"trace_id":"t1","policy_version":""}`)
	if _, err := s.st.RunCreate(s.ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "default", ID: "crashed", AgentID: b.ID,
		AgentDigest: b.Digest(), Status: store.RunRunning, Checkpoint: cp}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.ClaimAcquire(s.ctx, &store.ClaimAcquireParams{Tenant: "default", Key: store.RunClaimKey("crashed"),
		Holder: "elsewhere:4242:20261201T090000Z.abcd/1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, s, ""); !sameIDs(got, "waits=interrupted", "crashed=running") {
		t.Fatalf("while the claim lives: %v", got)
	}
	if got := listIDs(t, s, actoviq.StatusStalled); len(got) != 0 {
		t.Fatalf("stalled while the claim lives: %v", got)
	}
	s.clock.Advance(2 * time.Minute) // the holder stopped renewing
	if got := listIDs(t, s, actoviq.StatusStalled); !sameIDs(got, "crashed=stalled") {
		t.Fatalf("stalled: %v", got)
	}
	if got := listIDs(t, s, actoviq.StatusRunning); len(got) != 0 {
		t.Fatalf("running lists a dead run: %v", got)
	}
	info, err := s.rt.Get(s.ctx, "crashed")
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != actoviq.StatusStalled || info.StoredStatus != actoviq.StatusRunning || info.Holder == nil || info.Holder.Live ||
		info.Holder.Host != "elsewhere" || info.Holder.PID != 4242 {
		t.Fatalf("Get: %s (stored %s), holder %+v", info.Status, info.StoredStatus, info.Holder)
	}

	// Someone resumes the waiting run right now: it reads running.
	if _, err := s.st.ClaimAcquire(s.ctx, &store.ClaimAcquireParams{Tenant: "default", Key: store.RunClaimKey("waits"),
		Holder: "resumer", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, s, actoviq.StatusRunning); !sameIDs(got, "waits=running") {
		t.Fatalf("running: %v", got)
	}
	if got := listIDs(t, s, actoviq.StatusInterrupted); len(got) != 0 {
		t.Fatalf("interrupted lists a run being resumed: %v", got)
	}
	runs, err := s.rt.List(s.ctx, &actoviq.ListParams{Status: actoviq.StatusRunning, Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].StoredStatus != actoviq.StatusInterrupted {
		t.Fatalf("running with limit: %+v %v", runs, err)
	}

	// The stalled run resumes (the expired claim is taken over) and is no
	// longer stalled.
	res, err := s.rt.Resume(s.ctx, b, "crashed", nil)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume of the stalled run: %+v %v", res, err)
	}
	if got := listIDs(t, s, actoviq.StatusStalled); len(got) != 0 {
		t.Fatalf("stalled after resume: %v", got)
	}
}
