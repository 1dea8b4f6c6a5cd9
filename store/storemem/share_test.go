package storemem_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A write keeps the bytes a caller hands back from a write's result (they
// are the store's own) and copies any other; reads share nothing with
// what the store keeps.
func TestRunWriteSharesOnlyItsOwnBytes(t *testing.T) {
	ctx := context.Background()
	s := storemem.New(nil)
	const tenant, id = "t", "r1"
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: tenant, ID: id, Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"n":1}`)
	en := &store.LedgerEntry{Tenant: tenant, RunID: id, CallID: "c1", Tool: "x", State: store.LedgerPrepared, Args: args}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: tenant, RunID: id, Ledger: []store.LedgerWrite{{Entry: en}},
		Events: []*store.EventRecord{{ID: "e1", Type: "t", Data: json.RawMessage(`{"a":1}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	args[5] = '9' // the caller's input bytes: the store kept a copy
	stored := res.Ledger[0]
	if string(stored.Args) != `{"n":1}` {
		t.Fatalf("the store kept the caller's input bytes: %s", stored.Args)
	}
	// Handed back as read from the result: the same bytes, kept.
	next := *stored
	next.State = store.LedgerStarted
	next.Result = json.RawMessage(`{"ok":true}`)
	res2, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: tenant, RunID: id, Ledger: []store.LedgerWrite{{Entry: &next, ExpectedRevision: stored.Revision}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res2.Ledger[0]; &got.Args[0] != &stored.Args[0] || string(got.Result) != `{"ok":true}` || &got.Result[0] == &next.Result[0] {
		t.Fatalf("args shared %v, result %s copied %v", &got.Args[0] == &stored.Args[0], got.Result, &got.Result[0] != &next.Result[0])
	}
	// Reads are copies.
	list, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: tenant, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	list[0].Args[5] = '7'
	list[0].State = store.LedgerCommitted
	again, _ := s.LedgerList(ctx, &store.LedgerListParams{Tenant: tenant, RunID: id})
	if string(again[0].Args) != `{"n":1}` || again[0].State != store.LedgerStarted {
		t.Fatalf("a read shares the stored entry: %s %s", again[0].Args, again[0].State)
	}
	evs, _ := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id})
	evs[0].Data[5] = '5'
	evs2, _ := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id})
	if string(evs2[0].Data) != `{"a":1}` {
		t.Fatalf("a read shares the stored event: %s", evs2[0].Data)
	}
}
