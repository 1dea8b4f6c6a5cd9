package actoviq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/actoviq/actoviq-go/item"
)

// TestCheckpointEncoder: the incremental encoder writes the bytes
// json.Marshal writes, as the transcript grows, when other fields change,
// and when the transcript is replaced by a shorter one.
func TestCheckpointEncoder(t *testing.T) {
	var enc cpEncoder
	cp := &checkpoint{V: 1, TraceID: "t<1>", PolicyVersion: "p&q"}
	check := func(step string) {
		t.Helper()
		got, err := enc.encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(cp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", step, got, want)
		}
	}
	check("no items")
	cp.Items = []item.Item{}
	check("empty transcript")
	for turn := range 5 {
		cp.Items = append(cp.Items, item.UserText(fmt.Sprintf("turn <%d> & \"quoted\"\n", turn)),
			item.NewToolCall(fmt.Sprint("c", turn), "pay", json.RawMessage(`{ "to" : "ada", "n": [1, 2] }`)),
			item.NewToolResult(fmt.Sprint("c", turn), "ok \u2028", turn%2 == 0))
		cp.Turn, cp.Pending = turn+1, []string{fmt.Sprint("c", turn)}
		cp.Usage.InputTokens += 10
		check(fmt.Sprintf("turn %d", turn))
		check(fmt.Sprintf("turn %d again", turn))
	}
	cp.Items = []item.Item{item.AssistantText("another transcript")}
	check("replaced by a shorter transcript")
	cp.Items = append(cp.Items, item.UserText("and more"))
	check("grown again")
	cp.V = 12
	check("another version number")
}
