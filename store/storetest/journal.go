package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// The run journal: a ledger transition and its event are one record, and
// a run's log is appended to, never rewritten.

func ev(typ, id string) *store.EventRecord {
	return &store.EventRecord{Type: typ, ID: id, TraceID: "tr", SpanID: "sp-" + id, Data: json.RawMessage(`{"id":"` + id + `"}`)}
}

func testLedgerRecords(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	// A model response: one plain event, two prepared entries with theirs.
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Events: []*store.EventRecord{ev("model.response", "m1")},
		Ledger: []store.LedgerWrite{
			{Entry: entry("t", "r", "b", 1, store.LedgerPrepared), Event: ev("tool.prepared", "pb")},
			{Entry: entry("t", "r", "a", 0, store.LedgerPrepared), Event: ev("tool.prepared", "pa")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := eventIDs(res.Events); !slices.Equal(got, []string{"m1@1", "pb@2", "pa@3"}) {
		t.Fatalf("stored events %v: want the plain event first, then the ledger writes' in Ledger order", got)
	}
	if len(res.Ledger) != 2 || res.Ledger[0].CallID != "b" || res.Ledger[0].Revision != 1 || res.Ledger[1].Revision != 1 {
		t.Fatalf("stored entries %+v", res.Ledger)
	}
	created := res.Ledger[1].CreatedAt
	bb.clock.Advance(time.Second)

	// started, then a stale write, then committed: each one record.
	started := *res.Ledger[1]
	started.State, started.Attempt, started.Holder, started.Epoch = store.LedgerStarted, 1, "w1", 2
	started.StartedAt = bb.clock.Now()
	res, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &started, ExpectedRevision: 1, Event: ev("tool.started", "sa")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 1 || res.Events[0].Seq != 4 || res.Ledger[0].Revision != 2 || !res.Ledger[0].CreatedAt.Equal(created) {
		t.Fatalf("started: events %v, entry %+v (created %v)", eventIDs(res.Events), res.Ledger[0], created)
	}
	stale := started
	stale.State = store.LedgerCommitted
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &stale, ExpectedRevision: 1, Event: ev("tool.committed", "stale")}}})
	wantConflict(t, err, 1, 2)
	bb.clock.Advance(time.Second)
	committed := *res.Ledger[0]
	committed.State, committed.Result, committed.CommittedAt = store.LedgerCommitted, json.RawMessage(`{"content":"paid"}`), bb.clock.Now()
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &committed, ExpectedRevision: 2, Event: ev("tool.committed", "ca")}}}); err != nil {
		t.Fatal(err)
	}
	got, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.LedgerCommitted || got.Revision != 3 || string(got.Result) != `{"content":"paid"}` || got.Attempt != 1 ||
		got.Holder != "w1" || !got.CreatedAt.Equal(created) || !got.UpdatedAt.After(created) || !got.StartedAt.Equal(started.StartedAt) ||
		!got.CommittedAt.Equal(committed.CommittedAt) || string(got.Args) != `{"amount":5}` {
		t.Fatalf("LedgerGet after committed: %+v", got)
	}

	// A write without an event of its own (an event of the write describes
	// it) moves the entry on too, and the next record follows it.
	moved := *got
	moved.Resolution = &store.DecisionRecord{Kind: "void", By: "alice", At: bb.clock.Now()}
	res, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Events: []*store.EventRecord{ev("agent.changed", "ac")},
		Ledger: []store.LedgerWrite{{Entry: &moved, ExpectedRevision: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ledger[0].Revision != 4 || !res.Ledger[0].CreatedAt.Equal(created) {
		t.Fatalf("entry written without an event: %+v", res.Ledger[0])
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &moved, ExpectedRevision: 3, Event: ev("tool.x", "x")}}})
	wantConflict(t, err, 3, 4)
	again := *res.Ledger[0]
	again.Holder = "w2"
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &again, ExpectedRevision: 4, Event: ev("tool.y", "y")}}}); err != nil {
		t.Fatal(err)
	}
	list, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].CallID != "a" || list[0].Revision != 5 || list[0].Holder != "w2" || list[0].Resolution == nil ||
		list[1].CallID != "b" || list[1].Revision != 1 {
		t.Fatalf("LedgerList: %+v", list)
	}
	evs, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if got := eventIDs(evs); !slices.Equal(got, []string{"m1@1", "pb@2", "pa@3", "sa@4", "ca@5", "ac@6", "y@7"}) {
		t.Fatalf("EventList %v", got)
	}
	if evs[3].Type != "tool.started" || evs[3].SpanID != "sp-sa" || evs[3].TraceID != "tr" || string(evs[3].Data) != `{"id":"sa"}` {
		t.Fatalf("a ledger write's event read back as %+v", evs[3])
	}

	// A fenced record under a lost claim writes nothing.
	if _, err := acquire(bb, "run:r", "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	late := again
	late.Revision = 5
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "w0", Epoch: 1},
		Ledger: []store.LedgerWrite{{Entry: &late, ExpectedRevision: 5, Event: ev("tool.z", "z")}}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fenced record: %v", err)
	}
	// A new entry on a run that does not exist.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "nope",
		Ledger: []store.LedgerWrite{{Entry: entry("t", "nope", "a", 0, store.LedgerPrepared), Event: ev("tool.prepared", "n")}}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record on a missing run: %v", err)
	}
	// A failed write of several records leaves none of them.
	fresh := entry("t", "r", "c", 2, store.LedgerPrepared)
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: fresh, Event: ev("tool.prepared", "pc")}, {Entry: &late, ExpectedRevision: 2, Event: ev("tool.q", "q")}}})
	wantConflict(t, err, 2, 5)
	evs, _ = bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if len(evs) != 7 {
		t.Fatalf("failed writes left events: %v", eventIDs(evs))
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an entry of a failed write: %v", err)
	}
}

