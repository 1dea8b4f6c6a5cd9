package actoviq

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// TestCheckpointEncoder: each write carries the head and only the items
// added since the previous write, and head + log decode back to the
// checkpoint, as the transcript grows and other fields change.
func TestCheckpointEncoder(t *testing.T) {
	var enc cpEncoder
	cp := &checkpoint{V: 1, TraceID: "t<1>", PolicyVersion: "p&q"}
	var log []json.RawMessage
	check := func(step string, wantNew int) {
		t.Helper()
		head, app, err := enc.encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		if len(app) != wantNew {
			t.Fatalf("%s: %d items appended, want %d", step, len(app), wantNew)
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(head, &probe); err != nil {
			t.Fatal(err)
		}
		if _, ok := probe["items"]; ok {
			t.Fatalf("%s: the head holds the transcript: %s", step, head)
		}
		enc.wrote(cp)
		log = append(log, app...)
		back, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: head, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		back.logged = 0
		want := *cp
		if len(want.Items) == 0 {
			want.Items = nil
		}
		if !reflect.DeepEqual(back, &want) {
			t.Fatalf("%s: decoded\n%+v\nwant\n%+v", step, back, &want)
		}
	}
	check("no items", 0)
	for turn := range 5 {
		cp.Items = append(cp.Items, item.UserText(fmt.Sprintf("turn <%d> & \"quoted\"\n", turn)),
			item.NewToolCall(fmt.Sprint("c", turn), "pay", json.RawMessage(`{"to":"ada","n":[1,2]}`)),
			item.NewToolResult(fmt.Sprint("c", turn), "ok \u2028", turn%2 == 0))
		cp.Turn, cp.Pending = turn+1, []string{fmt.Sprint("c", turn)}
		cp.Usage.InputTokens += 10
		check(fmt.Sprintf("turn %d", turn), 3)
		check(fmt.Sprintf("turn %d again", turn), 0)
	}
	cp.Items = cp.Items[:2]
	if _, _, err := enc.encode(cp); err == nil {
		t.Fatal("a transcript shorter than the stored log was encoded")
	}
}

// TestCheckpointBeforeTheLog: a checkpoint written by an older version
// holds its transcript itself; it decodes whole, and the next write moves
// every item to the log.
func TestCheckpointBeforeTheLog(t *testing.T) {
	old := []byte(`{"v":1,"items":[{"type":"text","role":"user","text":"hi"},{"type":"text","role":"assistant","text":"hello"}],"turn":1,"usage":{},"trace_id":"t","policy_version":"p"}`)
	cp, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: old})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Items) != 2 || cp.Items[1].Text != "hello" || cp.logged != 0 {
		t.Fatalf("old checkpoint decoded as %+v", cp)
	}
	enc := cpEncoder{stored: cp.logged}
	head, app, err := enc.encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	if len(app) != 2 {
		t.Fatalf("the first write appends %d items, want the 2 of the old checkpoint", len(app))
	}
	back, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: head, Log: app})
	if err != nil || len(back.Items) != 2 || back.Items[0].Text != "hi" {
		t.Fatalf("moved checkpoint decoded as %+v, %v", back, err)
	}
	// Both at once is not a state any version writes.
	if _, err := decodeCheckpoint(&store.Run{ID: "r", Checkpoint: old, Log: app}); err == nil {
		t.Fatal("a checkpoint with a transcript in both places decoded")
	}
}
