package actoviq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// The holder of a drive used to be the runtime's holder plus the first
// eight bytes of a NewID. With ids that share a prefix, two drives of one
// run were one holder, and the store renewed the first drive's claim for
// the second instead of refusing it.
func TestHolderUniqueWhateverNewIDReturns(t *testing.T) {
	var n atomic.Int64
	st := storemem.New(nil)
	rt, err := actoviq.New(st, &actoviq.Config{NewID: func() string { return fmt.Sprintf("sameprefix-%d", n.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pay := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	done := make(chan error, 1)
	go func() {
		_, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "r1"})
		done <- err
	}()
	<-pay.started
	_, err = rt.Resume(context.Background(), a, "r1", nil)
	// A second runtime configured with the same holder name is another
	// holder too.
	rt2, err2 := actoviq.New(st, &actoviq.Config{Holder: "w", NewID: func() string { return "sameprefix-x" }})
	if err2 != nil {
		t.Fatal(err2)
	}
	defer rt2.Close()
	_, errSecond := rt2.Resume(context.Background(), a, "r1", nil)
	close(pay.block)
	if derr := <-done; derr != nil {
		t.Fatal(derr)
	}
	if !errors.Is(err, actoviq.ErrRunHeld) {
		t.Fatalf("a second concurrent Resume in the same runtime: %v, want ErrRunHeld", err)
	}
	if !errors.Is(errSecond, actoviq.ErrRunHeld) {
		t.Fatalf("a concurrent Resume from another runtime: %v, want ErrRunHeld", errSecond)
	}
	if pay.count() != 1 {
		t.Fatalf("the side effect ran %d times", pay.count())
	}
}

// Two runtimes that share a Config.Holder (two processes of one worker
// name) are two holders: the one that does not hold a session's claim is
// refused it.
func TestSharedConfigHolderStillExclusive(t *testing.T) {
	st := storemem.New(nil)
	mk := func() *actoviq.Runtime {
		rt, err := actoviq.New(st, &actoviq.Config{Holder: "worker-1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return rt
	}
	rt1, rt2 := mk(), mk()
	block := &payTool{name: "pay", block: make(chan struct{}), started: make(chan struct{})}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "x"})
	done := make(chan error, 1)
	go func() {
		_, err := rt1.Run(context.Background(), agent(p, block), &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("1")}})
		done <- err
	}()
	<-block.started
	_, err := rt2.Run(context.Background(), agent(scripted.New(scripted.Turn{Text: "y"})), &actoviq.Input{SessionID: "s1"})
	close(block.block)
	if derr := <-done; derr != nil {
		t.Fatal(derr)
	}
	if !errors.Is(err, actoviq.ErrSessionBusy) {
		t.Fatalf("a second runtime with the same Config.Holder entered a busy session: %v", err)
	}
}

// A dead holder's session claim used to block the session for the whole
// lease TTL, while its run claim was taken over at once.
func TestDeadHolderSessionClaimTakenOver(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reaped: the pid is gone
	s := newSetup(t)
	dead := fmt.Sprintf("%s:%d:0123abcd/0123abcd.1", host, pid)
	if _, err := s.st.ClaimAcquire(s.ctx, &store.ClaimAcquireParams{Tenant: "default", Key: "session:s1", Holder: dead, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	res, err := s.rt.Run(s.ctx, agent(scripted.New(scripted.Turn{Text: "hello"})), &actoviq.Input{SessionID: "s1", Items: []item.Item{item.UserText("hi")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run in a session claimed by a dead process: %+v %v", res, err)
	}
	// A live holder's claim still blocks.
	if _, err := s.st.ClaimAcquire(s.ctx, &store.ClaimAcquireParams{Tenant: "default", Key: "session:s2",
		Holder: fmt.Sprintf("%s:%d:0123abcd/x", host, os.Getppid()), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.rt.Run(s.ctx, agent(scripted.New(scripted.Turn{Text: "hello"})), &actoviq.Input{SessionID: "s2"}); !errors.Is(err, actoviq.ErrSessionBusy) {
		t.Fatalf("a live holder's session: %v, want ErrSessionBusy", err)
	}
}
