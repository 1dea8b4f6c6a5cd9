package crashtest

import (
	"context"
	"encoding/json"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// envSessionWindow sets the session child's AgentSpec.SessionWindow.
const envSessionWindow = "CRASHTEST_SESSION_WINDOW"

// A windowed run of a session (it takes "hi | hello", not the older "old")
// is SIGKILLed between its session append and its completion write; the
// resume completes it with the session's answer, asks no model, runs no
// tool again, and its transcript is its window then its own items.
func TestRev22CrashWindowedSessionRun(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			ctx := context.Background()
			b := setup(t, bk)
			rt := b.parent(t)
			old, _ := json.Marshal(item.UserText("old"))
			if _, err := rt.Store().SessionAppend(ctx, &store.SessionAppendParams{Tenant: "default", SessionID: sessionID, RunID: "writer", Items: []json.RawMessage{old}}); err != nil {
				t.Fatal(err)
			}
			first, _ := sessionAgent("unused")
			if res, err := rt.Run(ctx, first, &actoviq.Input{SessionID: sessionID, Items: []item.Item{item.UserText("hi")}}); err != nil ||
				res.Status != actoviq.StatusCompleted || res.Output[0].Text != "hello" {
				t.Fatalf("the first run: %+v %v", res, err)
			}
			crashChild(t, b, scenario{effect: tool.SideEffect}, modeSession, "", pointSessionAppended, envSessionTool+"=1", envSessionWindow+"=2")
			if got := readEffects(t, b.counter); len(got) != 1 {
				t.Fatalf("%d effects after the kill, want 1", len(got))
			}
			a, p := sessionToolAgent("second answer", b.counter)
			a.SessionWindow = 5 // another window now: the run keeps its own
			res, err := resumeWhenFree(ctx, b.parent(t), a, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "first answer" || p.Calls() != 0 {
				t.Fatalf("resume: %s %+v output %+v, %d model calls", res.Status, res.Error, res.Output, p.Calls())
			}
			if got := readEffects(t, b.counter); len(got) != 1 {
				t.Fatalf("%d effects after the resume, want 1", len(got))
			}
			info, err := rt.Get(ctx, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range info.Transcript {
				got = append(got, string(it.Type)+":"+it.Text)
			}
			want := "[text:hi text:hello text:and now? tool_call: tool_result: text:first answer]"
			if s := "[" + join(got) + "]"; s != want || info.SessionItems != 2 || info.SessionRevision != 3 {
				t.Fatalf("transcript %s (%d session items, revision %d), want %s", s, info.SessionItems, info.SessionRevision, want)
			}
			st, err := rt.Store().SessionLoad(ctx, &store.SessionLoadParams{Tenant: "default", SessionID: sessionID})
			if err != nil || st.Revision != 7 {
				t.Fatalf("session: revision %d %v, want 7 (3 + the run's 4 items once)", st.Revision, err)
			}
		})
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
