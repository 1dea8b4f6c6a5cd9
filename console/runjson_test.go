package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
)

// jsonFields decodes a JSON object into its fields.
func jsonFields(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// sameFields checks that got has want's fields with the same encodings,
// except the ones left out (which want must have: the check could fail)
// and the ones replaced, and that got's other fields are among added.
func sameFields(t *testing.T, what string, got, want map[string]json.RawMessage, leftOut, replaced, added []string) {
	t.Helper()
	skip := map[string]bool{}
	for _, k := range replaced {
		skip[k] = true
	}
	for _, k := range leftOut {
		skip[k] = true
		if _, ok := want[k]; !ok {
			t.Errorf("%s: the RunInfo view has no %q to leave out", what, k)
		}
		if v, ok := got[k]; ok {
			t.Errorf("%s: the console sends %q: %s", what, k, v)
		}
	}
	for k, w := range want {
		if skip[k] {
			continue
		}
		if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
			t.Errorf("%s: %q is %s in the console, %s in the RunInfo view", what, k, g, w)
		}
	}
	extra := map[string]bool{}
	for _, k := range added {
		extra[k] = true
	}
	var unknown []string
	for k := range got {
		if _, ok := want[k]; !ok && !extra[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Errorf("%s: the console sends fields the RunInfo view has not: %v", what, unknown)
	}
}

// TestRunJSONIsRunInfo: GET /api/v1/runs/{id} and /api/v1/runs print the
// run's one JSON view (RunInfo's encoding, ledger entries as
// store.LedgerEntry's: the same names and values as runs show --json)
// plus only the page's own fields. The run's Meta and a ledger entry's
// digest of the unredacted arguments, which the console never sent, are
// still left out; the ledger names the worker that moved an entry
// "holder", as RunInfo does.
func TestRunJSONIsRunInfo(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ctx := context.Background()
	meta := json.RawMessage(`{"cli":{"system":"only-in-meta-7731"}}`)
	res, err := f.rt.Run(ctx, f.agent, &actoviq.Input{RunID: "run-m", Meta: meta, Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := f.rt.Resume(ctx, f.agent, "run-m", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "call_1", Kind: actoviq.DecideApprove, By: "t"}}}); err != nil {
		t.Fatal(err)
	}

	r := f.call("GET", "/api/v1/runs/run-m", tokenAnon, "")
	if r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte("only-in-meta-7731")) || bytes.Contains(r.body, []byte(`"worker"`)) {
		t.Errorf("the run's JSON has the meta or a worker field: %s", r.body)
	}
	info, err := f.rt.Get(ctx, "run-m")
	if err != nil {
		t.Fatal(err)
	}
	wantRun, _ := json.Marshal(info)
	got := jsonFields(t, r.body)
	sameFields(t, "run", got, jsonFields(t, wantRun), []string{"meta"}, []string{"ledger"},
		[]string{"ledger", "last_driver", "undecided", "audit", "events", "tasks", "attempts", "cancel_task", "children", "resume"})

	var ledger []json.RawMessage
	if err := json.Unmarshal(got["ledger"], &ledger); err != nil || len(ledger) != 1 || len(info.Ledger) != 1 {
		t.Fatalf("ledger %s (%v), %d entries in RunInfo", got["ledger"], err, len(info.Ledger))
	}
	wantEntry, _ := json.Marshal(info.Ledger[0])
	entry := jsonFields(t, ledger[0])
	sameFields(t, "ledger entry", entry, jsonFields(t, wantEntry), []string{"args_digest"}, []string{"approval"}, []string{"probe"})
	// The approval is RunInfo's, less the digest of the unredacted
	// arguments in it and in its evidence (TestReview20NoDigestOfUnredactedArgs).
	var gotApproval, wantApproval any
	_ = json.Unmarshal(entry["approval"], &gotApproval)
	_ = json.Unmarshal(jsonFields(t, wantEntry)["approval"], &wantApproval)
	if n := dropMember(wantApproval, "args_digest"); n != 2 || !reflect.DeepEqual(gotApproval, wantApproval) {
		t.Errorf("approval: %d digests left out of %s, want 2 and %s", n, jsonFields(t, wantEntry)["approval"], entry["approval"])
	}
	if h := string(entry["holder"]); info.Ledger[0].Holder == "" || h != `"`+info.Ledger[0].Holder+`"` {
		t.Errorf("the entry's holder is %s, want %q", h, info.Ledger[0].Holder)
	}
	// The console's Go type reads its own JSON back.
	var run console.Run
	r.json(t, &run)
	if run.ID != "run-m" || run.Status != actoviq.StatusCompleted || len(run.Ledger) != 1 ||
		run.Ledger[0].Holder != info.Ledger[0].Holder || run.Ledger[0].State != "committed" || run.Ledger[0].Approval == nil {
		t.Errorf("decoded run %+v, ledger %+v", &run.RunInfo, run.Ledger)
	}

	rows := f.call("GET", "/api/v1/runs", tokenAnon, "")
	if bytes.Contains(rows.body, []byte("only-in-meta-7731")) {
		t.Errorf("a list row has the meta: %s", rows.body)
	}
	var list struct{ Runs []json.RawMessage }
	rows.json(t, &list)
	listed, err := f.rt.List(ctx, nil)
	if err != nil || len(listed) != 1 || len(list.Runs) != 1 {
		t.Fatalf("list: %d rows, %d runs (%v)", len(list.Runs), len(listed), err)
	}
	wantRow, _ := json.Marshal(listed[0])
	sameFields(t, "list row", jsonFields(t, list.Runs[0]), jsonFields(t, wantRow), []string{"meta"}, nil, nil)

	// The run page names the entry's holder in its ledger table.
	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/run-m", "", "").body)
	if !strings.Contains(page, `<td class="worker"><code title="`+info.Ledger[0].Holder+`">`) {
		t.Errorf("the ledger table does not name holder %s", info.Ledger[0].Holder)
	}
}

// dropMember deletes the members named key at any depth of v (decoded
// JSON) and returns how many it deleted.
func dropMember(v any, key string) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[key]; ok {
			delete(x, key)
			n++
		}
		for _, e := range x {
			n += dropMember(e, key)
		}
	case []any:
		for _, e := range x {
			n += dropMember(e, key)
		}
	}
	return n
}

// A Go client that decodes whatever body it got into console.Run (a 404's
// error body, a body without the run's fields) reads zero values from the
// embedded RunInfo, as from any other field. With RunInfo embedded as a
// pointer it stayed nil and reading run.ID panicked.
func TestRunDecodesABodyWithoutTheRun(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	r := f.call("GET", "/api/v1/runs/no-such-run", tokenAnon, "")
	if r.status != 404 {
		t.Fatalf("get of a missing run: %d %s", r.status, r.body)
	}
	for _, body := range [][]byte{r.body, []byte(`{}`), []byte(`{"children":[{"children":[{}]}]}`)} {
		var run console.Run
		if err := json.Unmarshal(body, &run); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("reading the decoded run of %s panics: %v", body, p)
				}
			}()
			if run.ID != "" || run.Status != "" || run.Revision != 0 {
				t.Errorf("%s decodes to run %q, status %q", body, run.ID, run.Status)
			}
			for _, c := range run.Children {
				for _, g := range c.Children {
					if c.ID != "" || g.ID != "" {
						t.Errorf("%s decodes to children %q, %q", body, c.ID, g.ID)
					}
				}
			}
		}()
	}
}
