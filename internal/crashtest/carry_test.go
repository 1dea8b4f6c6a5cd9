package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// The two-call variant of the matrix: one model turn asks for two
// side-effect calls c1 and c2, which run one after the other, so c1's
// committed record is carried in the same store write as c2's started
// record (drive_carry.go). The child dies around that carried write.
const (
	modeTwo = "two" // envMode of the two-call child
	call2ID = "c2"  // the second call
)

// The kill points of the two-call child, in the order the drive passes them.
const (
	pointTwoC1Started   = "c1-started"   // c1 started durable, c2 prepared, no tool run
	pointTwoC1Returned  = "c1-returned"  // c1's tool returned, its committed record held
	pointTwoCarryBefore = "carry-before" // the carried write (c1 committed + c2 started) about to be sent, not stored
	pointTwoCarryAfter  = "carry-after"  // the carried write stored, c2's tool not run
	pointTwoC2Returned  = "c2-returned"  // c2's tool returned, its committed record not written
	pointTwoC2Committed = "c2-committed" // c2 committed durable
)

func carryCalls() []scripted.ToolCall {
	return []scripted.ToolCall{
		{ID: callID, Name: toolName, Arguments: json.RawMessage(`{"n":1}`)},
		{ID: call2ID, Name: toolName, Arguments: json.RawMessage(`{"n":2}`)},
	}
}

// twoExpect is what happens after a kill at one point of the two-call run.
type twoExpect struct {
	atKill []string                     // "call:attempt" of the effects on disk at the kill
	states map[string]store.LedgerState // the calls' durable states at the kill
	// interrupted is the call the first resume stops for (reconciliation,
	// state started); "" means it completes.
	interrupted string
	decide      actoviq.DecisionKind
	final       []string // "call:attempt" of the effects on disk at the end
}

func twoExpectations() map[string]twoExpect {
	st := func(a, b store.LedgerState) map[string]store.LedgerState {
		return map[string]store.LedgerState{callID: a, call2ID: b}
	}
	return map[string]twoExpect{
		// Nothing ran: the operator asks for a new attempt of c1.
		pointTwoC1Started: {atKill: nil, states: st(store.LedgerStarted, store.LedgerPrepared),
			interrupted: callID, decide: actoviq.DecideReexecute, final: []string{"c1:2", "c2:1"}},
		// c1 ran, its committed record was never stored: started, unknown,
		// reconciliation; never re-run on its own.
		pointTwoC1Returned: {atKill: []string{"c1:1"}, states: st(store.LedgerStarted, store.LedgerPrepared),
			interrupted: callID, decide: actoviq.DecideCommitted, final: []string{"c1:1", "c2:1"}},
		pointTwoCarryBefore: {atKill: []string{"c1:1"}, states: st(store.LedgerStarted, store.LedgerPrepared),
			interrupted: callID, decide: actoviq.DecideCommitted, final: []string{"c1:1", "c2:1"}},
		// The carried write is stored: c1's result is kept, c2 is started
		// (its tool never ran) and goes to reconciliation.
		pointTwoCarryAfter: {atKill: []string{"c1:1"}, states: st(store.LedgerCommitted, store.LedgerStarted),
			interrupted: call2ID, decide: actoviq.DecideReexecute, final: []string{"c1:1", "c2:2"}},
		pointTwoC2Returned: {atKill: []string{"c1:1", "c2:1"}, states: st(store.LedgerCommitted, store.LedgerStarted),
			interrupted: call2ID, decide: actoviq.DecideCommitted, final: []string{"c1:1", "c2:1"}},
		// Both results stored: the resume runs no tool.
		pointTwoC2Committed: {atKill: []string{"c1:1", "c2:1"}, states: st(store.LedgerCommitted, store.LedgerCommitted),
			final: []string{"c1:1", "c2:1"}},
	}
}

// TestCrashMatrixTwoCalls kills a child running two side-effect calls of
// one model turn at each point the drive passes around the write that
// carries c1's committed record with c2's started record, and checks that
// no effect runs twice, that a call whose tool ran without its committed
// record stored stops for reconciliation, and that no stored result is
// lost.
func TestCrashMatrixTwoCalls(t *testing.T) {
	t.Parallel()
	points := []string{pointTwoC1Started, pointTwoC1Returned, pointTwoCarryBefore, pointTwoCarryAfter, pointTwoC2Returned, pointTwoC2Committed}
	want := twoExpectations()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			for _, p := range points {
				t.Run(p, func(t *testing.T) {
					t.Parallel()
					runTwoScenario(t, bk, p, want[p])
				})
			}
		})
	}
}

func effectNames(t *testing.T, b *bundle) []string {
	t.Helper()
	var out []string
	for _, l := range readEffects(t, b.counter) {
		switch l.Key {
		case b.runID + ":" + callID:
			out = append(out, fmt.Sprintf("%s:%d", callID, l.Attempt))
		case b.runID + ":" + call2ID:
			out = append(out, fmt.Sprintf("%s:%d", call2ID, l.Attempt))
		default:
			t.Fatalf("effect with key %q, not one of the run's two call keys", l.Key)
		}
	}
	return out
}

