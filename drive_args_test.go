package actoviq_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

const secretArgs = `{"amount":5,"api_key":"sk-live-123"}`

// codecRuntime is a "restarted process" with a codec over the same store.
func (s *setup) codecRuntime(t *testing.T, codec actoviq.Codec) *actoviq.Runtime {
	t.Helper()
	var n atomic.Int64
	rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, LeaseTTL: time.Minute, Codec: codec,
		NewID: func() string { return fmt.Sprintf("id%04d-%p", n.Add(1), &n) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func sealCodec(t *testing.T, key byte, older ...byte) *actoviq.SealCodec {
	t.Helper()
	var olds [][]byte
	for _, o := range older {
		olds = append(olds, bytes.Repeat([]byte{o}, 32))
	}
	c, err := actoviq.NewSealCodec(bytes.Repeat([]byte{key}, 32), olds...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storeText is everything the store holds about the run, as text.
func storeText(t *testing.T, s *setup, runID string) string {
	t.Helper()
	run, err := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: runID})
	if err != nil {
		t.Fatal(err)
	}
	led, _ := s.st.LedgerList(s.ctx, &store.LedgerListParams{Tenant: "default", RunID: runID})
	evs, _ := s.st.EventList(s.ctx, &store.EventListParams{Tenant: "default", RunID: runID})
	b, _ := json.Marshal([]any{run, led, evs})
	return string(b)
}

// An approval-gated call with a secret-looking argument could never run,
// even in one process: the drive that resumed after the approval did not
// have the arguments, so the model was told "restarted" and called again
// until MaxTurns (issue 10, break 1). The runtime that received them keeps
// them in memory.
func TestSecretArgsRunAfterApprovalInOneProcess(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	if res, _ := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); res.Status != actoviq.StatusInterrupted {
		t.Fatalf("status %s", res.Status)
	}
	res, err := s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if pay.count() != 1 || !strings.HasPrefix(pay.calls[0], "r1:c1#1 ") || !strings.Contains(pay.calls[0], "sk-live-123") {
		t.Fatalf("calls %v, want one under r1:c1 with the real argument", pay.calls)
	}
	if txt := storeText(t, s, "r1"); strings.Contains(txt, "sk-live-123") {
		t.Fatal("the secret reached the store")
	}
}

// Without a codec, another process cannot run the approved call: it must
// never pretend the call "was not run" after a person approved it, nor run
// it with the placeholder. It goes back to awaiting approval, and the
// interruption says why and what to do.
func TestSecretArgsAcrossRestartWithoutCodec(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	res, err := s.runtime(t).Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || pay.count() != 0 {
		t.Fatalf("%+v %v calls %d", res, err, pay.count())
	}
	in := res.Interruptions[0]
	if in.Kind != actoviq.InterruptApproval || in.State != store.LedgerAwaitingApproval ||
		!strings.Contains(in.Reason, "no codec") || !strings.Contains(in.Reason, "reject") {
		t.Fatalf("interruption %+v", in)
	}
	// The runtime that received the call still can.
	res, err = s.rt.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 || !strings.Contains(pay.calls[0], "sk-live-123") {
		t.Fatalf("%+v %v calls %v", res, err, pay.calls)
	}
}

// A call that never started, after a crash, in a process without the
// arguments (no codec): nothing ran, but nothing is dropped either
// (docs/design.md#the-ledger, Codec): the call stops with an interruption that says why. The
// operator rejects it (or approves it where the arguments are), and only
// then does the model get a result.
func TestNeverStartedSecretCallStopsWithInterruption(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay", effect: tool.IdempotentWrite}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "slow", `{"amount":1}`), call("c2", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
	slow := &payTool{name: "slow", effect: tool.Read, block: make(chan struct{}), started: make(chan struct{})}
	a := agent(p, slow, pay)
	a.Recovery = actoviq.RecoveryPolicy{RerunReads: true}
	go s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	<-slow.started
	first := slow.block
	slow.set(func(p *payTool) { p.block = nil })
	defer close(first)
	s.clock.Advance(2 * time.Minute) // the first worker "died" during c1; c2 never started
	rt2 := s.runtime(t)
	res, err := rt2.Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusInterrupted || pay.count() != 0 || len(res.Interruptions) != 1 {
		t.Fatalf("%+v %v calls %d", res, err, pay.count())
	}
	if in := res.Interruptions[0]; in.CallID != "c2" || in.Kind != actoviq.InterruptApproval || !strings.Contains(in.Reason, "no codec") {
		t.Fatalf("interruption %+v", in)
	}
	res, err = rt2.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c2", Kind: actoviq.DecideReject, By: "op", Reason: "its secret is gone"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 0 {
		t.Fatalf("%+v %v calls %d", res, err, pay.count())
	}
	info, _ := s.rt.Get(s.ctx, "r1")
	if r := toolResults(t, info)["c2"]; !r.IsError || !strings.Contains(r.Content, "rejected") {
		t.Fatalf("result %+v", r)
	}
}