func eventIDs(evs []*store.EventRecord) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s@%d", e.ID, e.Seq)
	}
	return out
}

func logStrings(l []json.RawMessage) []string {
	out := make([]string, len(l))
	for i, it := range l {
		out[i] = string(it)
	}
	return out
}

func testRunLog(t *testing.T, bb *bundle) {
	r := newRun("t", "r")
	r.Log = items(`{"i":0}`, `"one"`)
	got := mustCreate(t, bb, r)
	want := []string{`{"i":0}`, `"one"`}
	if !slices.Equal(logStrings(got.Log), want) || got.LogLen != 2 {
		t.Fatalf("created run's log %v (len %d)", logStrings(got.Log), got.LogLen)
	}
	// Writes through a second handle (which compacts the log off the write
	// path); the first handle reads, at any moment.
	h := bb.open(t, bb.clock.Now)
	rev := got.Revision
	for i := range 150 {
		var app []json.RawMessage
		for k := range i % 3 {
			s := fmt.Sprintf(`{"turn":%d,"k":%d,"text":"x\u001fy"}`, i, k)
			app = append(app, json.RawMessage(s))
			want = append(want, s)
		}
		res, err := h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
			Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Append: app}})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if res.Run.LogLen != len(want) || res.Run.Log != nil {
			t.Fatalf("write %d: LogLen %d (want %d), Log %d items (want none)", i, res.Run.LogLen, len(want), len(res.Run.Log))
		}
		rev = res.Run.Revision
		if i%37 == 0 {
			cur, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(logStrings(cur.Log), want) {
				t.Fatalf("after write %d: log %d items, want %d", i, len(cur.Log), len(want))
			}
		}
	}
	// A stale or fenced append adds nothing.
	_, err := h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run: &store.RunUpdate{ExpectedRevision: rev - 1, Status: store.RunRunning, Append: items(`"stale"`)}})
	wantConflict(t, err, rev-1, rev)
	if _, err := acquire(bb, "run:r", "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = h.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "w0", Epoch: 1},
		Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Append: items(`"fenced"`)}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fenced append: %v", err)
	}
	cur, err := bb.s.RunGet(bb.ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(logStrings(cur.Log), want) || cur.LogLen != len(want) || string(cur.Checkpoint) != `{"n":149}` {
		t.Fatalf("log at the end: %d items (want %d), checkpoint %s", len(cur.Log), len(want), cur.Checkpoint)
	}
	list, err := bb.s.RunList(bb.ctx, &store.RunListParams{Tenant: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Log != nil || list[0].LogLen != len(want) {
		t.Fatalf("RunList: %d runs, log %d items, LogLen %d", len(list), len(list[0].Log), list[0].LogLen)
	}
	// A claimed run comes with its log.
	q := newRun("t", "q")
	q.Status, q.Log = store.RunQueued, items(`"a"`)
	mustCreate(t, bb, q)
	run, _, err := bb.s.RunClaimNext(bb.ctx, &store.RunClaimNextParams{Tenant: "t", Holder: "w", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != "q" || !slices.Equal(logStrings(run.Log), []string{`"a"`}) {
		t.Fatalf("claimed run %s with log %v", run.ID, logStrings(run.Log))
	}
	// Bad items are refused before anything is stored.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "q",
		Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunRunning, Append: items(`{"x":`)}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid item: %v", err)
	}
}

// testEventRows: the records of one write read back one by one, whatever
// a backend stores them as (the SQL stores keep a write's records in one
// row when its ledger records are new entries): numbered in order, paged
// by AfterSeq and Limit anywhere inside a write, their entries found,
// checked (a second new entry of a call is a conflict) and moved on.
func testEventRows(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	mustCreate(t, bb, newRun("t", "other"))
	prepared := func(call string, idx int) store.LedgerWrite {
		e := entry("t", "r", call, idx, store.LedgerPrepared)
		e.Turn = 1
		return store.LedgerWrite{Entry: e, Event: ev("tool.prepared", "p"+call)}
	}
	// A model response: the run, its event, three prepared calls.
	resp, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Run:    &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)},
		Events: []*store.EventRecord{ev("model.response", "m1")},
		Ledger: []store.LedgerWrite{prepared("a", 0), prepared("b", 1), prepared("c", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	written := resp.Ledger[1].CreatedAt
	bb.clock.Advance(time.Second)
	// Two new entries alone (the first record is a ledger one), and the
	// same call ids in another run.
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{prepared("d", 3), prepared("e", 4)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "other",
		Ledger: []store.LedgerWrite{{Entry: entry("t", "other", "b", 0, store.LedgerPrepared), Event: ev("tool.prepared", "ob")},
			{Entry: entry("t", "other", "d", 1, store.LedgerPrepared), Event: ev("tool.prepared", "od")}}}); err != nil {
		t.Fatal(err)
	}
	// Plain events only, one with space around its data (kept byte for
	// byte).
	spaced := ev("note", "x2")
	spaced.Data = json.RawMessage(" {\"a\": 1}\n")
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Events: []*store.EventRecord{ev("note", "x1"), spaced}}); err != nil {
		t.Fatal(err)
	}
	all, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"m1@1", "pa@2", "pb@3", "pc@4", "pd@5", "pe@6", "x1@7", "x2@8"}
	if got := eventIDs(all); !slices.Equal(got, want) {
		t.Fatalf("EventList %v, want %v", got, want)
	}
	for i, e := range resp.Events {
		g := all[i]
		if g.Type != e.Type || g.SpanID != e.SpanID || g.TraceID != e.TraceID || !g.Time.Equal(e.Time) ||
			string(g.Data) != string(e.Data) || g.Tenant != "t" || g.RunID != "r" {
			t.Fatalf("event %d read back as %+v, written %+v", i, g, e)
		}
	}
	if string(all[7].Data) != " {\"a\": 1}\n" {
		t.Fatalf("event data with space around it read back as %q", all[7].Data)
	}
	for after := int64(0); after <= 8; after++ {
		for limit := 0; limit <= 3; limit++ {
			page, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			w := want[after:]
			if limit > 0 && len(w) > limit {
				w = w[:limit]
			}
			if got := eventIDs(page); !slices.Equal(got, w) {
				t.Fatalf("EventList after %d, limit %d: %v, want %v", after, limit, got, w)
			}
		}
	}
	for _, call := range []string{"a", "b", "c", "d", "e"} {
		got, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: call})
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 1 || got.State != store.LedgerPrepared || got.Turn != 1 || string(got.Args) != `{"amount":5}` ||
			got.Tenant != "t" || got.RunID != "r" || got.CallID != call {
			t.Fatalf("LedgerGet %s: %+v", call, got)
		}
		if call <= "c" && (!got.CreatedAt.Equal(written) || !got.UpdatedAt.Equal(written)) {
			t.Fatalf("LedgerGet %s: created %v, updated %v, want %v", call, got.CreatedAt, got.UpdatedAt, written)
		}
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "z"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LedgerGet of a call no row names: %v", err)
	}
	// A second new entry of a call is a conflict, wherever its record is;
	// a failed write of several records leaves none of them.
	for _, call := range []string{"a", "c", "d", "e"} {
		_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
			Ledger: []store.LedgerWrite{prepared("f", 5), prepared(call, 6)}})
		wantConflict(t, err, 0, 1)
	}
	if evs, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"}); len(evs) != 8 {
		t.Fatalf("failed writes left events: %v", eventIDs(evs))
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "f"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an entry of a failed write: %v", err)
	}
	// Under a claim that was lost, nothing is written.
	if _, err := acquire(bb, "run:r", "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "w0", Epoch: 1},
		Events: []*store.EventRecord{ev("model.response", "m2")}, Ledger: []store.LedgerWrite{prepared("g", 7)}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write of several records under a lost claim: %v", err)
	}
	// A call of the response moves on: started, then committed.
	bb.clock.Advance(time.Second)
	started := *resp.Ledger[1]
	started.State, started.Attempt, started.StartedAt = store.LedgerStarted, 1, bb.clock.Now()
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &started, ExpectedRevision: 1, Event: ev("tool.started", "sb")}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events[0].Seq != 9 || res.Ledger[0].Revision != 2 || !res.Ledger[0].CreatedAt.Equal(written) {
		t.Fatalf("started: %v, %+v", eventIDs(res.Events), res.Ledger[0])
	}
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &started, ExpectedRevision: 1, Event: ev("tool.started", "sb2")}}})
	wantConflict(t, err, 1, 2)
	committed := *res.Ledger[0]
	committed.State, committed.Result = store.LedgerCommitted, json.RawMessage(`"ok"`)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
		Ledger: []store.LedgerWrite{{Entry: &committed, ExpectedRevision: 2, Event: ev("tool.committed", "cb")}}}); err != nil {
		t.Fatal(err)
	}
	list, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, fmt.Sprintf("%s:%s:%d", e.CallID, e.State, e.Revision))
	}
	if w := []string{"a:prepared:1", "b:committed:3", "c:prepared:1", "d:prepared:1", "e:prepared:1"}; !slices.Equal(got, w) {
		t.Fatalf("LedgerList %v, want %v", got, w)
	}
	both, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunIDs: []string{"r", "other"}})
	if err != nil || len(both) != 7 || both[0].RunID != "other" || both[0].CallID != "b" || both[0].Revision != 1 {
		t.Fatalf("LedgerList of two runs: %d entries, %v", len(both), err)
	}
	if evs, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: 6}); !slices.Equal(eventIDs(evs),
		[]string{"x1@7", "x2@8", "sb@9", "cb@10"}) {
		t.Fatalf("EventList after 6: %v", eventIDs(evs))
	}
	// The run's last write, of several records, gives its claim up.
	held, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: "run:r"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Release: true,
		Fence:  &store.Fence{Key: "run:r", Holder: held.Holder, Epoch: held.Epoch},
		Run:    &store.RunUpdate{ExpectedRevision: 2, Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)},
		Events: []*store.EventRecord{ev("model.response", "m9"), ev("run.completed", "end")}})
	if err != nil || !slices.Equal(eventIDs(res.Events), []string{"m9@11", "end@12"}) {
		t.Fatalf("the last write: %v, %v", res, err)
	}
	if c, err := bb.s.ClaimGet(bb.ctx, &store.ClaimGetParams{Tenant: "t", Key: "run:r"}); err != nil || c.ExpiresAt.After(bb.clock.Now()) {
		t.Fatalf("the claim after a releasing write of several records: %+v, %v", c, err)
	}
}

