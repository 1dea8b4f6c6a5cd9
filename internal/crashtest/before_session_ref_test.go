package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
)

// A store written by the version before sessions by reference (main at
// 75b2779), testdata/before-session-ref: sqlite.db and pg.sql, made by its
// mkfixture.go.txt. Then a run continuing a session copied the session's
// history into its own log. Session s1 holds two completed runs (6 items:
// "hi", "hi back", "look", a look call, its result, "seen it"), and run
// "wait" continues it, waiting for approval of a payment: its log holds
// those 6 items, its input and its call. Opened by this version (no
// migration: the checkpoint says which form a run has), the old run reads,
// lists its events and resumes as before, its session gets only its own
// items, and a new run of the session holds the session by reference.

// recordingModel is a scripted model that keeps the texts of the
// transcript of each request it was sent.
type recordingModel struct {
	*scripted.Provider
	mu   sync.Mutex
	seen [][]string
}

func (m *recordingModel) record(req *llm.Request) {
	var texts []string
	for _, it := range req.Items {
		switch {
		case it.ToolCall != nil:
			texts = append(texts, "call:"+it.ToolCall.ID)
		case it.ToolResult != nil:
			texts = append(texts, "result:"+it.ToolResult.CallID)
		default:
			texts = append(texts, it.Text)
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, texts)
	m.mu.Unlock()
}

func (m *recordingModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.record(req)
	return m.Provider.Generate(ctx, req)
}

func (m *recordingModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	m.record(req)
	return m.Provider.Stream(ctx, req)
}

func (m *recordingModel) requests() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.seen...)
}

// after pads a script so that it starts after n model turns (the scripted
// model picks its turn by the assistant turns of the transcript).
func after(n int, turns ...scripted.Turn) []scripted.Turn {
	return append(make([]scripted.Turn, n), turns...)
}

func TestStoreBeforeSessionRefSQLite(t *testing.T) {
	checkBeforeSessionRef(t, fixtureSQLite(t, "before-session-ref"))
}

func TestStoreBeforeSessionRefPG(t *testing.T) {
	checkBeforeSessionRef(t, fixturePG(t, "before-session-ref"))
}

// responseItems returns the texts of each model.response event's items, as
// Runtime.Events gives them.
func responseItems(t *testing.T, rt *actoviq.Runtime, runID string) []string {
	t.Helper()
	evs, err := rt.Events(context.Background(), runID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type != actoviq.EvModelResponse {
			continue
		}
		var d actoviq.ModelResponseData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, it := range d.Items {
			if it.ToolCall != nil {
				texts = append(texts, "call:"+it.ToolCall.ID)
			} else {
				texts = append(texts, it.Text)
			}
		}
		out = append(out, strings.Join(texts, ","))
	}
	return out
}

func transcriptTexts(items []item.Item) string {
	var texts []string
	for _, it := range items {
		switch {
		case it.ToolCall != nil:
			texts = append(texts, "call:"+it.ToolCall.ID)
		case it.ToolResult != nil:
			texts = append(texts, "result:"+it.ToolResult.CallID)
		default:
			texts = append(texts, it.Text)
		}
	}
	return strings.Join(texts, " | ")
}

