package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// loadRecorder is a store that records every SessionLoad's parameters.
type loadRecorder struct {
	store.Store
	mu    sync.Mutex
	loads []store.SessionLoadParams
}

func (s *loadRecorder) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	s.mu.Lock()
	s.loads = append(s.loads, *p)
	s.mu.Unlock()
	return s.Store.SessionLoad(ctx, p)
}

// take returns the loads recorded since the last take, as "asOf/last".
func (s *loadRecorder) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.loads {
		out = append(out, fmt.Sprintf("%d/%d", p.AsOf, p.Last))
	}
	s.loads = nil
	return out
}

// seenModel is a scripted model that records the transcript of each
// request, as texts.
type seenModel struct {
	*scripted.Provider
	mu   sync.Mutex
	seen []string
}

func (m *seenModel) record(req *llm.Request) {
	m.mu.Lock()
	m.seen = append(m.seen, texts(req.Items))
	m.mu.Unlock()
}

func (m *seenModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.record(req)
	return m.Provider.Generate(ctx, req)
}

func (m *seenModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	m.record(req)
	return m.Provider.Stream(ctx, req)
}

func (m *seenModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// texts renders a transcript: each item's text, or call:ID / result:ID.
func texts(items []item.Item) string {
	var out []string
	for _, it := range items {
		switch {
		case it.ToolCall != nil:
			out = append(out, "call:"+it.ToolCall.ID)
		case it.ToolResult != nil:
			out = append(out, "result:"+it.ToolResult.CallID)
		default:
			out = append(out, it.Text)
		}
	}
	return strings.Join(out, " | ")
}

// pad makes a script start after n model turns: the scripted model picks
// its turn by the assistant turns of the transcript, and a run in a
// session sees the session's.
func pad(n int, turns ...scripted.Turn) *scripted.Provider {
	return scripted.New(append(make([]scripted.Turn, n), turns...)...)
}

// responses returns the items of each model.response event, from
// Runtime.Events, or from a sink's events when evs is given.
func responses(t *testing.T, evs []actoviq.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Type != actoviq.EvModelResponse {
			continue
		}
		var d actoviq.ModelResponseData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, texts(d.Items))
	}
	return out
}

type sessSink struct {
	mu  sync.Mutex
	evs []actoviq.Event
}

func (l *sessSink) Emit(_ context.Context, ev actoviq.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *sessSink) take() []actoviq.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.evs
	l.evs = nil
	return out
}

// fillSession runs three runs in session id: "q1" (a tool call, then
// "a1"), "q2" ("a2"), "q3" (a tool call, then "a3"): 10 items.
func fillSession(t *testing.T, s *setup, id string) {
	t.Helper()
	look := &payTool{name: "look"}
	for i, r := range []struct {
		p    *scripted.Provider
		text string
	}{
		{pad(0, scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "look", `{"amount":1}`)}}, scripted.Turn{Text: "a1"}), "q1"},
		{pad(2, scripted.Turn{Text: "a2"}), "q2"},
		{pad(3, scripted.Turn{ToolCalls: []scripted.ToolCall{call("k3", "look", `{"amount":3}`)}}, scripted.Turn{Text: "a3"}), "q3"},
	} {
		res, err := s.rt.Run(s.ctx, agent(r.p, look), &actoviq.Input{RunID: fmt.Sprintf("fill-%s-%d", id, i), SessionID: id,
			Items: []item.Item{item.UserText(r.text)}})
		if err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("fill %d: %+v %v", i, res, err)
		}
	}
}

const tenItems = "q1 | call:k1 | result:k1 | a1 | q2 | a2 | q3 | call:k3 | result:k3 | a3"

