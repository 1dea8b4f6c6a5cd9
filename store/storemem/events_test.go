package storemem_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// Events are listed as they were written (the store keeps them compactly:
// times as microseconds, hex ids as bytes, sequence numbers by place, the
// parent and trace ids shared between events),
// whatever the ids of each event, and a listed event shares nothing with
// the stored one.
func TestEventsListedAsWritten(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 13, 0, 0, 123456789, time.FixedZone("x", 3600))
	s := storemem.New(&storemem.Config{Clock: func() time.Time { return at }})
	const tenant, id = "t", "r1"
	first := &store.EventRecord{ID: "e1", ParentRunID: "p", TraceID: "tr", SpanID: "s1", Type: "run.started", Time: at, Data: json.RawMessage(`{"a":1}`)}
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: tenant, ID: id, Status: store.RunRunning},
		Events: []*store.EventRecord{first}}); err != nil {
		t.Fatal(err)
	}
	written := []*store.EventRecord{
		{ID: "e2", ParentRunID: "p", TraceID: "tr", SpanID: "s2", Type: "tool.started", Time: at.Add(time.Second), Data: json.RawMessage(`{"b":[1,2]}`)},
		{ID: "e3", ParentRunID: "p", TraceID: "other", SpanID: "s2", Type: "tool.committed"}, // the store's time
		{ID: "e4", ParentRunID: "", TraceID: "other", Type: "x", Time: time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{ID: "e5", ParentRunID: "p", TraceID: "tr", Type: "y", Time: at, Data: json.RawMessage(`"z"`)},
	}
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: tenant, RunID: id, Events: written})
	if err != nil {
		t.Fatal(err)
	}
	// More than a few chunks of the store's list, one or three at a time.
	more := []*store.EventRecord{}
	for i := range 21 {
		id := fmt.Sprintf("m%d", i)
		switch i % 4 {
		case 0: // the engine's: 32 lowercase hex digits
			id = fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15)
		case 1:
			id = fmt.Sprintf("%032X", uint64(i)*0x9e3779b97f4a7c15+0xabc) // not lowercase: kept as it is
		case 2:
			id = fmt.Sprintf("%031x", i) // 31 digits
		}
		more = append(more, &store.EventRecord{ID: id, TraceID: fmt.Sprint("tr", i/5), SpanID: "s", Type: "z",
			Time: at.Add(time.Duration(i) * time.Millisecond), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	for i := 0; i < len(more); {
		n := 1 + 2*(i%2)
		if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: tenant, RunID: id, Events: more[i : i+n]}); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	want := []store.EventRecord{*first}
	for _, ev := range append(written, more...) {
		want = append(want, *ev)
	}
	for i := range want {
		w := &want[i]
		w.Tenant, w.RunID, w.Seq = tenant, id, int64(i+1)
		if w.Time.IsZero() {
			w.Time = at
		}
		w.Time = w.Time.UTC().Truncate(time.Microsecond)
	}
	for i, ev := range res.Events {
		if !reflect.DeepEqual(*ev, want[i+1]) {
			t.Errorf("written %d: %+v, want %+v", i, *ev, want[i+1])
		}
	}
	list, err := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d events listed, want %d", len(list), len(want))
	}
	for i, ev := range list {
		if !reflect.DeepEqual(*ev, want[i]) {
			t.Errorf("listed %d: %+v, want %+v", i, *ev, want[i])
		}
	}
	list[1].Data[2] = 'X'
	again, _ := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id, AfterSeq: 1, Limit: 1})
	if len(again) != 1 || string(again[0].Data) != `{"b":[1,2]}` {
		t.Fatalf("after a change to a listed event: %+v", again)
	}
	for _, after := range []int64{0, 7, 8, 9, 15, 16, 17, 24, 25, 26} {
		page, err := s.EventList(ctx, &store.EventListParams{Tenant: tenant, RunID: id, AfterSeq: after, Limit: 9})
		if err != nil {
			t.Fatal(err)
		}
		end := min(int(after)+9, len(want))
		if len(page) != end-int(after) {
			t.Fatalf("after %d: %d events, want %d", after, len(page), end-int(after))
		}
		for i, ev := range page {
			if !reflect.DeepEqual(*ev, want[int(after)+i]) {
				t.Errorf("after %d, event %d: %+v, want %+v", after, i, *ev, want[int(after)+i])
			}
		}
	}
}