func runTwoScenario(t *testing.T, bk backend, at string, want twoExpect) {
	ctx := context.Background()
	b := setup(t, bk)
	sc := scenario{effect: tool.SideEffect}
	crashChild(t, b, sc, modeTwo, "", at)
	if got := effectNames(t, b); !slices.Equal(got, want.atKill) {
		t.Fatalf("after the kill at %s: effects %v, want %v", at, got, want.atKill)
	}

	rt := b.parent(t)
	info, err := rt.Get(ctx, b.runID)
	if err != nil {
		t.Fatal(err)
	}
	if info.StoredStatus != actoviq.StatusRunning || len(info.Ledger) != 2 {
		t.Fatalf("after the kill at %s: stored status %s, %d ledger entries %+v; want running with 2", at, info.StoredStatus, len(info.Ledger), info.Ledger)
	}
	for _, en := range info.Ledger {
		if en.State != want.states[en.CallID] || en.IdempotencyKey != b.runID+":"+en.CallID {
			t.Fatalf("after the kill at %s: %s is %s with key %s; want %s with key %s:%s", at, en.CallID, en.State, en.IdempotencyKey, want.states[en.CallID], b.runID, en.CallID)
		}
	}

	agent := newAgentCalls(sc.effect, sc.recovery, b.counter, nil, carryCalls())
	res, err := resumeWhenFree(ctx, rt, agent, b.runID)
	if err != nil {
		t.Fatalf("resume after the kill at %s: %v", at, err)
	}
	if want.interrupted != "" {
		if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 {
			t.Fatalf("resume after the kill at %s: status %s, interruptions %+v; want one reconciliation for %s", at, res.Status, res.Interruptions, want.interrupted)
		}
		in := res.Interruptions[0]
		if in.Kind != actoviq.InterruptReconciliation || in.CallID != want.interrupted || in.State != store.LedgerStarted ||
			in.IdempotencyKey != b.runID+":"+want.interrupted || in.Attempt != 1 {
			t.Fatalf("interruption %+v; want reconciliation of %s, started, attempt 1", in, want.interrupted)
		}
		if got := effectNames(t, b); !slices.Equal(got, want.atKill) {
			t.Fatalf("the interrupted resume ran a tool: effects %v, want %v", got, want.atKill)
		}
		dec := actoviq.Decision{CallID: want.interrupted, Kind: want.decide, By: "test", Reason: "crash test", Result: "ok"}
		res, err = rt.Resume(ctx, agent, b.runID, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{dec}})
		if err != nil {
			t.Fatalf("resume with %s: %v", want.decide, err)
		}
	}
	if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "done" {
		t.Fatalf("status %s output %+v, want completed with \"done\"; interruptions %+v, error %v", res.Status, res.Output, res.Interruptions, res.Error)
	}
	if got := effectNames(t, b); !slices.Equal(got, want.final) {
		t.Fatalf("effects at the end %v, want %v", got, want.final)
	}
	info, err = rt.Get(ctx, b.runID)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string][]string{}
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolResult {
			results[it.ToolResult.CallID] = append(results[it.ToolResult.CallID], it.ToolResult.Content)
		}
	}
	// A result the tool returned and the store kept is the one the
	// transcript shows (a decided one is the operator's "ok").
	wantResult := func(id, stored string) string {
		if want.states[id] == store.LedgerCommitted {
			return stored
		}
		if want.interrupted == id && want.decide == actoviq.DecideCommitted {
			return "ok"
		}
		return stored
	}
	for _, c := range []struct{ id, stored string }{{callID, "acted n=1"}, {call2ID, "acted n=2"}} {
		if r := results[c.id]; len(r) != 1 || r[0] != wantResult(c.id, c.stored) {
			t.Fatalf("results of %s in the transcript %q, want exactly [%q]", c.id, r, wantResult(c.id, c.stored))
		}
	}
	if len(info.Ledger) != 2 {
		t.Fatalf("%d ledger entries, want 2", len(info.Ledger))
	}
	for _, en := range info.Ledger {
		if en.State != store.LedgerCommitted {
			t.Fatalf("%s ends %s, want committed", en.CallID, en.State)
		}
	}
}

// runTwoChild runs the two-call run and stops at its kill point.
func runTwoChild(ctx context.Context) (actoviq.Status, error) {
	var tg target
	if err := json.Unmarshal([]byte(os.Getenv(envStore)), &tg); err != nil {
		return "", fmt.Errorf("%s: %w", envStore, err)
	}
	runID, killAt := os.Getenv(envRunID), os.Getenv(envKillAt)
	s, err := tg.open(ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var returned atomic.Int32
	hook := func(point string) {
		if point != pointReturned {
			return
		}
		p := pointTwoC1Returned
		if returned.Add(1) == 2 {
			p = pointTwoC2Returned
		}
		if p == killAt {
			stopHere(p)
		}
	}
	rt, err := actoviq.New(&twoKillStore{Store: s, runID: runID, at: killAt}, &actoviq.Config{LeaseTTL: leaseTTL})
	if err != nil {
		return "", err
	}
	defer rt.Close()
	agent := newAgentCalls(tool.SideEffect, actoviq.RecoveryPolicy{}, os.Getenv(envCounter), hook, carryCalls())
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: runID, Items: []item.Item{item.UserText("act twice")}})
	if err != nil {
		return "", err
	}
	return res.Status, nil
}

// twoKillStore stops the two-call child at its store kill points: before
// the carried write is sent, or after a write that stored the point's
// states returned.
type twoKillStore struct {
	store.Store
	runID, at string
}

func (k *twoKillStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if p.RunID != k.runID {
		return k.Store.RunWrite(ctx, p)
	}
	in := map[string]store.LedgerState{}
	for _, l := range p.Ledger {
		in[l.Entry.CallID] = l.Entry.State
	}
	carried := in[callID] == store.LedgerCommitted && in[call2ID] == store.LedgerStarted
	if carried && k.at == pointTwoCarryBefore {
		stopHere(k.at)
	}
	res, err := k.Store.RunWrite(ctx, p)
	if err != nil {
		return res, err
	}
	switch {
	case k.at == pointTwoC1Started && in[callID] == store.LedgerStarted,
		k.at == pointTwoCarryAfter && carried,
		k.at == pointTwoC2Committed && in[call2ID] == store.LedgerCommitted:
		stopHere(k.at)
	}
	return res, err
}
