package actoviq_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A snapshot that compacts a session (its history replaced by a summary)
// is what every read of the session shows, windowed or not: a window is
// the last items of what a whole read shows, never journal items the
// snapshot replaced. (Review 22 found a window of 6 seeing 6 journal items
// under the snapshot, more than the whole session holds.)
func TestRev22WindowBypassesSnapshot(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		fillSession(t, s, "sn")
		summary, _ := json.Marshal([]item.Item{item.UserText("summary")})
		if err := s.st.SessionSnapshotPut(s.ctx, &store.SessionSnapshotPutParams{Tenant: store.DefaultTenant, SessionID: "sn", Revision: 10, Data: summary}); err != nil {
			t.Fatal(err)
		}
		whole := okModel()
		a := agent(whole.Provider)
		a.Provider, a.SessionWindow = whole, actoviq.WholeSession
		if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "whole", SessionID: "sn", Items: []item.Item{item.UserText("go")}}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		if got := whole.requests(); len(got) != 1 || got[0] != "summary | go" {
			t.Fatalf("the whole session run saw %q", got)
		}
		win := okModel()
		b := agent(win.Provider)
		b.Provider, b.SessionWindow = win, 6
		if res, err := s.rt.Run(s.ctx, b, &actoviq.Input{RunID: "w6", SessionID: "sn", Items: []item.Item{item.UserText("go2")}}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		// The whole session (as a run without a window reads it) is now
		// "summary | go | ok": a window of 6 holds all of it.
		if got := win.requests(); len(got) != 1 || got[0] != "summary | go | ok | go2" {
			t.Fatalf("window 6 saw %q: journal items the snapshot replaced (a run without a window saw %q, and the whole session is 3 items)", got, whole.requests())
		}
		info, err := s.rt.Get(s.ctx, "w6")
		if err != nil || texts(info.Transcript) != "summary | go | ok | go2 | ok" || info.SessionItems != 3 || info.SessionOmitted != 0 || info.SessionError != "" {
			t.Fatalf("Get w6: %+v %v", info, err)
		}
		// The whole session is now "summary | go | ok | go2 | ok" at
		// revision 14. Each window is the last items of that; a window
		// longer than the session takes all of it, a shorter one starts at
		// a user message among them. Each run stops for approval (it
		// appends nothing), so each reads revision 14.
		for _, c := range []struct {
			window  int
			want    string
			omitted int64
		}{
			{4, "go | ok | go2 | ok", 10},                             // 10 journal items left out: the window does not reach the snapshot
			{5, "summary | go | ok | go2 | ok", 0},                    // all of it
			{2, "go2 | ok", 12},                                       // journal items only: 12 before them
			{3, "go2 | ok", 12},                                       // "ok | go2 | ok" cut at the user message
			{1, "ok", 13},                                             // one item
			{100, "summary | go | ok | go2 | ok", 0},                  // a window past the session
			{actoviq.WholeSession, "summary | go | ok | go2 | ok", 0}, // the whole session
		} {
			turns := make([]scripted.Turn, 40)
			for i := range turns {
				turns[i] = scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":1}`)}}
			}
			model := &seenModel{Provider: scripted.New(turns...)}
			a := approvalAgent(model.Provider, &payTool{name: "pay"})
			a.Provider, a.SessionWindow = model, c.window
			id := fmt.Sprintf("c%d", c.window)
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: "sn", Items: []item.Item{item.UserText("x")}})
			if err != nil || res.Status != actoviq.StatusInterrupted {
				t.Fatalf("window %d: %+v %v", c.window, res, err)
			}
			if got := model.requests(); len(got) != 1 || got[0] != c.want+" | x" {
				t.Fatalf("window %d saw %q, want %q", c.window, got, c.want+" | x")
			}
			info, err := s.rt.Get(s.ctx, id)
			if err != nil || texts(info.Transcript) != c.want+" | x | call:p1" || info.SessionOmitted != c.omitted || info.SessionRevision != 14 ||
				info.SessionItems != len(strings.Split(c.want, " | ")) {
				t.Fatalf("window %d: Get %s, %d session items, omitted %d, revision %d, %v", c.window, texts(info.Transcript), info.SessionItems, info.SessionOmitted, info.SessionRevision, err)
			}
		}
	})
}

// A snapshot put later at or below a finished run's revision, that does
// not decode, does not make Runtime.Get of that run fail: its status,
// output and ledger still read, and SessionError says what the transcript
// lacks. (Review 22 found Get failing with the snapshot's DataError.) A
// drive that needs the session fails with the typed error.
func TestRev22GetSurvivesABadSnapshot(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		fillSession(t, s, "bs")
		// bs-default starts from revision 10, bs-whole from 12.
		for _, c := range []struct {
			id     string
			window int
			pad    int
		}{{"bs-default", 0, 5}, {"bs-whole", actoviq.WholeSession, 6}} {
			a := agent(pad(c.pad, scripted.Turn{Text: "a4"}))
			a.SessionWindow = c.window
			if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: c.id, SessionID: "bs", Items: []item.Item{item.UserText("q4")}}); err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%s: %+v %v", c.id, res, err)
			}
		}
		if err := s.st.SessionSnapshotPut(s.ctx, &store.SessionSnapshotPutParams{Tenant: store.DefaultTenant, SessionID: "bs", Revision: 10, Data: json.RawMessage(`{"summary":"x"}`)}); err != nil {
			t.Skipf("the store refuses the snapshot: %v", err)
		}
		{
			info, err := s.rt.Get(s.ctx, "bs-default")
			if err != nil {
				t.Fatalf("Get of a completed run after a bad snapshot: %v", err)
			}
			if info.Status != actoviq.StatusCompleted || texts(info.Output) != "a4" || texts(info.Transcript) != "q4 | a4" || info.SessionItems != 0 ||
				!strings.Contains(info.SessionError, "the transcript lacks the 10 items") || !strings.Contains(info.SessionError, "snapshot") {
				t.Fatalf("Get: status %s, output %s, transcript %s, session items %d, error %q", info.Status, texts(info.Output), texts(info.Transcript), info.SessionItems, info.SessionError)
			}
		}
		// bs-whole started at revision 12 and took the whole session: its
		// read back holds the snapshot at 10 too.
		info, err := s.rt.Get(s.ctx, "bs-whole")
		if err != nil || info.Status != actoviq.StatusCompleted || info.SessionError == "" || texts(info.Transcript) != "q4 | a4" {
			t.Fatalf("Get bs-whole: %+v %v", info, err)
		}
		// A new run whose window reaches the snapshot fails with the
		// typed error; nothing is appended.
		a := agent(pad(7, scripted.Turn{Text: "a5"}))
		if _, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "bs-next", SessionID: "bs", Items: []item.Item{item.UserText("q5")}}); !errors.Is(err, store.ErrData) {
			t.Fatalf("a run reading the bad snapshot: %v", err)
		}
		// A window that stays above the snapshot does not read it.
		a = agent(okModel().Provider)
		a.SessionWindow = 2
		if res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "bs-w2", SessionID: "bs", Items: []item.Item{item.UserText("q6")}}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("a window above the bad snapshot: %+v %v", res, err)
		}
		if info, err := s.rt.Get(s.ctx, "bs-w2"); err != nil || info.SessionError != "" || texts(info.Transcript) != "q4 | a4 | q6 | ok" || info.SessionOmitted != 12 {
			t.Fatalf("Get bs-w2: %+v %v", info, err)
		}
	})
}
