package console_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/tool"
)

func TestInboxStalledAfterSIGKILL(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	crashRun(t, f.dbPath, filepath.Join(t.TempDir(), "bank.txt"), "run-k")
	var in console.Inbox
	f.call("GET", "/api/v1/inbox?kind=stalled", tokenAnon, "").json(t, &in)
	if len(in.Items) != 1 || in.Items[0].RunID != "run-k" || !strings.Contains(in.Items[0].Reason, "process is gone") {
		t.Fatalf("inbox: %+v", in.Items)
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/run-k", tokenAnon, "").json(t, &run)
	if run.Status != "stalled" || run.StoredStatus != "running" || run.Holder == nil || !run.Holder.Dead || run.Ledger[0].State != "started" {
		t.Fatalf("run: status %s stored %s holder %+v ledger %+v", run.Status, run.StoredStatus, run.Holder, run.Ledger)
	}
	var runs struct{ Runs []actoviq.RunInfo }
	f.call("GET", "/api/v1/runs?status=stalled", tokenAnon, "").json(t, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != "run-k" {
		t.Fatalf("runs?status=stalled: %+v", runs.Runs)
	}
}

func TestUnsettledCallOfACancelledRun(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	started := make(chan struct{})
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		})
	model := f.agent.Provider
	agent := &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}
	done := make(chan error, 1)
	go func() {
		_, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-c", Items: []item.Item{item.UserText("pay")}})
		done <- err
	}()
	<-started
	if err := f.rt.Cancel(context.Background(), "run-c"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled run did not stop")
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/run-c", tokenAnon, "").json(t, &run)
	if run.Status != "cancelled" || len(run.Unsettled) != 1 || run.Unsettled[0].CallID != "call_1" {
		t.Fatalf("run: %s, unsettled %+v", run.Status, run.Unsettled)
	}
	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/run-c", "", "").body)
	for _, want := range []string{"Unsettled calls of this finished run", `data-kind="committed"`, `data-kind="failed"`, "the run stays finished"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(page, `data-kind="reexecute"`) || strings.Contains(page, `id="resume"`) {
		t.Error("a finished run offers re-execute or resume")
	}
	r := f.call("POST", "/api/v1/runs/run-c/decisions", tokenAlice, `{"call_id":"call_1","kind":"committed","result":"payment p-9"}`)
	if r.status != http.StatusOK {
		t.Fatalf("settle: %d %s", r.status, r.body)
	}
	var after console.Run
	f.call("GET", "/api/v1/runs/run-c", tokenAnon, "").json(t, &after)
	run = after
	if !strings.Contains(string(run.Ledger[0].Result), `"content":"payment p-9"`) {
		t.Errorf("result %s", run.Ledger[0].Result)
	}
	if len(run.Unsettled) != 0 || run.Ledger[0].Resolution == nil || run.Ledger[0].Resolution.By != "alice" || run.Status != "cancelled" {
		t.Fatalf("after: %+v %+v", run.Unsettled, run.Ledger[0])
	}
}
