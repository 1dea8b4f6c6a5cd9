package storemem_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/actoviq/actoviq-go/internal/handoff"
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

// A write whose context hands its params over (internal/handoff, the
// engine's writes) keeps the entry, the event and the JSON as they are;
// the mark covers only the params it names (another write with the same
// context is copied as any caller's); invalid JSON is refused all the
// same; decision records and Meta are still copied; reads of entries and
// events still share nothing.
func TestRunWriteKeepsWhatIsHandedOver(t *testing.T) {
	ctx := context.Background()
	s := storemem.New(nil)
	const tenant, id = "t", "r1"
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: tenant, ID: id, Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	ap := &store.DecisionRecord{Kind: "approve", By: "ann"}
	en := &store.LedgerEntry{Tenant: tenant, RunID: id, CallID: "c1", Tool: "x", State: store.LedgerPrepared,
		Args: json.RawMessage(`{"n":1}`), Approval: ap}
	ev := &store.EventRecord{ID: "e1", Type: "t", Data: json.RawMessage(`{"a":1}`)}
	item := json.RawMessage(`{"type":"text"}`)
	meta := json.RawMessage(`{"m":1}`)
	p := &store.RunWriteParams{Tenant: tenant, RunID: id, Ledger: []store.LedgerWrite{{Entry: en}}, Events: []*store.EventRecord{ev},
		Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"v":1}`), Append: []json.RawMessage{item}, Meta: meta}}
	hctx := handoff.With(ctx, p)

	bad := &store.RunWriteParams{Tenant: tenant, RunID: id, Events: []*store.EventRecord{{ID: "e0", Type: "t", Data: json.RawMessage(`{"a":`)}}}
	if _, err := s.RunWrite(handoff.With(ctx, bad), bad); !errors.As(err, new(*store.InvalidError)) {
		t.Fatalf("invalid JSON handed over: %v", err)
	}
	other := &store.RunWriteParams{Tenant: tenant, RunID: id, Events: []*store.EventRecord{{ID: "e2", Type: "t", Data: json.RawMessage(`{"b":1}`)}}}
	if _, err := s.RunWrite(hctx, other); err != nil {
		t.Fatal(err)
	}
	other.Events[0].Data[2] = 'c' // not handed over by hctx: copied
	res, err := s.RunWrite(hctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ledger[0] != en || res.Events[0] != ev || en.Revision != 1 || ev.Seq != 2 || ev.RunID != id {
		t.Fatalf("handed over, yet copied: entry %v (rev %d), event %v (seq %d)", res.Ledger[0] == en, en.Revision, res.Events[0] == ev, ev.Seq)
	}
	if en.Approval == ap || en.Approval.By != "ann" {
		t.Fatalf("a new decision record is shared with the caller: %v", en.Approval == ap)
	}
	run, err := s.RunGet(ctx, &store.RunGetParams{Tenant: tenant, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	meta[2] = 'x'
	// The log's items are shared with reads anyway (never changed in
	// place): the item handed over is the one kept.
	if &run.Log[0][0] != &item[0] || string(run.Meta) != `{"m":1}` {
		t.Fatalf("log %s (kept: %v), meta %s", run.Log[0], &run.Log[0][0] == &item[0], run.Meta)
	}
	again, _ := s.RunGet(ctx, &store.RunGetParams{Tenant: tenant, ID: id})
	if string(again.Meta) != `{"m":1}` {
		t.Fatalf("the caller's Meta reached the store: %s", again.Meta)
	}
	evs, _ := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id})
	if len(evs) != 2 || string(evs[0].Data) != `{"b":1}` || string(evs[1].Data) != `{"a":1}` || evs[1] == ev {
		t.Fatalf("events %d: %s %s", len(evs), evs[0].Data, evs[len(evs)-1].Data)
	}
}