// A run continuing a session holds it by reference: the run's log holds
// only its own items and its checkpoint the revision it started from; the
// model, Get, Events and sinks still see the whole transcript, as of that
// revision, also after the session moved on. An interrupted run of the
// session reads its prefix back only to call the model again: a decision
// reads nothing of the session. It holds with the default session window
// (the session fits in it: the run records a window of its 10 items) and
// with the whole session asked for (no window recorded).
func TestSessionByReference(t *testing.T) {
	for _, c := range []struct {
		name   string
		window int
		loads  [3]string // the new run's, Get's and the resume's
		head   string    // the run's recorded window
	}{
		{"default window", 0, [3]string{"0/1000", "10/10", "0/1 14/14"}, "10"},
		{"whole session", actoviq.WholeSession, [3]string{"0/0", "10/0", "0/1 14/0"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) { testSessionByReference(t, c.window, c.loads, c.head) })
	}
}

func testSessionByReference(t *testing.T, window int, loads [3]string, recorded string) {
	s := newSetup(t)
	rec := &loadRecorder{Store: s.st}
	s.st = rec
	s.rt = s.runtime(t)
	fillSession(t, s, "s")
	rec.take()

	model := &seenModel{Provider: pad(5, scripted.Turn{Text: "a4"})}
	a := agent(model.Provider)
	a.Provider, a.SessionWindow = model, window
	sink := &sessSink{}
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r4", SessionID: "s", Items: []item.Item{item.UserText("q4")}}, sink)
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if got := model.requests(); len(got) != 1 || got[0] != tenItems+" | q4" {
		t.Fatalf("the model saw %q", got)
	}
	if got := rec.take(); strings.Join(got, " ") != loads[0] {
		t.Fatalf("a new run loaded the session %v, want once (%s)", got, loads[0])
	}
	run, err := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r4"})
	if err != nil {
		t.Fatal(err)
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(run.Checkpoint, &head); err != nil {
		t.Fatal(err)
	}
	if len(run.Log) != 2 || string(head["session_ref"]) != "true" || string(head["session_base"]) != "10" ||
		string(head["session_prefix"]) != "10" || head["items"] != nil || string(head["session_window"]) != recorded {
		t.Fatalf("stored run: %d log items, head %s", len(run.Log), run.Checkpoint)
	}
	info, err := s.rt.Get(s.ctx, "r4")
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(info.Transcript); got != tenItems+" | q4 | a4" || info.SessionRevision != 10 || info.SessionItems != 10 || info.SessionOmitted != 0 {
		t.Fatalf("Get: %s, session revision %d, items %d", got, info.SessionRevision, info.SessionItems)
	}
	evs, err := s.rt.Events(s.ctx, "r4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, sunk := fmt.Sprint(responses(t, evs)), fmt.Sprint(responses(t, sink.take())); got != "[a4]" || sunk != got {
		t.Fatalf("model.response items: Events %s, sink %s", got, sunk)
	}

	// The session moves on; r4 still reads as of revision 10.
	a5 := agent(pad(6, scripted.Turn{Text: "a5"}))
	a5.SessionWindow = window
	if res, err := s.rt.Run(s.ctx, a5, &actoviq.Input{RunID: "r5", SessionID: "s",
		Items: []item.Item{item.UserText("q5")}}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	rec.take()
	if info, err = s.rt.Get(s.ctx, "r4"); err != nil || texts(info.Transcript) != tenItems+" | q4 | a4" {
		t.Fatalf("Get after the session moved on: %v, %v", texts(info.Transcript), err)
	}
	if got := rec.take(); strings.Join(got, " ") != loads[1] {
		t.Fatalf("Get loaded the session %v, want as of revision 10 (%s)", got, loads[1])
	}

	// An interrupted run of the session: decided without reading the
	// session, resumed with it read back once; the model sees the history
	// once, the session gets the run's own items.
	pay := &payTool{name: "pay"}
	model = &seenModel{Provider: pad(7, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
	a = approvalAgent(model.Provider, pay)
	a.Provider, a.SessionWindow = model, window
	res, err = s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r6", SessionID: "s", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	const history = tenItems + " | q4 | a4 | q5 | a5"
	rec.take()
	if err := s.rt.Decide(s.ctx, "r6", actoviq.Decision{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a decision loaded the session: %v", got)
	}
	rt2 := s.runtime(t) // another process resumes it
	sink = &sessSink{}
	res, err = rt2.Resume(s.ctx, a, "r6", &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{sink}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("resume: %+v %v, %d payments", res, err, pay.count())
	}
	if got := model.requests(); len(got) != 2 || got[0] != history+" | pay" || got[1] != history+" | pay | call:p1 | result:p1" {
		t.Fatalf("the model saw %q", got)
	}
	// The resume reads the session's revision (its last item: did the
	// session move on?), then the prefix once, as of revision 14.
	if got := strings.Join(rec.take(), " "); got != loads[2] {
		t.Fatalf("the resume loaded the session %s, want %s", got, loads[2])
	}
	if got, want := fmt.Sprint(responses(t, sink.take())), "[paid]"; got != want {
		t.Fatalf("sink after the resume: %s, want %s", got, want)
	}
	evs, _ = s.rt.Events(s.ctx, "r6", nil)
	if got := fmt.Sprint(responses(t, evs)); got != "[call:p1 paid]" {
		t.Fatalf("Events of the resumed run: %s", got)
	}
	st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s", AsOf: 0, Last: 4})
	if err != nil || st.Revision != 18 || len(st.Entries) != 4 || st.Entries[0].RunID != "r6" {
		t.Fatalf("session after r6: %+v %v", st, err)
	}
	run, _ = s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r6"})
	if len(run.Log) != 4 {
		t.Fatalf("r6's log holds %d items, want its 4 own", len(run.Log))
	}
}

// AgentSpec.SessionWindow: a run takes the session's last items, from the
// first user message among them, loads only those, records them, and reads
// the same ones back on every later read, whatever the session and the
// agent say then.
func TestSessionWindow(t *testing.T) {
	s := newSetup(t)
	rec := &loadRecorder{Store: s.st}
	s.st = rec
	s.rt = s.runtime(t)
	fillSession(t, s, "s")
	rec.take()

	for _, c := range []struct {
		window int
		want   string // what the run takes of the session
	}{
		{5, "q3 | call:k3 | result:k3 | a3"},           // a2 dropped: start at a user message
		{4, "q3 | call:k3 | result:k3 | a3"},           // exactly a turn
		{3, "call:k3 | result:k3 | a3"},                // no user message: a call and its result
		{2, "a3"},                                      // a result without its call is dropped
		{1, "a3"},                                      // one item
		{7, "q2 | a2 | q3 | call:k3 | result:k3 | a3"}, // a1 dropped
		{9, "q2 | a2 | q3 | call:k3 | result:k3 | a3"}, // q1's turn without q1 dropped
		{10, tenItems},                                 // the whole session
		{50, tenItems},                                 // a window past the session
	} {
		t.Run(fmt.Sprint(c.window), func(t *testing.T) {
			sess := fmt.Sprintf("s%d", c.window)
			fillSession(t, s, sess)
			rec.take()
			model := &seenModel{Provider: pad(assistantTurns(c.want), scripted.Turn{Text: "ok"})}
			a := agent(model.Provider)
			a.Provider, a.SessionWindow = model, c.window
			id := fmt.Sprintf("w%d", c.window)
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: sess, Items: []item.Item{item.UserText("go")}})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			if got := rec.take(); len(got) == 0 || got[0] != fmt.Sprintf("0/%d", c.window) {
				t.Fatalf("loads %v, want the last %d items first", got, c.window)
			}
			if got := model.requests(); len(got) != 1 || got[0] != c.want+" | go" {
				t.Fatalf("the model saw %q, want %q", got, c.want+" | go")
			}
			// The session moves on (this run appended); the run reads
			// back the items it took, and only those.
			info, err := s.rt.Get(s.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			n := len(strings.Split(c.want, " | "))
			if texts(info.Transcript) != c.want+" | go | ok" || info.SessionItems != n || info.SessionRevision != 10 {
				t.Fatalf("Get: %s, %d session items, revision %d", texts(info.Transcript), info.SessionItems, info.SessionRevision)
			}
			if got := rec.take(); len(got) != 1 || got[0] != fmt.Sprintf("10/%d", n) {
				t.Fatalf("Get loaded %v, want the %d items the run took as of 10", got, n)
			}
		})
	}

	// An interrupted run resumes with the window it took, read back as of
	// its revision, though the agent now asks for another.
	fillSession(t, s, "sr")
	pay := &payTool{name: "pay"}
	model := &seenModel{Provider: pad(2, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
	a := approvalAgent(model.Provider, pay)
	a.Provider, a.SessionWindow = model, 5
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "wr", SessionID: "sr", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	rec.take()
	a.SessionWindow = 2
	res, err = s.runtime(t).Resume(s.ctx, a, "wr", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("resume: %+v %v", res, err)
	}
	const window = "q3 | call:k3 | result:k3 | a3"
	if got := model.requests(); len(got) != 2 || got[1] != window+" | pay | call:p1 | result:p1" {
		t.Fatalf("the model saw %q", got)
	}
	if got := strings.Join(rec.take(), " "); got != "0/1 10/4" {
		t.Fatalf("the resume loaded %s, want 0/1 10/4", got)
	}

	if err := (&actoviq.AgentSpec{ID: "x", Model: "m", Provider: scripted.New(), SessionWindow: -2}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "SessionWindow") || !strings.Contains(err.Error(), "WholeSession") {
		t.Fatalf("negative window: %v", err)
	}
	if err := (&actoviq.AgentSpec{ID: "x", Model: "m", Provider: scripted.New(), SessionWindow: actoviq.WholeSession}).Validate(); err != nil {
		t.Fatalf("WholeSession: %v", err)
	}
	if _, err := actoviq.New(s.st, &actoviq.Config{SessionWindow: -3}); err == nil || !strings.Contains(err.Error(), "Config.SessionWindow") {
		t.Fatalf("Config.SessionWindow -3: %v", err)
	}
}

// assistantTurns counts the model turns in a rendered transcript as the
// scripted model does: a run of assistant items (texts starting with "a",
// calls) is one turn.
func assistantTurns(rendered string) int {
	n, prev := 0, false
	for _, w := range strings.Split(rendered, " | ") {
		a := strings.HasPrefix(w, "call:") || (len(w) == 2 && w[0] == 'a') || w == "ok"
		if a && !prev {
			n++
		}
		prev = a
	}
	return n
}

// A run that sees only a window of its session cannot know the call ids
// outside it and may use one again. The session stays usable: a run that
// reads both calls renames the later one (and its result) in what it sends,
// the same way on every read, instead of sending a provider two calls of
// one id.
func TestSessionWindowReusedCallID(t *testing.T) {
	s := newSetup(t)
	fillSession(t, s, "sd")
	look := &payTool{name: "look"}
	model := &seenModel{Provider: pad(2, scripted.Turn{ToolCalls: []scripted.ToolCall{call("k1", "look", `{"amount":9}`)}}, scripted.Turn{Text: "done"})}
	a := agent(model.Provider, look)
	a.Provider, a.SessionWindow = model, 4
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "win", SessionID: "sd", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("windowed run: %+v %v", res, err)
	}
	if got := model.requests(); len(got) != 2 || got[1] != "q3 | call:k3 | result:k3 | a3 | go | call:k1 | result:k1" {
		t.Fatalf("the windowed run's model saw %q (k1 is outside its window)", got)
	}
	model = &seenModel{Provider: pad(7, scripted.Turn{Text: "ok"})}
	a = agent(model.Provider)
	a.Provider = model
	res, err = s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "all", SessionID: "sd", Items: []item.Item{item.UserText("again")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("a run reading the whole session: %+v %v", res, err)
	}
	want := tenItems + " | go | call:k1_s11 | result:k1_s11 | done | again"
	if got := model.requests(); len(got) != 1 || got[0] != want {
		t.Fatalf("the model saw %q, want %q", got, want)
	}
	info, err := s.rt.Get(s.ctx, "all")
	if err != nil || texts(info.Transcript) != want+" | ok" {
		t.Fatalf("Get: %s, %v", texts(info.Transcript), err)
	}
}
