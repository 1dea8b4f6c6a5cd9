package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// testNotUTF8 checks that every backend refuses JSON whose strings hold
// bytes that are not UTF-8 (json.Valid accepts them, PostgreSQL's text
// does not) with the same typed error, changing nothing; and that a NUL
// written as the escape \u0000 (which PostgreSQL's jsonb would refuse; the
// stores keep JSON as text) is kept byte for byte.
func testNotUTF8(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	done := entry("t", "r", "c1", 0, store.LedgerCommitted)
	done.Result = json.RawMessage(`{"content":"nul \u0000 kept","data":{"s":"\u0000"}}`)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: done}},
		Events: []*store.EventRecord{{Type: "tool.committed", Data: json.RawMessage(`{"s":"\u0000"}`)}}}); err != nil {
		t.Fatalf("a result with \\u0000: %v", err)
	}
	bad := json.RawMessage("{\"s\":\"bad \xff\xfe end\"}")
	cut := json.RawMessage("{\"s\":\"cut \xc3\"}") // a rune's first byte only
	withResult := func(b json.RawMessage) *store.LedgerEntry {
		e := entry("t", "r", "c2", 1, store.LedgerCommitted)
		e.Result = b
		return e
	}
	cases := map[string]func() error{
		"ledger result": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: withResult(bad)}}})
			return err
		},
		"ledger result, a cut rune": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: withResult(cut)}}})
			return err
		},
		"ledger args": func() error {
			e := entry("t", "r", "c2", 1, store.LedgerPrepared)
			e.Args = bad
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: e}}})
			return err
		},
		"event data": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Events: []*store.EventRecord{{Type: "x", Data: bad}}})
			return err
		},
		"checkpoint": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: bad}})
			return err
		},
		"log item": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
				Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Append: []json.RawMessage{bad}}})
			return err
		},
		"create meta": func() error {
			r := newRun("t", "r2")
			r.Meta = bad
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: r})
			return err
		},
		"session item": func() error {
			_, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", Items: []json.RawMessage{bad}})
			return err
		},
		"run id": func() error {
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r\xff")})
			return err
		},
		"tenant": func() error {
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t\xff", "r3")})
			return err
		},
		"agent id": func() error {
			r := newRun("t", "r2")
			r.AgentID = "a\xff"
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: r})
			return err
		},
		"ledger tool": func() error {
			e := entry("t", "r", "c2", 1, store.LedgerPrepared)
			e.Tool = "pay\xff"
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: e}}})
			return err
		},
		"event type": func() error {
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Events: []*store.EventRecord{{Type: "x\xff"}}})
			return err
		},
		"claim holder": func() error {
			_, err := bb.s.ClaimAcquire(bb.ctx, &store.ClaimAcquireParams{Tenant: "t", Key: "k", Holder: "h\xff", TTL: time.Minute})
			return err
		},
		"session id": func() error {
			_, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s\xff", Items: []json.RawMessage{json.RawMessage(`"x"`)}})
			return err
		},
		"session run id": func() error {
			_, err := bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", RunID: "r\xff", Items: []json.RawMessage{json.RawMessage(`"x"`)}})
			return err
		},
		"run id with a NUL": func() error {
			_, err := bb.s.RunCreate(bb.ctx, &store.RunCreateParams{Run: newRun("t", "r\x00")})
			return err
		},
		"ledger tool with a NUL": func() error {
			e := entry("t", "r", "c2", 1, store.LedgerPrepared)
			e.Tool = "pay\x00"
			_, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Ledger: []store.LedgerWrite{{Entry: e}}})
			return err
		},
		"once value": func() error {
			_, err := bb.s.OncePut(bb.ctx, &store.OncePutParams{Tenant: "t", Key: "k", Value: bad})
			return err
		},
	}
	for name, fn := range cases {
		var ie *store.InvalidError
		if err := fn(); !errors.Is(err, store.ErrInvalid) || !errors.As(err, &ie) {
			t.Errorf("%s: want an *InvalidError, got %v", name, err)
		}
	}
	run, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil || run.Revision != 1 || string(run.Checkpoint) != `{"n":0}` || run.LogLen != 0 {
		t.Fatalf("the run after the refused writes: %+v %v", run, err)
	}
	entries, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(entries) != 1 || string(entries[0].Result) != string(done.Result) {
		t.Fatalf("the ledger after the refused writes: %v, want c1 only, its result byte for byte", err)
	}
	evs, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 1 || string(evs[0].Data) != `{"s":"\u0000"}` {
		t.Fatalf("events after the refused writes: %d %v", len(evs), err)
	}
	if _, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r2"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused create: %v", err)
	}
	if st, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "s"}); err != nil || st.Revision != 0 {
		t.Fatalf("a refused session append: %+v %v", st, err)
	}
}