// testEventRowsStartedTail: a model's response written with its first
// call's started record (the engine's drive_fold.go): the response's
// events, that call's prepared event among them, the other calls'
// prepared records, then the first call's entry, new and directly
// started, numbered last. Read back one by one (the SQL stores keep the
// records before the started one in one row, the started one in a row
// of its own); the started entry is at revision 1, checked and moved on
// as any; a run that finished with it unsettled is never pruned; a
// failed such write leaves nothing.
func testEventRowsStartedTail(t *testing.T, bb *bundle) {
	mustCreate(t, bb, newRun("t", "r"))
	prepared := func(call string, idx int) store.LedgerWrite {
		return store.LedgerWrite{Entry: entry("t", "r", call, idx, store.LedgerPrepared), Event: ev("tool.prepared", "p"+call)}
	}
	startedNew := func(call string) store.LedgerWrite {
		e := entry("t", "r", call, 0, store.LedgerStarted)
		e.Attempt, e.Holder, e.Epoch, e.StartedAt = 1, "w0", 1, bb.clock.Now()
		return store.LedgerWrite{Entry: e, Event: ev("tool.started", "s"+call)}
	}
	if _, err := acquire(bb, "run:r", "w0", time.Minute); err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: "run:r", Holder: "w0", Epoch: 1}
	res, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Run:    &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)},
		Events: []*store.EventRecord{ev("model.response", "m1"), ev("tool.prepared", "pa")},
		Ledger: []store.LedgerWrite{prepared("b", 1), prepared("c", 2), startedNew("a")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"m1@1", "pa@2", "pb@3", "pc@4", "sa@5"}
	if got := eventIDs(res.Events); !slices.Equal(got, want) || res.Run.EventSeq != 5 || res.Run.Revision != 2 {
		t.Fatalf("the write's events %v (want %v), run %+v", got, want, res.Run)
	}
	if a := res.Ledger[2]; a.CallID != "a" || a.State != store.LedgerStarted || a.Revision != 1 || a.Holder != "w0" {
		t.Fatalf("the started entry as written: %+v", a)
	}
	for after := int64(0); after <= 5; after++ {
		for limit := 0; limit <= 2; limit++ {
			page, err := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			w := want[after:]
			if limit > 0 && len(w) > limit {
				w = w[:limit]
			}
			if got := eventIDs(page); !slices.Equal(got, w) {
				t.Fatalf("EventList after %d, limit %d: %v, want %v", after, limit, got, w)
			}
		}
	}
	list, err := bb.s.LedgerList(bb.ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, fmt.Sprintf("%s:%s:%d", e.CallID, e.State, e.Revision))
	}
	if w := []string{"a:started:1", "b:prepared:1", "c:prepared:1"}; !slices.Equal(got, w) {
		t.Fatalf("LedgerList %v, want %v", got, w)
	}
	a, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "a"})
	if err != nil || a.State != store.LedgerStarted || a.Revision != 1 || a.Attempt != 1 || a.Holder != "w0" || a.Epoch != 1 ||
		!a.StartedAt.Equal(store.Time(bb.clock.Now())) {
		t.Fatalf("LedgerGet a: %+v, %v", a, err)
	}
	// A second new entry of a call is a conflict, a started one too; the
	// failed write leaves nothing.
	for _, w := range []store.LedgerWrite{prepared("a", 0), startedNew("b")} {
		_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
			Run:    &store.RunUpdate{ExpectedRevision: 2, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)},
			Events: []*store.EventRecord{ev("model.response", "m2"), ev("tool.prepared", "pf")},
			Ledger: []store.LedgerWrite{prepared("g", 3), w}})
		wantConflict(t, err, 0, 1)
	}
	if evs, _ := bb.s.EventList(bb.ctx, &store.EventListParams{Tenant: "t", RunID: "r"}); len(evs) != 5 {
		t.Fatalf("failed writes left events: %v", eventIDs(evs))
	}
	if _, err := bb.s.LedgerGet(bb.ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "g"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an entry of a failed write: %v", err)
	}
	// Under a lost claim, nothing.
	_, err = bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: &store.Fence{Key: "run:r", Holder: "w9", Epoch: 1},
		Run:    &store.RunUpdate{ExpectedRevision: 2, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)},
		Events: []*store.EventRecord{ev("model.response", "m3"), ev("tool.prepared", "ph")},
		Ledger: []store.LedgerWrite{prepared("h", 3), startedNew("i")}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("under a lost claim: %v", err)
	}
	// The started call moves on: committed at revision 2, with b's start.
	committed := *res.Ledger[2]
	committed.State, committed.Result = store.LedgerCommitted, json.RawMessage(`"ok"`)
	startB := *res.Ledger[0]
	startB.State, startB.Attempt = store.LedgerStarted, 1
	res2, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: &committed, ExpectedRevision: 1, Event: ev("tool.committed", "ca")},
			{Entry: &startB, ExpectedRevision: 1, Event: ev("tool.started", "sb")}}})
	if err != nil || !slices.Equal(eventIDs(res2.Events), []string{"ca@6", "sb@7"}) || res2.Ledger[0].Revision != 2 || res2.Ledger[1].Revision != 2 {
		t.Fatalf("a's commit with b's start: %+v, %v", res2, err)
	}
	// The run ends with b started: never pruned (a call not settled).
	bb.clock.Advance(time.Second)
	if _, err := bb.s.RunWrite(bb.ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Run: &store.RunUpdate{ExpectedRevision: 2, Status: store.RunCancelled, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	bb.clock.Advance(time.Second)
	pr, err := bb.s.RunPrune(bb.ctx, &store.RunPruneParams{Tenant: "t", FinishedBefore: bb.clock.Now(), Limit: 10})
	if err != nil || slices.Contains(pr.RunIDs, "r") {
		t.Fatalf("prune of a run with a started call: %+v, %v", pr, err)
	}
}
