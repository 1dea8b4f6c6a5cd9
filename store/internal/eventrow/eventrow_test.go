package eventrow

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

func sample() []Record {
	at := time.Date(2026, 12, 2, 9, 0, 0, 123456000, time.UTC)
	approval := []byte(`{"kind":"approve","by":"alice","at":"2026-12-02T09:00:00Z"}`)
	return []Record{
		{Event: &store.EventRecord{ID: "e1", ParentRunID: "p", TraceID: "tr", SpanID: "sp", Type: "model.response", Time: at,
			Data: json.RawMessage(`{"a":[1,2,{"b":"<&>"}]}`)}},
		{Event: &store.EventRecord{ID: "e2", Type: "tool.prepared", Time: at, Data: json.RawMessage(`null`)},
			Entry: &store.LedgerEntry{CallID: "c\u2028\"1", Turn: 3, Index: 1, Tool: "pay", Effect: "side-effect",
				State: store.LedgerPrepared, IdempotencyKey: "k", Attempt: 0, ArgsDigest: "d", Args: json.RawMessage(`{"to": "ada"}`),
				Holder: "h", Epoch: 7, StartedAt: at, CommittedAt: at.Add(time.Second)},
			Approval: approval},
		{Event: &store.EventRecord{ID: "e3", Type: "tool.skipped", Time: at},
			Entry: &store.LedgerEntry{CallID: "c2", Tool: "x", State: store.LedgerCommitted, Result: json.RawMessage(`"r"`),
				Error: json.RawMessage(`{"m":1}`)}},
	}
}

func TestRoundTrip(t *testing.T) {
	recs := sample()
	text, crc, calls, ok := Encode(recs)
	if !ok || !reflect.DeepEqual(calls, []string{"c\u2028\"1", "c2"}) {
		t.Fatalf("Encode: ok %v, calls %q", ok, calls)
	}
	written := time.Date(2026, 12, 2, 9, 1, 0, 0, time.UTC)
	back, err := Decode(&Row{Tenant: "t", RunID: "r", FirstSeq: 4, Seq: 7, More: []byte(text), MoreCRC: crc, MoreCalls: calls, Written: written})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range back {
		w := recs[i]
		ev := *w.Event
		ev.Tenant, ev.RunID, ev.Seq = "t", "r", int64(5+i)
		if !reflect.DeepEqual(*r.Event, ev) {
			t.Fatalf("record %d event\n got %+v\nwant %+v", i, *r.Event, ev)
		}
		if (w.Entry == nil) != (r.Entry == nil) {
			t.Fatalf("record %d entry: %v", i, r.Entry)
		}
		if w.Entry == nil {
			continue
		}
		e := *w.Entry
		e.Tenant, e.RunID, e.Revision, e.CreatedAt, e.UpdatedAt = "t", "r", 1, written, written
		if w.Approval != nil {
			var d store.DecisionRecord
			if err := json.Unmarshal(w.Approval, &d); err != nil {
				t.Fatal(err)
			}
			e.Approval = &d
		}
		if !reflect.DeepEqual(*r.Entry, e) {
			t.Fatalf("record %d entry\n got %+v\nwant %+v", i, *r.Entry, e)
		}
	}
	if Find(back, "c2") != back[2].Entry || Find(back, "nope") != nil {
		t.Fatal("Find")
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, r := range map[string]Record{
		"space before data": {Event: &store.EventRecord{ID: "e", Type: "x", Data: json.RawMessage(` {}`)}},
		"newline after args": {Event: &store.EventRecord{ID: "e", Type: "x"},
			Entry: &store.LedgerEntry{CallID: "c", Tool: "t", State: store.LedgerPrepared, Args: json.RawMessage("{}\n")}},
		"id not UTF-8":      {Event: &store.EventRecord{ID: "\xff", Type: "x"}},
		"call id not UTF-8": {Event: &store.EventRecord{ID: "e", Type: "x"}, Entry: &store.LedgerEntry{CallID: "\xfe", State: store.LedgerPrepared}},
	} {
		if _, _, _, ok := Encode([]Record{r}); ok {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestFoldable(t *testing.T) {
	ev := &store.EventRecord{Type: "x"}
	newEntry := func(st store.LedgerState) *store.LedgerEntry { return &store.LedgerEntry{CallID: "c", State: st} }
	for name, c := range map[string]struct {
		p    store.RunWriteParams
		want bool
	}{
		"one event":           {store.RunWriteParams{Events: []*store.EventRecord{ev}}, false},
		"two events":          {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}}, true},
		"response":            {store.RunWriteParams{Events: []*store.EventRecord{ev}, Ledger: []store.LedgerWrite{{Entry: newEntry(store.LedgerPrepared), Event: ev}}}, true},
		"a transition":        {store.RunWriteParams{Events: []*store.EventRecord{ev}, Ledger: []store.LedgerWrite{{Entry: newEntry(store.LedgerPrepared), ExpectedRevision: 1, Event: ev}}}, false},
		"a started new entry": {store.RunWriteParams{Events: []*store.EventRecord{ev}, Ledger: []store.LedgerWrite{{Entry: newEntry(store.LedgerStarted), Event: ev}}}, false},
		"an unknown one":      {store.RunWriteParams{Events: []*store.EventRecord{ev}, Ledger: []store.LedgerWrite{{Entry: newEntry(store.LedgerUnknown), Event: ev}}}, false},
		"entry without event": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{{Entry: newEntry(store.LedgerStarted), ExpectedRevision: 2}}}, true},
	} {
		if got := Foldable(&c.p); got != c.want {
			t.Errorf("%s: Foldable = %v", name, got)
		}
	}
}

