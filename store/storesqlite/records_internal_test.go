package storesqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// TestRecordCheckPlan: the check of the hot write's records reads every
// current entry by index (one-record rows through events_by_call, rows of
// several records through event_calls, the ledger table by key) and the
// run's last seq by its key, and runs without a temporary b-tree (the
// INSERT ... SELECT ... RETURNING of entryRecord opened five per record).
func TestRecordCheckPlan(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lines := plan(t, s, recordCheck(2), "t", "r", "k", "h", 1, "c1", "c2")
	text := strings.Join(lines, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "SCAN events") || strings.HasPrefix(l, "SCAN ledger") || strings.HasPrefix(l, "SCAN c") ||
			strings.Contains(l, "TEMP B-TREE") {
			t.Errorf("the check walks or sorts: %q\n%s", l, text)
		}
	}
	for _, want := range []string{"INDEX events_by_call (tenant=? AND run_id=? AND call_id=?)",
		"SEARCH c USING PRIMARY KEY (tenant=? AND run_id=? AND call_id=?)",
		"SEARCH ledger USING PRIMARY KEY (tenant=? AND run_id=? AND call_id=?)",
		"SEARCH claims USING INDEX sqlite_autoindex_claims_1 (tenant=? AND key=?)"} {
		if strings.Count(text, want) < 1 {
			t.Errorf("the check does not read %q\n%s", want, text)
		}
	}
	for q, args := range map[string][]any{recordCheck(2): {"t", "r", "k", "h", 1, "c1", "c2"}, entryInsert(2): make([]any, 62)} {
		rows, err := s.db.Query(`EXPLAIN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				addr            int
				op              string
				p1, p2, p3      any
				p4, p5, comment any
			)
			if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
				t.Fatal(err)
			}
			if op == "OpenEphemeral" || op == "OpenAutoindex" || op == "SorterOpen" {
				t.Errorf("%s at %d in\n%s", op, addr, q)
			}
		}
		rows.Close()
	}
}

// TestEntryRecordsAnswers: the hot write (ledger transitions with their
// events, nothing else) stores and answers as one record at a time did:
// numbering after the run's last event, revisions and creation times
// read from every place an entry can be (a one-record row, a row of
// several records, the ledger table), and on a failure nothing stored
// and the first reason in record order: the fence, a revision (a call
// without an entry is at 0), the run.
func TestEntryRecordsAnswers(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "e.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := newRunR(t, s)
	c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey("r"), Holder: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fence := &store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch}
	// c0..c2 prepared in one row of several records.
	resp := responseWrite(run.Revision, 3)
	resp.Fence = fence
	if _, err := s.RunWrite(ctx, resp); err != nil {
		t.Fatal(err)
	}
	entry := func(id string, st store.LedgerState) *store.LedgerEntry {
		return &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: id, Tool: "pay", Effect: "side-effect", State: st,
			IdempotencyKey: "k-" + id, ArgsDigest: "d", Args: json.RawMessage(`{"n":1}`)}
	}
	rec := func(id string, st store.LedgerState, exp int64) store.LedgerWrite {
		return store.LedgerWrite{Entry: entry(id, st), ExpectedRevision: exp,
			Event: &store.EventRecord{ID: "e-" + id + string(st), Type: "tool." + string(st), Data: json.RawMessage(`{"call":"` + id + `"}`)}}
	}
	write := func(f *store.Fence, runID string, ws ...store.LedgerWrite) (*store.RunWriteResult, error) {
		for i := range ws {
			ws[i].Entry.RunID = runID
		}
		return s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: runID, Fence: f, Ledger: ws})
	}
	events := func() int {
		evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	before := events()
	created0, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := write(fence, "r", rec("c0", store.LedgerStarted, 1), rec("c1", store.LedgerStarted, 1))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res.Ledger {
		if e.Revision != 2 || !e.CreatedAt.Equal(created0.CreatedAt) {
			t.Errorf("entry %d: revision %d created %v, want 2 and %v", i, e.Revision, e.CreatedAt, created0.CreatedAt)
		}
		if want := int64(before + 1 + i); res.Events[i].Seq != want {
			t.Errorf("event %d: seq %d, want %d", i, res.Events[i].Seq, want)
		}
	}
	got, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c1"})
	if err != nil || got.Revision != 2 || got.State != store.LedgerStarted || !got.CreatedAt.Equal(created0.CreatedAt) {
		t.Fatalf("c1 read back: %+v, %v", got, err)
	}
	// An entry in the ledger table (written without an event of its own).
	if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r", Fence: fence,
		Ledger: []store.LedgerWrite{{Entry: entry("t1", store.LedgerPrepared)}},
		Events: []*store.EventRecord{{ID: "x", Type: "note"}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := write(fence, "r", rec("c0", store.LedgerCommitted, 2), rec("t1", store.LedgerStarted, 1)); err != nil ||
		res.Ledger[0].Revision != 3 || res.Ledger[1].Revision != 2 {
		t.Fatalf("a record after an entry in the ledger table: %+v, %v", res, err)
	}
	n := events()

	var ce *store.ConflictError
	// The second record's revision is wrong: nothing of the first stored.
	_, err = write(fence, "r", rec("c2", store.LedgerStarted, 1), rec("c1", store.LedgerCommitted, 1))
	if !errors.As(err, &ce) || ce.ID != "c1" || ce.Expected != 1 || ce.Actual != 2 {
		t.Fatalf("second record behind: %v", err)
	}
	// A call without an entry is at revision 0.
	_, err = write(fence, "r", rec("zz", store.LedgerStarted, 1))
	if !errors.As(err, &ce) || ce.ID != "zz" || ce.Expected != 1 || ce.Actual != 0 {
		t.Fatalf("no entry: %v", err)
	}
	// The fence comes first.
	var fe *store.FencedError
	_, err = write(&store.Fence{Key: c.Key, Holder: "w", Epoch: c.Epoch + 1}, "r", rec("c2", store.LedgerStarted, 7))
	if !errors.As(err, &fe) {
		t.Fatalf("a stale fence: %v", err)
	}
	// A run that does not exist, new entry or not.
	var nf *store.NotFoundError
	if _, err = write(nil, "nope", rec("a", store.LedgerStarted, 0)); !errors.As(err, &nf) || nf.Kind != "run" {
		t.Fatalf("no run, a new entry: %v", err)
	}
	if _, err = write(nil, "nope", rec("a", store.LedgerStarted, 0), rec("b", store.LedgerStarted, 3)); !errors.As(err, &nf) || nf.Kind != "run" {
		t.Fatalf("no run, a revision: %v", err)
	}
	if got := events(); got != n {
		t.Fatalf("failed writes stored events: %d, want %d", got, n)
	}
	if got, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c2"}); err != nil || got.Revision != 1 {
		t.Fatalf("c2 after failed writes: %+v, %v", got, err)
	}
}

// TestRecordsInChunks: writes of more records than one check statement
// or INSERT takes (maxChecked): a model response with twenty calls (the
// first started in a row of its own, the others prepared in one row) and
// then a write moving eighteen of them on; each call's revision found
// whichever chunk it is in, the rows numbered in order; a conflict in a
// later chunk is reported for its call and nothing is stored.
func TestRecordsInChunks(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := newRunR(t, s)
	const k = 20
	resp := responseWrite(run.Revision, k)
	first := resp.Ledger[0]
	first.Entry.State = store.LedgerStarted
	resp.Ledger = append(resp.Ledger[1:], first)
	resp.Events = append(resp.Events, &store.EventRecord{ID: "pc0", Type: "tool.prepared"})
	res, err := s.RunWrite(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Ledger); n != k || res.Ledger[k-1].CallID != "c0" || res.Ledger[k-1].Revision != 1 {
		t.Fatalf("response: %d entries, last %+v", n, res.Ledger[n-1])
	}
	last := res.Events[len(res.Events)-1].Seq
	move := func(exp map[string]int64, ids ...string) (*store.RunWriteResult, error) {
		p := &store.RunWriteParams{Tenant: "t", RunID: "r"}
		for _, id := range ids {
			p.Ledger = append(p.Ledger, store.LedgerWrite{ExpectedRevision: exp[id],
				Entry: &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: id, Tool: "pay", State: store.LedgerStarted, Args: json.RawMessage(`{}`)},
				Event: &store.EventRecord{ID: "s" + id, Type: "tool.started"}})
		}
		return s.RunWrite(ctx, p)
	}
	exp := map[string]int64{}
	var ids []string
	for i := 1; i <= 18; i++ {
		id := fmt.Sprintf("c%d", i)
		ids, exp[id] = append(ids, id), 1
	}
	exp["c18"] = 5 // wrong, in the second chunk
	if _, err := move(exp, ids...); err == nil || !strings.Contains(err.Error(), "c18") {
		t.Fatalf("a conflict in the second chunk: %v", err)
	}
	exp["c18"] = 1
	res, err = move(exp, ids...)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res.Ledger {
		if e.Revision != 2 || e.CallID != ids[i] || res.Events[i].Seq != last+1+int64(i) {
			t.Fatalf("record %d: %s rev %d seq %d", i, e.CallID, e.Revision, res.Events[i].Seq)
		}
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: last})
	if err != nil || len(evs) != 18 {
		t.Fatalf("stored after the response: %d events, %v", len(evs), err)
	}
	// A response naming a call that exists, in its second chunk: nothing
	// of it stored.
	cur, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	p := responseWrite(cur.Revision, k)
	for i := range p.Ledger {
		id := fmt.Sprintf("d%d", i)
		if i == 17 {
			id = "c5"
		}
		p.Ledger[i].Entry.CallID = id
	}
	var ce *store.ConflictError
	if _, err := s.RunWrite(ctx, p); !errors.As(err, &ce) || ce.ID != "c5" || ce.Expected != 0 || ce.Actual != 2 {
		t.Fatalf("a response naming a call that exists: %v", err)
	}
	if evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r", AfterSeq: last + 18}); err != nil || len(evs) != 0 {
		t.Fatalf("the failed response stored %d events, %v", len(evs), err)
	}
}
