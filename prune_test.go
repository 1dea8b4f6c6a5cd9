package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// TestPrune: finished runs are removed by Runtime.Prune in batches, each
// batch evented; a dry run removes nothing; an interrupted run stays.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "prune.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs := make(chan actoviq.Event, 100)
	rt, err := actoviq.New(st, &actoviq.Config{Sinks: []actoviq.EventSink{actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		if ev.Type == actoviq.EvRunsPruned {
			evs <- ev
		}
	})}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range 5 {
		a := agent(scripted.New(scripted.Turn{Text: "done"}))
		if _, err := rt.Run(ctx, a, &actoviq.Input{RunID: fmt.Sprintf("done-%d", i), Items: input("hi").Items}); err != nil {
			t.Fatal(err)
		}
	}
	pay := &payTool{name: "pay", effect: tool.SideEffect}
	a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "paid"}), pay)
	a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
	res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "waits", Items: input("pay").Items})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("waits: %v %v", res, err)
	}
	// The wait kind is written with the status, for the inbox's totals.
	page, err := rt.Inbox(ctx, nil)
	if err != nil || page.Total != 1 || page.Totals["approval"] != 1 || len(page.Runs) != 1 || len(page.Runs[0].Interruptions) != 1 {
		t.Fatalf("inbox: %+v %v", page, err)
	}

	cut := time.Now().Add(time.Hour)
	dry, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, DryRun: true})
	if err != nil || dry.Runs != 5 || len(dry.RunIDs) != 5 || dry.More || dry.Events == 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if ev := <-evs; !json.Valid(ev.Data) || ev.RunID != "" {
		t.Fatalf("dry-run event %+v", ev)
	}
	if _, err := rt.Get(ctx, "done-0"); err != nil {
		t.Fatalf("a dry run removed a run: %v", err)
	}
	got, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: 2, Unpaced: true})
	if err != nil || got.Runs != 5 || got.Batches != 3 || got.Events != dry.Events || got.LedgerEntries != 0 {
		t.Fatalf("prune: %+v (dry %+v) %v", got, dry, err)
	}
	removed := 0
	for range 3 {
		ev := <-evs
		var d actoviq.RunsPrunedData
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.DryRun || !d.FinishedBefore.Equal(cut) {
			t.Fatalf("event %s: %+v %v", ev.Data, d, err)
		}
		removed += len(d.RunIDs)
	}
	if removed != 5 {
		t.Fatalf("events name %d runs, want 5", removed)
	}
	for i := range 5 {
		if _, err := rt.Get(ctx, fmt.Sprintf("done-%d", i)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("done-%d after prune: %v", i, err)
		}
	}
	if info, err := rt.Get(ctx, "waits"); err != nil || info.Status != actoviq.StatusInterrupted {
		t.Fatalf("the waiting run after prune: %v %v", info, err)
	}
	if _, err := rt.Prune(ctx, &actoviq.PruneParams{}); err == nil {
		t.Fatal("a prune without a cut-off was accepted")
	}
	if _, err := actoviq.New(st, &actoviq.Config{Retention: actoviq.Retention{KeepFinished: -1}}); err == nil {
		t.Fatal("a negative retention was accepted")
	}
}

// TestPruneDryRunStopsAtMaxDryRunIDs: a dry run reads the first
// MaxDryRunIDs runs it would remove, oldest first, in batches of Batch,
// says that more would go, and reads no further batch (it used to count
// every run: 108 s with 1,000,000 on PostgreSQL); a paced prune (batches
// sized by BatchTime, a pause after each) then removes them all.
func TestPruneDryRunStopsAtMaxDryRunIDs(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const n = actoviq.MaxDryRunIDs + 234
	for i := range n {
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: fmt.Sprintf("r%05d", i),
			AgentID: "a", AgentDigest: "d", Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: "waits",
		AgentID: "a", AgentDigest: "d", Status: store.RunInterrupted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	cut := time.Now().Add(time.Hour)
	dry, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: 100, DryRun: true})
	if err != nil || dry.Runs != actoviq.MaxDryRunIDs || len(dry.RunIDs) != actoviq.MaxDryRunIDs || !dry.More ||
		dry.Batches != actoviq.MaxDryRunIDs/100 {
		t.Fatalf("dry run: runs %d, %d ids, more %v, %d batches, %v", dry.Runs, len(dry.RunIDs), dry.More, dry.Batches, err)
	}
	if dry.RunIDs[0] != "r00000" || dry.RunIDs[actoviq.MaxDryRunIDs-1] != fmt.Sprintf("r%05d", actoviq.MaxDryRunIDs-1) {
		t.Fatalf("dry run ids %s .. %s, want the oldest first", dry.RunIDs[0], dry.RunIDs[len(dry.RunIDs)-1])
	}
	got, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: 300})
	if err != nil || got.Runs != n || got.Batches < n/300 {
		t.Fatalf("paced prune: %+v %v", got, err)
	}
	if _, err := st.RunGet(ctx, &store.RunGetParams{Tenant: store.DefaultTenant, ID: "waits"}); err != nil {
		t.Fatalf("the waiting run: %v", err)
	}
	if _, err := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: cut, Batch: store.MaxPruneBatch + 1}); err == nil {
		t.Fatal("a batch above MaxPruneBatch was accepted")
	}
}

// TestWorkerSweeps: a worker with Config.Retention removes the runs it
// finished once they are older than KeepFinished, and says so in an event.
func TestWorkerSweeps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := storesqlite.Open(filepath.Join(t.TempDir(), "sweep.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pruned := make(chan actoviq.RunsPrunedData, 10)
	sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
		if ev.Type == actoviq.EvRunsPruned {
			var d actoviq.RunsPrunedData
			if json.Unmarshal(ev.Data, &d) == nil {
				pruned <- d
			}
		}
	})
	rt, err := actoviq.New(st, &actoviq.Config{Retention: actoviq.Retention{KeepFinished: time.Millisecond, Every: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a := agent(scripted.New(scripted.Turn{Text: "done"}))
	if err := rt.Register(a); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Enqueue(ctx, a, &actoviq.Input{RunID: "swept", Items: input("hi").Items}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- rt.Work(ctx, &actoviq.WorkOptions{PollInterval: 10 * time.Millisecond, Sinks: []actoviq.EventSink{sink}})
	}()
	var d actoviq.RunsPrunedData
	select {
	case d = <-pruned:
	case <-time.After(time.Minute):
		t.Fatal("no sweep removed the finished run within a minute")
	}
	if len(d.RunIDs) != 1 || d.RunIDs[0] != "swept" {
		t.Fatalf("swept %+v", d)
	}
	if _, err := rt.Get(context.Background(), "swept"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
