package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// The child's environment.
const (
	envChild    = "CRASHTEST_CHILD"    // "1" in a child
	envStore    = "CRASHTEST_STORE"    // JSON of target
	envRunID    = "CRASHTEST_RUN_ID"   // the run to start or resume
	envEffect   = "CRASHTEST_EFFECT"   // read | idempotent-write | side-effect
	envRecovery = "CRASHTEST_RECOVERY" // JSON of actoviq.RecoveryPolicy
	envKillAt   = "CRASHTEST_KILL_AT"  // a kill point
	envMode     = "CRASHTEST_MODE"     // run | resume
	envDecide   = "CRASHTEST_DECIDE"   // resume mode: a decision kind for c1, optional
	envCounter  = "CRASHTEST_COUNTER"  // the counter file
	envArgs     = "CRASHTEST_ARGS"     // c1's arguments, optional
	envSealKey  = "CRASHTEST_SEAL_KEY" // a Config.Codec key (ParseSealKeys form), optional
)

// The kill points, in ledger order.
const (
	// 1: the write of the model's answer is about to be sent, nothing of
	// it stored. A lone call that starts at once is stored with that
	// write, started (drive_fold.go in the root package): no moment has
	// its entry durable and prepared.
	pointAnswer    = "answer"
	pointStarted   = "started"   // 2: started durable, tool not run
	pointRunning   = "running"   // 3: tool appended its effect, still running
	pointReturned  = "returned"  // 4: tool returned, committed not written
	pointCommitted = "committed" // 5: committed durable
)

// markerPrefix starts the line a child prints when it reaches its kill
// point; it then blocks until it is killed.
const markerPrefix = "AT "

// TestCrashChild is the child process of the crash tests. It runs (or
// resumes) one run and stops dead at its kill point, printing a marker for
// the parent, which kills it. It only runs when re-executed by the parent.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the child process of the crash tests; it runs only when a crash test re-executes the binary")
	}
	status, err := runChild()
	// Reaching this line means the kill point was never reached.
	fmt.Printf("END status=%s err=%v\n", status, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("the run ended %s without reaching kill point %q", status, os.Getenv(envKillAt))
}

func runChild() (actoviq.Status, error) {
	ctx := context.Background()
	if os.Getenv(envMode) == modeSession {
		return runSessionChild(ctx) // session_test.go
	}
	if os.Getenv(envMode) == modeTwo {
		return runTwoChild(ctx) // carry_test.go
	}
	var tg target
	if err := json.Unmarshal([]byte(os.Getenv(envStore)), &tg); err != nil {
		return "", fmt.Errorf("%s: %w", envStore, err)
	}
	var rp actoviq.RecoveryPolicy
	if err := json.Unmarshal([]byte(os.Getenv(envRecovery)), &rp); err != nil {
		return "", fmt.Errorf("%s: %w", envRecovery, err)
	}
	effect, err := tool.ParseEffect(os.Getenv(envEffect))
	if err != nil {
		return "", err
	}
	runID, killAt := os.Getenv(envRunID), os.Getenv(envKillAt)
	s, err := tg.open(ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	hook := func(point string) {
		if point == killAt {
			stopHere(point)
		}
	}
	ks := &killStore{Store: s, runID: runID, callID: callID, at: store.LedgerState(killAt), stop: stopHere}
	cfg := &actoviq.Config{LeaseTTL: leaseTTL}
	if k := os.Getenv(envSealKey); k != "" {
		if cfg.Codec, err = codecFrom(k); err != nil {
			return "", err
		}
	}
	rt, err := actoviq.New(ks, cfg)
	if err != nil {
		return "", err
	}
	defer rt.Close()
	args := os.Getenv(envArgs)
	if args == "" {
		args = `{"n":1}`
	}
	agent := newAgentArgs(effect, rp, os.Getenv(envCounter), hook, args)
	var res *actoviq.RunResult
	switch mode := os.Getenv(envMode); mode {
	case "run":
		res, err = rt.Run(ctx, agent, &actoviq.Input{RunID: runID, Items: []item.Item{item.UserText("act once")}})
	case "resume":
		var decisions []actoviq.Decision
		if k := os.Getenv(envDecide); k != "" {
			decisions = append(decisions, actoviq.Decision{CallID: callID, Kind: actoviq.DecisionKind(k), By: "crashtest-child",
				Reason: "crash test", Result: "ok", Message: "failed"})
		}
		res, err = resumeWhenFree(ctx, rt, agent, runID, decisions...)
	default:
		return "", fmt.Errorf("%s: unknown mode %q", envMode, mode)
	}
	if err != nil {
		return "", err
	}
	return res.Status, nil
}

// stopHere tells the parent where the child is and waits to be killed.
func stopHere(point string) {
	fmt.Fprintf(os.Stdout, "%s%s\n", markerPrefix, point)
	select {}
}

// killStore stops the process after a RunWrite that durably stored the
// target ledger state of the target call: the write has returned from the
// backend, and nothing after it runs. At pointAnswer it stops before the
// write that would first store the call (the model's answer) is sent.
type killStore struct {
	store.Store
	runID, callID string
	at            store.LedgerState
	stop          func(point string)
}

func (k *killStore) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if k.at == pointAnswer && p.RunID == k.runID {
		for _, w := range p.Ledger {
			if w.Entry.CallID == k.callID && w.ExpectedRevision == 0 {
				k.stop(pointAnswer) // the write that first stores the call, not sent
			}
		}
	}
	res, err := k.Store.RunWrite(ctx, p)
	if err != nil || p.RunID != k.runID {
		return res, err
	}
	for _, en := range res.Ledger {
		if en.CallID == k.callID && en.State == k.at {
			k.stop(string(k.at))
		}
	}
	return res, err
}
