package mcptool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
)

// Through the runtime (SQLite file): a person answers the first of two
// different questions of a multi-round-trip tool; the second question
// stops the run again as an input interruption, and the server acts only
// after the second answer.
func TestReviewRuntimeSecondRoundGoesToAPerson(t *testing.T) {
	s, url := newTwoRoundServer(t)
	rt, agent := sqliteRuntime(t, url, "transfer")
	ctx := context.Background()
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "r2", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 ||
		res.Interruptions[0].Input == nil || !strings.Contains(res.Interruptions[0].Input.Prompt, "Send 10 EUR") {
		t.Fatalf("run %+v, %v", res, err)
	}
	answer := actoviq.Decision{CallID: "c1", Kind: actoviq.DecideAnswer, By: "alice", Answer: json.RawMessage(`{"ok":true}`)}
	res, err = rt.Resume(ctx, agent, "r2", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{answer}})
	if err != nil {
		t.Fatal(err)
	}
	if _, execs, answers := s.counts("r2:c1"); execs != 0 {
		t.Fatalf("the server acted on an answer nobody gave to its second question (answers %v); run %+v", answers, res)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptInput ||
		!strings.Contains(res.Interruptions[0].Input.Prompt, "10000 EUR") {
		t.Fatalf("after the first answer: %+v", res)
	}
	answer.By = "bob"
	res, err = rt.Resume(ctx, agent, "r2", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{answer}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("after the second answer: %+v, %v", res, err)
	}
	if calls, execs, _ := s.counts("r2:c1"); calls != 3 || execs != 1 {
		t.Fatalf("tools/call %d, executions %d; want 3, 1", calls, execs)
	}
}

// Two Resumes of one interrupted run at once, each with a person's answer:
// the run's claim lets one drive it; the continuation of the round is sent
// once.
func TestReviewRuntimeConcurrentAnswers(t *testing.T) {
	s, url := newTwoRoundServer(t)
	rt, agent := sqliteRuntime(t, url, "transfer")
	ctx := context.Background()
	if res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "r3", Items: []item.Item{item.UserText("go")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run %+v, %v", res, err)
	}
	type out struct {
		res *actoviq.RunResult
		err error
	}
	ch := make(chan out, 2)
	for _, by := range []string{"alice", "bob"} {
		go func() {
			res, err := rt.Resume(ctx, agent, "r3", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideAnswer, By: by, Answer: json.RawMessage(`{"ok":true}`)}}})
			ch <- out{res, err}
		}()
	}
	a, b := <-ch, <-ch
	calls, execs, answers := s.counts("r3:c1")
	if calls > 2 || execs != 0 || len(answers) > 1 {
		t.Fatalf("tools/call %d, executions %d, answers %v after two concurrent answers to round 1 (%+v %v / %+v %v)", calls, execs, answers, a.res, a.err, b.res, b.err)
	}
	t.Logf("resume 1: %v %v; resume 2: %v %v; tools/call %d", status(a.res), a.err, status(b.res), b.err, calls)
}

func status(r *actoviq.RunResult) string {
	if r == nil {
		return "-"
	}
	return string(r.Status)
}
