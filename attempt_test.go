package actoviq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// Every real attempt of a call is one record: a process dies during the
// payment (attempt 1, interrupted, found by the next drive), a person asks
// for a re-execution (attempt 2, same key, committed). The history is read
// back from the store by a runtime that never saw the run.
func TestAttemptHistoryAcrossACrash(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	shared := storemem.New(&storemem.Config{Clock: clock.Now})
	dying := &dyingStore{Store: shared, dead: make(chan struct{})}
	pay := &payTool{name: "pay", started: make(chan struct{}), block: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":7}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)

	first, err := actoviq.New(dying, &actoviq.Config{Clock: clock.Now, LeaseTTL: time.Minute, Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = first.Run(ctx, a, &actoviq.Input{RunID: "h1", Items: input("pay").Items})
	}()
	<-pay.started
	close(dying.dead) // the process dies with the payment in flight
	close(pay.block)
	<-done

	clock.Advance(2 * time.Minute)
	second, err := actoviq.New(shared, &actoviq.Config{Clock: clock.Now, LeaseTTL: time.Minute, Holder: "second"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Close() })
	res, err := second.Resume(ctx, a, "h1", nil)
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("resume after the crash: %+v %v", res, err)
	}
	pay.block = nil
	res, err = second.Resume(ctx, a, "h1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReexecute, By: "op", Reason: "the bank has no trace"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("resume with re-execute: %+v %v", res, err)
	}

	third, err := actoviq.New(shared, &actoviq.Config{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Close() })
	atts, err := third.Attempts(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(atts), atts)
	}
	one, two := atts[0], atts[1]
	if one.CallID != "c1" || one.Number != 1 || !strings.HasPrefix(one.Holder, "first/") || one.Epoch == 0 ||
		one.End != actoviq.AttemptInterrupted || one.EndedAt.IsZero() || !strings.Contains(one.Reason, "second/") {
		t.Errorf("attempt 1: %+v", one)
	}
	if !strings.Contains(one.Reason, string(actoviq.AttemptReexecuted)) {
		t.Errorf("attempt 1 does not say it was re-executed: %q", one.Reason)
	}
	if two.Number != 2 || !strings.HasPrefix(two.Holder, "second/") || two.Epoch <= one.Epoch || two.End != actoviq.AttemptCommitted {
		t.Errorf("attempt 2: %+v", two)
	}
	if !two.StartedAt.After(one.StartedAt) {
		t.Errorf("attempt 2 started %v, not after attempt 1 (%v)", two.StartedAt, one.StartedAt)
	}
	if _, err := third.Attempts(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown run: %v", err)
	}
}

// Outcomes recorded by the drive that started the attempt, and an unknown
// outcome settled by a person.
func TestAttemptHistoryOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	pay := &payTool{name: "pay", fail: context.DeadlineExceeded}
	p := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}},
		scripted.Turn{Text: "done"})
	a := agent(p, pay)
	res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "h2", Items: input("pay").Items})
	if err != nil {
		t.Fatal(err)
	}
	atts, err := rt.Attempts(ctx, "h2")
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 1 || atts[0].Number != 1 || atts[0].Holder == "" || atts[0].Epoch != 1 {
		t.Fatalf("attempts %+v (run %s)", atts, res.Status)
	}
	// A side effect that failed with a deadline: its outcome is unknown.
	if res.Status != actoviq.StatusInterrupted || atts[0].End != actoviq.AttemptUnknown || atts[0].EndedAt.IsZero() {
		t.Fatalf("run %s, attempt %+v: want interrupted with the attempt's outcome unknown", res.Status, atts[0])
	}
	if err := rt.Decide(ctx, "h2", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideFailed, By: "op", Message: "the bank refused it"}); err != nil {
		t.Fatal(err)
	}
	atts, err = rt.Attempts(ctx, "h2")
	if err != nil || len(atts) != 1 || atts[0].End != actoviq.AttemptUnknown || !strings.Contains(atts[0].Reason, "a person recorded it failed") {
		t.Errorf("after the decision: %+v %v", atts, err)
	}
}
