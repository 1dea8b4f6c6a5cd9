package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// sessionString renders a loaded session: revision, snapshot revision and
// snapshot, then each entry as seq:run:turn:item.
func sessionString(st *store.SessionState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %s", st.Revision, st.SnapshotRevision, st.Snapshot)
	for _, e := range st.Entries {
		fmt.Fprintf(&b, " %d:%s:%d:%s", e.Seq, e.RunID, e.Turn, e.Item)
	}
	return b.String()
}

// testSessionAsOf: a session loads as it was at a revision (AsOf), or only
// its last entries (Last), across appends that straddle the bounds and
// with snapshots above and below them.
func testSessionAsOf(t *testing.T, bb *bundle) {
	load := func(id string, asOf int64, last int) (*store.SessionState, error) {
		return bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: id, AsOf: asOf, Last: last})
	}
	want := func(id string, asOf int64, last int, exp string) {
		t.Helper()
		st, err := load(id, asOf, last)
		if err != nil {
			t.Fatalf("load %s as of %d, last %d: %v", id, asOf, last, err)
		}
		if got := sessionString(st); got != exp {
			t.Fatalf("load %s as of %d, last %d:\n got %s\nwant %s", id, asOf, last, got, exp)
		}
	}
	// Nothing yet: Last loads an empty session, AsOf a revision it does
	// not have is refused.
	want("s", 0, 5, "0 0 ")
	if _, err := load("s", 1, 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("as of 1 on an empty session: %v", err)
	}
	for _, p := range []*store.SessionLoadParams{{Tenant: "t", SessionID: "s", AsOf: -1}, {Tenant: "t", SessionID: "s", Last: -1}} {
		var ie *store.InvalidError
		if _, err := bb.s.SessionLoad(bb.ctx, p); !errors.As(err, &ie) {
			t.Fatalf("%+v: %v, want an InvalidError", p, err)
		}
	}
	var rev int64
	for i, app := range []struct {
		run   string
		turn  int
		items []json.RawMessage
	}{{"r1", 1, items(`"a"`, `"b"`)}, {"r2", 2, items(`"c"`)}, {"r3", 3, items(`"d"`, `"e"`, `"f"`)}} {
		var err error
		if rev, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "s", ExpectedRevision: rev,
			RunID: app.run, Turn: app.turn, Items: app.items}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	want("s", 0, 0, `6 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c" 4:r3:3:"d" 5:r3:3:"e" 6:r3:3:"f"`)
	want("s", 3, 0, `3 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c"`)
	want("s", 1, 0, `1 0  1:r1:1:"a"`)
	want("s", 5, 0, `5 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c" 4:r3:3:"d" 5:r3:3:"e"`) // inside an append
	want("s", 6, 0, `6 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c" 4:r3:3:"d" 5:r3:3:"e" 6:r3:3:"f"`)
	want("s", 0, 2, `6 0  5:r3:3:"e" 6:r3:3:"f"`)
	want("s", 4, 2, `4 0  3:r2:2:"c" 4:r3:3:"d"`)
	want("s", 2, 1, `2 0  2:r1:1:"b"`)
	want("s", 5, 3, `5 0  3:r2:2:"c" 4:r3:3:"d" 5:r3:3:"e"`)
	want("s", 0, 100, `6 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c" 4:r3:3:"d" 5:r3:3:"e" 6:r3:3:"f"`)
	if _, err := load("s", 7, 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("as of 7 (journal at 6): %v", err)
	}
	if _, err := load("s", 7, 2); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("as of 7, last 2 (journal at 6): %v", err)
	}

	// Snapshots: AsOf uses the latest one at or below the revision; Last
	// never reads one.
	for _, sn := range []struct {
		rev  int64
		data string
	}{{2, `["a","b"]`}, {5, `["a","b","c","d","e"]`}} {
		if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "s", Revision: sn.rev,
			Data: json.RawMessage(sn.data)}); err != nil {
			t.Fatal(err)
		}
	}
	want("s", 0, 0, `6 5 ["a","b","c","d","e"] 6:r3:3:"f"`)
	want("s", 6, 0, `6 5 ["a","b","c","d","e"] 6:r3:3:"f"`)
	want("s", 5, 0, `5 5 ["a","b","c","d","e"]`)
	want("s", 4, 0, `4 2 ["a","b"] 3:r2:2:"c" 4:r3:3:"d"`)
	want("s", 1, 0, `1 0  1:r1:1:"a"`)
	want("s", 0, 3, `6 0  4:r3:3:"d" 5:r3:3:"e" 6:r3:3:"f"`)
	want("s", 4, 4, `4 0  1:r1:1:"a" 2:r1:1:"b" 3:r2:2:"c" 4:r3:3:"d"`)

	// WithSnapshot: Last reads the last revisions as a full load shows
	// them, the snapshot when it covers one of them.
	withSnap := func(id string, asOf int64, last int, exp string) {
		t.Helper()
		st, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: id, AsOf: asOf, Last: last, WithSnapshot: true})
		if err != nil {
			t.Fatalf("load %s as of %d, last %d with snapshot: %v", id, asOf, last, err)
		}
		if got := sessionString(st); got != exp {
			t.Fatalf("load %s as of %d, last %d with snapshot:\n got %s\nwant %s", id, asOf, last, got, exp)
		}
	}
	withSnap("s", 0, 1, `6 0  6:r3:3:"f"`)
	withSnap("s", 0, 2, `6 5 ["a","b","c","d","e"] 6:r3:3:"f"`)
	withSnap("s", 0, 100, `6 5 ["a","b","c","d","e"] 6:r3:3:"f"`)
	withSnap("s", 5, 1, `5 5 ["a","b","c","d","e"]`)
	withSnap("s", 4, 2, `4 0  3:r2:2:"c" 4:r3:3:"d"`)
	withSnap("s", 4, 3, `4 2 ["a","b"] 3:r2:2:"c" 4:r3:3:"d"`)
	withSnap("s", 1, 1, `1 0  1:r1:1:"a"`)
	withSnap("e", 0, 3, "0 0 ")

	// Many appends of different sizes: every window, at every revision,
	// is the tail of the full load at that revision.
	rev = 0
	for i := range 12 {
		var its []json.RawMessage
		for j := range i%4 + 1 {
			its = append(its, json.RawMessage(fmt.Sprintf(`{"i":%d}`, int(rev)+j+1)))
		}
		var err error
		if rev, err = bb.s.SessionAppend(bb.ctx, &store.SessionAppendParams{Tenant: "t", SessionID: "m", ExpectedRevision: rev,
			RunID: fmt.Sprintf("r%d", i), Turn: i, Items: its}); err != nil {
			t.Fatal(err)
		}
	}
	full, err := load("m", 0, 0)
	if err != nil || int64(len(full.Entries)) != rev {
		t.Fatalf("full load: %d entries, %v", len(full.Entries), err)
	}
	for asOf := int64(1); asOf <= rev; asOf++ {
		for last := 1; last <= int(asOf)+1; last++ {
			st, err := load("m", asOf, last)
			if err != nil {
				t.Fatalf("as of %d, last %d: %v", asOf, last, err)
			}
			tail := full.Entries[max(0, int(asOf)-last):asOf]
			exp := sessionString(&store.SessionState{Revision: asOf, Entries: tail})
			if got := sessionString(st); got != exp {
				t.Fatalf("as of %d, last %d:\n got %s\nwant %s", asOf, last, got, exp)
			}
		}
	}

	// With snapshots at 7 and 15 (inside appends): every window with
	// WithSnapshot is the full load at its revision when that load's
	// snapshot covers one of the window's revisions, else the window of
	// the journal; without WithSnapshot, still the journal's.
	for _, sn := range []int64{7, 15} {
		if err := bb.s.SessionSnapshotPut(bb.ctx, &store.SessionSnapshotPutParams{Tenant: "t", SessionID: "m", Revision: sn,
			Data: json.RawMessage(fmt.Sprintf(`{"upto":%d}`, sn))}); err != nil {
			t.Fatal(err)
		}
	}
	for asOf := int64(1); asOf <= rev; asOf++ {
		whole, err := load("m", asOf, 0)
		if err != nil {
			t.Fatal(err)
		}
		for last := 1; last <= int(asOf)+1; last++ {
			raw := sessionString(&store.SessionState{Revision: asOf, Entries: full.Entries[max(0, int(asOf)-last):asOf]})
			exp := raw
			if whole.SnapshotRevision > asOf-int64(last) {
				exp = sessionString(whole)
			}
			st, err := bb.s.SessionLoad(bb.ctx, &store.SessionLoadParams{Tenant: "t", SessionID: "m", AsOf: asOf, Last: last, WithSnapshot: true})
			if err != nil {
				t.Fatalf("as of %d, last %d with snapshot: %v", asOf, last, err)
			}
			if got := sessionString(st); got != exp {
				t.Fatalf("as of %d, last %d with snapshot:\n got %s\nwant %s", asOf, last, got, exp)
			}
			if st, err = load("m", asOf, last); err != nil || sessionString(st) != raw {
				t.Fatalf("as of %d, last %d (journal): %v %v", asOf, last, st, err)
			}
		}
	}
}
