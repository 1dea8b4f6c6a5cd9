package actoviq_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

func (s *setup) tenantRuntime(t *testing.T, tenant string) *actoviq.Runtime {
	t.Helper()
	rt, err := actoviq.New(s.st, &actoviq.Config{Tenant: tenant, Clock: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Two tenants that picked the same run id used to get identical keys, so a
// target deduping on the key answered tenant B with tenant A's payment.
// The key is <runID>:<callID> in the default tenant and
// <tenant>/<runID>:<callID> in any other.
func TestKeysUniqueAcrossTenants(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	for _, tenant := range []string{"default", "acme", "globex"} {
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
		if res, err := s.tenantRuntime(t, tenant).Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("%s: %+v %v", tenant, res, err)
		}
	}
	want := []string{`r1:c1#1 {"amount":5}`, `acme/r1:c1#1 {"amount":5}`, `globex/r1:c1#1 {"amount":5}`}
	if strings.Join(pay.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("keys %q, want %q", pay.calls, want)
	}
	en, err := s.st.LedgerGet(s.ctx, &store.LedgerGetParams{Tenant: "acme", RunID: "r1", CallID: "c1"})
	if err != nil || en.IdempotencyKey != "acme/r1:c1" {
		t.Fatalf("persisted key %v %v", en, err)
	}
}

// Run "acct:7" call "c1" and run "acct" call "7:c1" both used to give the
// key "acct:7:c1". A run id with a separator is refused (typed, nothing
// stored); a provider call id with one is replaced by a ledger-assigned id.
func TestKeysUnambiguous(t *testing.T) {
	s := newSetup(t)
	pay := &payTool{name: "pay"}
	for _, id := range []string{"acct:7", "acme/r1", "a\nb"} {
		p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
		_, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: id})
		var ide *actoviq.IDError
		if !errors.Is(err, actoviq.ErrInvalidID) || !errors.As(err, &ide) || ide.Field != "Input.RunID" {
			t.Fatalf("run id %q: %v, want an IDError naming Input.RunID", id, err)
		}
		if _, err := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: id}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("refused run id %q was stored: %v", id, err)
		}
	}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("7:c1", "pay", `{"amount":5}`), call("x/y", "pay", `{"amount":6}`)}},
		scripted.Turn{Text: "done"})
	res, err := s.rt.Run(s.ctx, agent(p, pay), &actoviq.Input{RunID: "acct"})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, _ := s.rt.Get(s.ctx, "acct")
	var keys []string
	for _, en := range info.Ledger {
		if strings.Count(en.IdempotencyKey, ":") != 1 || strings.Contains(en.IdempotencyKey, "/") || !strings.HasPrefix(en.IdempotencyKey, "acct:") {
			t.Errorf("key %q of call %q is ambiguous", en.IdempotencyKey, en.CallID)
		}
		keys = append(keys, en.IdempotencyKey)
	}
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Fatalf("keys %v", keys)
	}
	// The transcript pairs each call with its result under the new id.
	results := toolResults(t, info)
	for _, it := range info.Transcript {
		if it.Type == item.TypeToolCall {
			if _, ok := results[it.ToolCall.ID]; !ok {
				t.Fatalf("call %q has no result: %v", it.ToolCall.ID, results)
			}
		}
	}
	// A NewID that makes ids with a separator is refused by name too.
	rt, err := actoviq.New(s.st, &actoviq.Config{NewID: func() string { return "a:b" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = rt.Run(s.ctx, agent(scripted.New(scripted.Turn{Text: "x"})), input("hi"))
	var ide *actoviq.IDError
	if !errors.As(err, &ide) || ide.Field != "Config.NewID" {
		t.Fatalf("NewID with a separator: %v", err)
	}
}

// A call already in a ledger keeps the key persisted with it, whatever
// format a later build gives new calls: an upgrade finds a call started
// under the old format (<runID>:<callID> in every tenant), and its
// re-execute runs under that old key, attempt 2.
func TestUpgradeKeepsPersistedKey(t *testing.T) {
	s := newSetup(t)
	rt := s.tenantRuntime(t, "acme")
	pay := &payTool{name: "pay", fail: errUnknownOutcome}
	p := scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "done"})
	a := agent(p, pay)
	if res, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	// What the old build left: the call started (it died while the tool
	// ran), under the old key.
	en, err := s.st.LedgerGet(s.ctx, &store.LedgerGetParams{Tenant: "acme", RunID: "r1", CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	old := *en
	old.State, old.IdempotencyKey, old.Error = store.LedgerStarted, "r1:c1", nil
	if _, err := s.st.RunWrite(s.ctx, &store.RunWriteParams{Tenant: "acme", RunID: "r1",
		Ledger: []store.LedgerWrite{{Entry: &old, ExpectedRevision: en.Revision}}}); err != nil {
		t.Fatal(err)
	}
	upgraded := s.tenantRuntime(t, "acme")
	pay.set(func(p *payTool) { p.fail = nil })
	res, err := upgraded.Resume(s.ctx, a, "r1", nil)
	if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].IdempotencyKey != "r1:c1" ||
		res.Interruptions[0].State != store.LedgerStarted {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = upgraded.Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideReexecute, By: "ops"}}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if got := fmt.Sprint(pay.calls[1:]); got != `[r1:c1#2 {"amount":5}]` {
		t.Fatalf("the re-execute did not run under the persisted key: %s", got)
	}
	en, _ = s.st.LedgerGet(s.ctx, &store.LedgerGetParams{Tenant: "acme", RunID: "r1", CallID: "c1"})
	if en.IdempotencyKey != "r1:c1" || en.Attempt != 2 || en.State != store.LedgerCommitted {
		t.Fatalf("entry %+v", en)
	}
}

// Enqueue (a run for a worker) refuses the same run ids as Run.
func TestEnqueueRefusesAmbiguousRunID(t *testing.T) {
	s := newSetup(t)
	a := agent(scripted.New(scripted.Turn{Text: "x"}))
	_, err := s.rt.Enqueue(s.ctx, a, &actoviq.Input{RunID: "acct:7"})
	var ide *actoviq.IDError
	if !errors.As(err, &ide) || ide.Field != "Input.RunID" {
		t.Fatalf("Enqueue with a separator in the run id: %v", err)
	}
}