func checkBeforeSessionRef(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const history = "hi | hi back | look | call:c1 | result:c1 | seen it"

	// The old waiting run reads as before: its transcript (from its own
	// log), its session revision, its events.
	wait, err := rt.Get(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := transcriptTexts(wait.Transcript), history+" | pay ada | call:c2"; got != want || wait.Status != actoviq.StatusInterrupted ||
		wait.SessionRevision != 6 || wait.SessionItems != 6 {
		t.Fatalf("old waiting run: %s, transcript %s (want %s), session revision %d, items %d",
			wait.Status, got, want, wait.SessionRevision, wait.SessionItems)
	}
	if got := fmt.Sprint(responseItems(t, rt, "wait")); got != "[call:c2]" {
		t.Fatalf("old run's model.response items: %s", got)
	}

	// Approved and resumed: the model sees the history once, the payment
	// runs once, the session gets the run's own items only.
	var pays atomic.Int64
	if err := rt.Decide(ctx, "wait", actoviq.Decision{CallID: "c2", Kind: actoviq.DecideApprove, By: "alice", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	a := fixtureAgent("fx-approve", true, &pays)
	model := &recordingModel{Provider: scripted.New(after(4, scripted.Turn{Text: "paid ada"})...)}
	a.Provider = model
	res, err := rt.Resume(ctx, a, "wait", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || pays.Load() != 1 {
		t.Fatalf("resume of the old waiting run: %+v, %v, %d payments", res, err, pays.Load())
	}
	reqs := model.requests()
	if len(reqs) != 1 || strings.Join(reqs[0], " | ") != history+" | pay ada | call:c2 | result:c2" {
		t.Fatalf("the resumed old run sent %q", reqs)
	}
	if got := fmt.Sprint(responseItems(t, rt, "wait")); got != "[call:c2 paid ada]" {
		t.Fatalf("old run's model.response items after the resume: %s", got)
	}
	sess, err := st.SessionLoad(ctx, &store.SessionLoadParams{Tenant: rt.Tenant(), SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var appended []string
	for _, en := range sess.Entries {
		if en.RunID == "wait" {
			var it item.Item
			if err := json.Unmarshal(en.Item, &it); err != nil {
				t.Fatal(err)
			}
			appended = append(appended, transcriptTexts([]item.Item{it}))
		}
	}
	if sess.Revision != 10 || strings.Join(appended, " | ") != "pay ada | call:c2 | result:c2 | paid ada" {
		t.Fatalf("session after the old run: revision %d, the run appended %q", sess.Revision, appended)
	}
	run, err := st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: "wait"})
	if err != nil || len(run.Log) != 10 {
		t.Fatalf("the old run's log: %d items, %v (it keeps the form it was stored in)", len(run.Log), err)
	}

	// A new run of the session holds it by reference: its log has its own
	// items only; Get and the model see the whole history.
	model = &recordingModel{Provider: scripted.New(after(5, scripted.Turn{Text: "you paid ada"})...)}
	a = fixtureAgent("fx", false, &pays)
	a.Provider = model
	res, err = rt.Run(ctx, a, &actoviq.Input{RunID: "sess-3", SessionID: "s1", Items: []item.Item{item.UserText("what did I pay?")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("new run in the old session: %+v, %v", res, err)
	}
	full := history + " | pay ada | call:c2 | result:c2 | paid ada"
	if reqs := model.requests(); len(reqs) != 1 || strings.Join(reqs[0], " | ") != full+" | what did I pay?" {
		t.Fatalf("the new run sent %q", reqs)
	}
	run, err = st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: "sess-3"})
	if err != nil || len(run.Log) != 2 {
		t.Fatalf("the new run's log: %d items, %v; want its input and its answer only", len(run.Log), err)
	}
	s3, err := rt.Get(ctx, "sess-3")
	if err != nil {
		t.Fatal(err)
	}
	if got := transcriptTexts(s3.Transcript); got != full+" | what did I pay? | you paid ada" || s3.SessionRevision != 10 || s3.SessionItems != 10 {
		t.Fatalf("new run: transcript %s, session revision %d, items %d", got, s3.SessionRevision, s3.SessionItems)
	}
	if got := fmt.Sprint(responseItems(t, rt, "sess-3")); got != "[you paid ada]" {
		t.Fatalf("new run's model.response items: %s", got)
	}

	// A windowed run reads only the session's last items (5: call c2
	// onwards), from the question among them.
	model = &recordingModel{Provider: scripted.New(after(1, scripted.Turn{Text: "nothing else"})...)}
	a = fixtureAgent("fx", false, &pays)
	a.Provider, a.SessionWindow = model, 5
	res, err = rt.Run(ctx, a, &actoviq.Input{RunID: "sess-4", SessionID: "s1", Items: []item.Item{item.UserText("and before?")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("windowed run in the old session: %+v, %v", res, err)
	}
	if reqs := model.requests(); len(reqs) != 1 || strings.Join(reqs[0], " | ") != "what did I pay? | you paid ada | and before?" {
		t.Fatalf("the windowed run sent %q", reqs)
	}
	s4, err := rt.Get(ctx, "sess-4")
	if err != nil || transcriptTexts(s4.Transcript) != "what did I pay? | you paid ada | and before? | nothing else" ||
		s4.SessionRevision != 12 || s4.SessionItems != 2 {
		t.Fatalf("windowed run: %v, %v", s4, err)
	}
}