// With a codec, the sealed arguments travel in the run: another process
// opens them and runs the call with the real secret, which is never in the
// store in clear.
func TestSealedSecretArgsAcrossRestart(t *testing.T) {
	s := newSetup(t)
	codec := sealCodec(t, 1)
	rt1 := s.codecRuntime(t, codec)
	pay := &payTool{name: "pay"}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
	a := approvalAgent(p, pay)
	if res, _ := rt1.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); res.Status != actoviq.StatusInterrupted {
		t.Fatalf("status %s", res.Status)
	}
	txt := storeText(t, s, "r1")
	if strings.Contains(txt, "sk-live-123") || !strings.Contains(txt, "v1."+codec.KeyID()+".") {
		t.Fatal("want the arguments sealed in the run, and never in clear")
	}
	// A wrong key does not open them: the interruption names the key id.
	res, err := s.codecRuntime(t, sealCodec(t, 2)).Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusInterrupted || pay.count() != 0 || !strings.Contains(res.Interruptions[0].Reason, codec.KeyID()) {
		t.Fatalf("wrong key: %+v %v", res, err)
	}
	// After a rotation (a new key first, the old one kept) it opens.
	rotated := sealCodec(t, 3, 1)
	res, err = s.codecRuntime(t, rotated).Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if pay.count() != 1 || !strings.HasPrefix(pay.calls[0], "r1:c1#1 ") || !strings.Contains(pay.calls[0], "sk-live-123") {
		t.Fatalf("calls %v", pay.calls)
	}
	if txt := storeText(t, s, "r1"); strings.Contains(txt, "sk-live-123") || strings.Contains(txt, `"sealed"`) {
		t.Fatal("the secret, or a sealed copy after the turn was recorded, is in the store")
	}
}

// An operator's re-execute of a side effect whose arguments held a secret
// ran under a new key (c2#1) after the model was told "not run"; it must
// run under the same key with the attempt bumped (c1#2).
func TestReexecuteSecretSideEffectKeepsKey(t *testing.T) {
	for _, withCodec := range []bool{true, false} {
		t.Run(fmt.Sprintf("codec=%v", withCodec), func(t *testing.T) {
			s := newSetup(t)
			var codec actoviq.Codec
			if withCodec {
				codec = sealCodec(t, 7)
			}
			pay := &payTool{name: "pay", fail: errUnknownOutcome}
			p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", secretArgs)}}, scripted.Turn{Text: "done"})
			a := agent(p, pay)
			res, _ := s.codecRuntime(t, codec).Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
			if res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
				t.Fatalf("%+v", res)
			}
			pay.set(func(p *payTool) { p.fail = nil })
			rt2 := s.codecRuntime(t, codec)
			if err := rt2.Decide(s.ctx, "r1", actoviq.Decision{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops"}); err != nil {
				t.Fatal(err)
			}
			res, err := s.codecRuntime(t, codec).Resume(s.ctx, a, "r1", nil)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := s.rt.Get(s.ctx, "r1")
			if withCodec {
				if res.Status != actoviq.StatusCompleted || pay.count() != 2 || !strings.HasPrefix(pay.calls[1], "r1:c1#2 ") ||
					!strings.Contains(pay.calls[1], "sk-live-123") {
					t.Fatalf("%+v calls %v", res, pay.calls)
				}
				return
			}
			// Without a codec it stops, with the entry unknown at attempt 1,
			// the reason says why, and the model is never told "not run".
			if res.Status != actoviq.StatusInterrupted || pay.count() != 1 {
				t.Fatalf("%+v calls %v", res, pay.calls)
			}
			in := res.Interruptions[0]
			if in.Kind != actoviq.InterruptReconciliation || in.State != store.LedgerUnknown || in.Attempt != 1 ||
				in.IdempotencyKey != "r1:c1" || !strings.Contains(in.Reason, "no codec") {
				t.Fatalf("interruption %+v", in)
			}
			if _, folded := toolResults(t, info)["c1"]; folded {
				t.Fatal("the model got a result for a call whose outcome is unknown")
			}
			// The operator can still record the truth.
			res, err = rt2.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideFailed, By: "ops", Message: "checked: not charged"}}})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
		})
	}
}

func TestSealCodec(t *testing.T) {
	c := sealCodec(t, 9)
	aad := []byte("default\x00r1\x00c1\x00sha256:x")
	sealed, err := c.Seal([]byte(secretArgs), aad)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "sk-live") || !strings.HasPrefix(sealed, "v1."+c.KeyID()+".") {
		t.Fatalf("sealed %q", sealed)
	}
	if got, err := c.Open(sealed, aad); err != nil || string(got) != secretArgs {
		t.Fatalf("open: %q %v", got, err)
	}
	// Bound to its call: another call's aad does not open it.
	if _, err := c.Open(sealed, []byte("default\x00r1\x00c2\x00sha256:x")); !errors.Is(err, actoviq.ErrSealKey) {
		t.Fatalf("other aad: %v", err)
	}
	for _, bad := range []string{"", "v1.", "v2.x.y", sealed[:len(sealed)-4], "v1." + c.KeyID() + ".!!"} {
		if _, err := c.Open(bad, aad); !errors.Is(err, actoviq.ErrSealKey) {
			t.Fatalf("Open(%q): %v", bad, err)
		}
	}
	if _, err := actoviq.NewSealCodec(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
	keys, err := actoviq.ParseSealKeys(strings.Repeat("ab", 32) + ", " + "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=")
	if err != nil || len(keys) != 2 || keys[0][0] != 0xab || keys[1][31] != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	if _, err := actoviq.ParseSealKeys("not a key"); err == nil {
		t.Fatal("garbage accepted")
	}
}