func TestTail(t *testing.T) {
	ev := &store.EventRecord{Type: "x"}
	entry := func(call string, st store.LedgerState) *store.LedgerEntry {
		return &store.LedgerEntry{CallID: call, State: st}
	}
	for name, c := range map[string]struct {
		p        store.RunWriteParams
		tail     int
		foldable bool
	}{
		"response with its first start": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("b", store.LedgerPrepared), Event: ev}, {Entry: entry("a", store.LedgerStarted), Event: ev}}}, 1, true},
		"one call's response with its start": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerStarted), Event: ev}}}, 1, true},
		"one record before the start": {store.RunWriteParams{Events: []*store.EventRecord{ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerStarted), Event: ev}}}, 1, false},
		"started not last": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerStarted), Event: ev}, {Entry: entry("b", store.LedgerPrepared), Event: ev}}}, 0, false},
		"a started transition": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerStarted), ExpectedRevision: 1, Event: ev}}}, 0, false},
		"started without event": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerStarted)}}}, 0, true},
		"unknown last": {store.RunWriteParams{Events: []*store.EventRecord{ev, ev}, Ledger: []store.LedgerWrite{
			{Entry: entry("a", store.LedgerUnknown), Event: ev}}}, 0, false},
	} {
		tail := Tail(&c.p)
		if tail != c.tail || FoldableBefore(&c.p, tail) != c.foldable {
			t.Errorf("%s: Tail = %d, FoldableBefore = %v; want %d, %v", name, tail, FoldableBefore(&c.p, tail), c.tail, c.foldable)
		}
	}
}

// FuzzDecode: any more text (with a matching checksum, so that the decoder
// itself is reached) either fails with an error or gives records that
// encode to a text that decodes to the same records.
func FuzzDecode(f *testing.F) {
	text, _, calls, _ := Encode(sample()[1:])
	f.Add([]byte(text), int64(2), "c\u2028\"1", "c2")
	f.Add([]byte(`[{"id":"a","type":"t","time":1}]`), int64(1), "", "")
	f.Add([]byte(`[{"id":"a","type":"t","time":1,"entry":{"call":"x","state":"prepared"}}]`), int64(1), "x", "")
	_ = calls
	f.Fuzz(func(t *testing.T, more []byte, n int64, c1, c2 string) {
		var cs []string
		for _, c := range []string{c1, c2} {
			if c != "" {
				cs = append(cs, c)
			}
		}
		written := time.Unix(1700000000, 0).UTC()
		row := &Row{Tenant: "t", RunID: "r", FirstSeq: 10, Seq: 10 + n, More: more, MoreCRC: Sum(more), MoreCalls: cs, Written: written}
		recs, err := Decode(row)
		if err != nil {
			return
		}
		if int64(len(recs)) != n {
			t.Fatalf("%d records for a row of %d", len(recs), n)
		}
		in := make([]Record, len(recs))
		for i, r := range recs {
			in[i] = Record{Event: r.Event, Entry: r.Entry}
			if e := r.Entry; e != nil {
				for _, d := range []struct {
					dec *store.DecisionRecord
					out *[]byte
				}{{e.Approval, &in[i].Approval}, {e.Resolution, &in[i].Resolution}} {
					if d.dec != nil {
						b, err := json.Marshal(d.dec)
						if err != nil {
							return // a decision that does not encode again (a time out of range)
						}
						*d.out = b
					}
				}
			}
		}
		text, crc, calls, ok := Encode(in)
		if !ok {
			return // a value this form does not keep byte for byte (not UTF-8, space around JSON)
		}
		again, err := Decode(&Row{Tenant: "t", RunID: "r", FirstSeq: 10, Seq: 10 + n, More: []byte(text), MoreCRC: crc, MoreCalls: calls, Written: written})
		if err != nil {
			t.Fatalf("encoded records do not decode: %v\n%s", err, text)
		}
		for i := range recs {
			a, b := recs[i], again[i]
			if !reflect.DeepEqual(a.Event, b.Event) {
				t.Fatalf("record %d event changed: %+v -> %+v", i, a.Event, b.Event)
			}
			if a.Entry != nil {
				x, y := *a.Entry, *b.Entry
				x.Approval, x.Resolution, y.Approval, y.Resolution = nil, nil, nil, nil
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("record %d entry changed: %+v -> %+v", i, x, y)
				}
			}
		}
	})
}
