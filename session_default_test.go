package actoviq_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// longSession appends n turns of three items (a question, two answers) to
// session id in one append each: 3n items.
func longSession(t *testing.T, s *setup, id string, n int) {
	t.Helper()
	var rev int64
	for i := 1; i <= n; i++ {
		var raw []json.RawMessage
		for _, it := range []item.Item{item.UserText(fmt.Sprintf("q%d", i)), item.AssistantText(fmt.Sprintf("a%d", i)), item.AssistantText(fmt.Sprintf("b%d", i))} {
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, b)
		}
		var err error
		if rev, err = s.st.SessionAppend(s.ctx, &store.SessionAppendParams{Tenant: store.DefaultTenant, SessionID: id, ExpectedRevision: rev,
			RunID: fmt.Sprintf("w%d", i), Turn: 1, Items: raw}); err != nil {
			t.Fatal(err)
		}
	}
}

// answering is a model that answers "ok" whatever its turn.
func answering() *seenModel {
	turns := make([]scripted.Turn, 1000)
	for i := range turns {
		turns[i] = scripted.Turn{Text: "ok"}
	}
	return &seenModel{Provider: scripted.New(turns...)}
}

// A run continuing a session takes a bounded window of it by default: the
// last DefaultSessionWindow items, from a question among them. It loads
// only those, the model sees only those, and the run says how many
// earlier items it left out (RunInfo.SessionOmitted, runs show, the
// console). Config.SessionWindow sets the default for agents that set
// none; AgentSpec.SessionWindow overrides it; WholeSession takes every
// item.
func TestDefaultSessionWindow(t *testing.T) {
	s := newSetup(t)
	rec := &loadRecorder{Store: s.st}
	s.st = rec
	if actoviq.DefaultSessionWindow != 1000 {
		t.Fatalf("DefaultSessionWindow is %d", actoviq.DefaultSessionWindow)
	}
	for _, c := range []struct {
		name    string
		config  int // Config.SessionWindow
		agent   int // AgentSpec.SessionWindow
		load    string
		first   string // the first item the model sees
		items   int
		omitted int64
	}{
		// Each session has 1,200 items. The last 1,000 start at item
		// 201, b67: the window is cut to q68 (item 202).
		{"default", 0, 0, "0/1000", "q68", 999, 201},
		{"config", 30, 0, "0/30", "q391", 30, 1170},
		{"agent over config", 30, 7, "0/7", "q399", 6, 1194},
		{"config whole", actoviq.WholeSession, 0, "0/0", "q1", 1200, 0},
		{"agent whole over config", 30, actoviq.WholeSession, "0/0", "q1", 1200, 0},
		{"agent window over config whole", actoviq.WholeSession, 1500, "0/1500", "q1", 1200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, err := actoviq.New(s.st, &actoviq.Config{Clock: s.clock.Now, LeaseTTL: time.Minute, SessionWindow: c.config})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			model := answering()
			a := agent(model.Provider)
			a.Provider, a.SessionWindow = model, c.agent
			id := strings.ReplaceAll(c.name, " ", "-")
			// Each case has a session of its own, at revision 1,200.
			sess := "long-" + id
			longSession(t, s, sess, 400)
			rec.take()
			res, err := rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: sess, Items: []item.Item{item.UserText("go")}})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			if got := rec.take(); len(got) == 0 || got[0] != c.load {
				t.Fatalf("loads %v, want %s first", got, c.load)
			}
			seen := model.requests()
			if len(seen) != 1 {
				t.Fatalf("%d requests", len(seen))
			}
			parts := strings.Split(seen[0], " | ")
			if len(parts) != c.items+1 || parts[0] != c.first || parts[len(parts)-2] != "b400" || parts[len(parts)-1] != "go" {
				t.Fatalf("the model saw %d items from %s to %s, want %d from %s", len(parts), parts[0], parts[len(parts)-1], c.items+1, c.first)
			}
			info, err := rt.Get(s.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if info.SessionRevision != 1200 || info.SessionItems != c.items || info.SessionOmitted != c.omitted ||
				len(info.Transcript) != c.items+2 || texts(info.Transcript[:1]) != c.first {
				t.Fatalf("Get: revision %d, %d session items, %d omitted, %d transcript items from %s", info.SessionRevision, info.SessionItems,
					info.SessionOmitted, len(info.Transcript), texts(info.Transcript[:1]))
			}
			// So does the run's first event.
			evs, err := rt.Events(s.ctx, id, nil)
			if err != nil || len(evs) == 0 || evs[0].Type != actoviq.EvRunStarted {
				t.Fatalf("events %v %v", evs, err)
			}
			var started actoviq.RunStartedData
			if err := json.Unmarshal(evs[0].Data, &started); err != nil || started.Session != sess || started.SessionRevision != 1200 ||
				started.SessionItems != c.items || started.SessionOmitted != c.omitted {
				t.Fatalf("run.started: %s %v", evs[0].Data, err)
			}
			// The JSON view says it under its own name.
			b, _ := json.Marshal(info)
			if want := fmt.Sprintf(`"session_omitted":%d`, c.omitted); c.omitted > 0 && !strings.Contains(string(b), want) {
				t.Fatalf("RunInfo JSON lacks %s", want)
			}
		})
	}
}
