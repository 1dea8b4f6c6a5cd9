package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// The session crash: a run in a session appends its items to the session
// journal, then writes its completion. A child is SIGKILLed between the two
// writes. The run's answer is then in the session (the next run's history)
// and the run is still running.
const (
	modeSession          = "session"          // envMode of the session child
	pointSessionAppended = "session-appended" // its kill point
	sessionID            = "s1"
)

// sessionAgent answers one text turn. The child's model says answer; the
// parent's says something else, so a resume that asks the model again
// shows. Both are "scripted", so the agent digest is the same.
func sessionAgent(answer string) (*actoviq.AgentSpec, *scripted.Provider) {
	p := scripted.New(scripted.Turn{Text: "hello"}, scripted.Turn{Text: answer})
	return &actoviq.AgentSpec{ID: "crashtest-session", Model: "scripted-1", Provider: p}, p
}

// runSessionChild runs the run in the session and stops dead right after
// its session append returned.
func runSessionChild(ctx context.Context) (actoviq.Status, error) {
	var tg target
	if err := json.Unmarshal([]byte(os.Getenv(envStore)), &tg); err != nil {
		return "", fmt.Errorf("%s: %w", envStore, err)
	}
	s, err := tg.open(ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	rt, err := actoviq.New(&appendKillStore{Store: s, runID: os.Getenv(envRunID)}, &actoviq.Config{LeaseTTL: leaseTTL})
	if err != nil {
		return "", err
	}
	defer rt.Close()
	a, _ := sessionAgent("first answer")
	if os.Getenv(envSessionTool) != "" {
		a, _ = sessionToolAgent("first answer", os.Getenv(envCounter))
	}
	if w := os.Getenv(envSessionWindow); w != "" {
		if _, err := fmt.Sscan(w, &a.SessionWindow); err != nil {
			return "", err
		}
	}
	res, err := rt.Run(ctx, a, &actoviq.Input{RunID: os.Getenv(envRunID), SessionID: sessionID, Items: []item.Item{item.UserText("and now?")}})
	if err != nil {
		return "", err
	}
	return res.Status, nil
}

// appendKillStore stops the process once the run's session append is
// durable, before the run's completion is written.
type appendKillStore struct {
	store.Store
	runID string
}

func (k *appendKillStore) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	rev, err := k.Store.SessionAppend(ctx, p)
	if err == nil && p.RunID == k.runID {
		stopHere(pointSessionAppended)
	}
	return rev, err
}

// TestCrashBetweenSessionAppendAndCompletion: after the kill, a fresh
// process resumes the run. It used to ask the model again and complete
// with another answer while the session held the first one (the append
// was "recognised" by counting items). The run recognises its own append
// by the run id and turn stored with it, completes with the answer the
// session holds, and does not call the model.
func TestCrashBetweenSessionAppendAndCompletion(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			ctx := context.Background()
			b := setup(t, bk)
			rt := b.parent(t)
			// An earlier run of the session, so the crashed run starts
			// from a revision above zero.
			first, _ := sessionAgent("unused")
			if res, err := rt.Run(ctx, first, &actoviq.Input{SessionID: sessionID, Items: []item.Item{item.UserText("hi")}}); err != nil ||
				res.Status != actoviq.StatusCompleted || res.Output[0].Text != "hello" {
				t.Fatalf("the first run: %+v %v", res, err)
			}
			crashChild(t, b, scenario{effect: tool.SideEffect}, modeSession, "", pointSessionAppended)

			info, err := rt.Get(ctx, b.runID)
			if err != nil || info.StoredStatus != actoviq.StatusRunning {
				t.Fatalf("after the kill: %+v %v, want the run still running (stored)", info, err)
			}
			a, p := sessionAgent("second answer")
			res, err := resumeWhenFree(ctx, b.parent(t), a, b.runID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != actoviq.StatusCompleted || len(res.Output) != 1 || res.Output[0].Text != "first answer" {
				t.Fatalf("resume: %+v (output %+v), want completed with the session's \"first answer\"", res, res.Output)
			}
			if p.Calls() != 0 {
				t.Fatalf("the resume asked the model %d times", p.Calls())
			}
			st, err := rt.Store().SessionLoad(ctx, &store.SessionLoadParams{Tenant: "default", SessionID: sessionID})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, en := range st.Entries {
				var it item.Item
				if err := json.Unmarshal(en.Item, &it); err != nil {
					t.Fatal(err)
				}
				texts = append(texts, it.Text)
				if en.RunID == b.runID && en.Turn != 1 {
					t.Errorf("entry %d of the run has turn %d, want 1 (its one model turn)", en.Seq, en.Turn)
				}
			}
			if fmt.Sprint(texts) != "[hi hello and now? first answer]" {
				t.Fatalf("session journal %q", texts)
			}
			info, _ = rt.Get(ctx, b.runID)
			if info.Status != actoviq.StatusCompleted || info.Output[0].Text != "first answer" {
				t.Fatalf("stored run %s output %+v", info.Status, info.Output)
			}
			// The run holds the session's history by reference: its log
			// has its own items, Get reads the history back.
			var transcript []string
			for _, it := range info.Transcript {
				transcript = append(transcript, it.Text)
			}
			run, err := rt.Store().RunGet(ctx, &store.RunGetParams{Tenant: "default", ID: b.runID})
			if err != nil || fmt.Sprint(transcript) != "[hi hello and now? first answer]" || info.SessionItems != 2 || len(run.Log) != 2 {
				t.Fatalf("stored run: transcript %q, %d session items, %d log items, %v", transcript, info.SessionItems, len(run.Log), err)
			}
		})
	}
}
