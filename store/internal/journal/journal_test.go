package journal

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestJoinSplit(t *testing.T) {
	for _, items := range [][]json.RawMessage{
		{json.RawMessage(`{"a":1}`)},
		{json.RawMessage(`"x"`), json.RawMessage(`[1, 2]`), json.RawMessage("{\n\"b\": \"\\u001e\"\n}")},
	} {
		row := []byte(Join(items))
		sum := Sum(row)
		for _, s := range []*int64{nil, &sum} {
			got, err := Split(row, len(items), s)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%s", got) != fmt.Sprintf("%s", items) {
				t.Fatalf("split(join(%s)) = %s", items, got)
			}
		}
		bad := sum + 1
		if _, err := Split(row, len(items), &bad); err == nil {
			t.Errorf("a row that does not match its checksum split")
		}
	}
	for _, c := range []struct {
		row string
		n   int
	}{{`{"a":1}`, 2}, {"1\x1e2\x1e3", 2}, {"1\x1e", 2}, {"{not json", 1}, {"", 1}, {"1", 0}} {
		if items, err := Split([]byte(c.row), c.n, nil); err == nil {
			t.Errorf("Split(%q, %d) = %s, want an error", c.row, c.n, items)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("1\x1e{}"), 2)
	f.Add([]byte(`{"a":[1,2]}`), 1)
	f.Fuzz(func(t *testing.T, row []byte, n int) {
		items, err := Split(row, n%8, nil)
		if err != nil {
			return
		}
		for _, it := range items {
			if !json.Valid(it) {
				t.Fatalf("invalid item %q", it)
			}
		}
		if Join(items) != string(row) {
			t.Fatalf("join(split(%q)) = %q", row, Join(items))
		}
	})
}
