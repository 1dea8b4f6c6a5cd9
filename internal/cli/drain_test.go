package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// A real SIGTERM of an `actoviq worker` process while its run pays, with a
// grace shorter than the payment: the worker stops claiming, and when its
// grace is over it releases the run and exits 0. The run is left with no
// live holder, either back in the queue or, when the payment was cut in
// flight, stopped for reconciliation (its outcome is unknown; it is never
// run again without a decision). A person settles it from the bank's
// records, the next worker completes the run, and no attempt of the
// payment ran twice: one payment.
func TestBinaryWorkerSIGTERMHandsTheRunOver(t *testing.T) {
	x := newE2E(t)
	r := actoviqBin(t, nil, "run", "--detach", "--store", x.store, "--run-id", "g1", "--approve", "none",
		"--model", "scripted:"+x.sc, "--demo-bank", x.bank, "pay INV-42")
	wantExit(t, r, 0, "run --detach")
	// The bank sleeps 2 s before and after it pays, so the payment is in
	// flight when the signal comes; the grace (100 ms) ends before it does.
	w := startWorker(t, []string{"ACTOVIQ_DEMO_BANK_DELAY=2s"}, "--store", x.store, "--concurrency", "1", "--poll", "50ms",
		"--lease-ttl", "10s", "--grace", "100ms")
	calls := x.bank + ".calls" // the bank logs each execution before it pays
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(calls); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never started the payment\nstderr:\n%s", w.stderr)
		}
		time.Sleep(10 * time.Millisecond) // polling a file the worker process writes; no signal to wait on
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		w.done <- err
		if err != nil {
			t.Fatalf("worker after SIGTERM: %v\nstderr:\n%s", err, w.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not exit after SIGTERM\nstderr:\n%s", w.stderr)
	}
	if !strings.Contains(w.stderr.String(), "grace period over") || !strings.Contains(w.stdout.String(), "stopped") {
		t.Fatalf("the worker's drain is not in its output\nstdout:\n%s\nstderr:\n%s", w.stdout, w.stderr)
	}

	st, err := storesqlite.Open(strings.TrimPrefix(x.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	info, err := rt.Get(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Events(ctx, "g1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	// Handed over properly: no live holder, and either back in the queue
	// (released at a step boundary) or stopped with an open question for a
	// person (the payment was cut in flight: its outcome is unknown, and the
	// recovery rules never run it again on their own). Never running under a
	// gone worker, never interrupted with nothing open.
	if info.Holder != nil && info.Holder.Live {
		t.Fatalf("after the drain the run is held by a live holder %+v", info.Holder)
	}
	switch {
	case info.Status == actoviq.StatusQueued && types[len(types)-1] == actoviq.EvRunReleased:
	case info.Status == actoviq.StatusInterrupted && len(info.Interruptions) == 1 && info.Interruptions[0].CallID == "call_pay" &&
		info.Interruptions[0].Kind == actoviq.InterruptReconciliation:
		// What a person does: look at the bank, settle the call, hand the
		// run back to the workers.
		d := actoviq.Decision{CallID: "call_pay", By: "op", Kind: actoviq.DecideReexecute, Reason: "the bank has no such payment"}
		if len(x.payments()) == 1 {
			d.Kind, d.Reason, d.Result = actoviq.DecideCommitted, "the bank has the payment", "paid"
		}
		if err := rt.Requeue(ctx, "g1", d); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("after the drain the run is %s (stored %s), open %+v; events %v\nstderr:\n%s",
			info.Status, info.StoredStatus, info.Interruptions, types, w.stderr)
	}
	t.Logf("after SIGTERM: %s; events %v", info.Status, types)

	// The next worker takes it over and completes it.
	w2 := startWorker(t, nil, "--store", x.store, "--concurrency", "1", "--poll", "50ms")
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := rt.Wait(wctx, "g1")
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("after the second worker: %+v %v\nstderr:\n%s", res, err, w2.stderr)
	}
	_ = w2.cmd.Process.Signal(syscall.SIGTERM)
	if n := len(x.payments()); n != 1 {
		t.Fatalf("%d payments, want 1: %v", n, x.payments())
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	perAttempt := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c struct {
			Key     string `json:"key"`
			Attempt int    `json:"attempt"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		perAttempt[fmt.Sprintf("%s#%d", c.Key, c.Attempt)]++
	}
	for k, n := range perAttempt {
		if n > 1 {
			t.Fatalf("the bank ran %s %d times:\n%s", k, n, b)
		}
	}
}
