package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// An interrupted run of a session whose session moves on meanwhile ends
// overtaken on resume: no tool runs, the model is not asked, and Get
// still shows the history as of its start plus its own items, once.
func TestRev22InterruptedRunOvertaken(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) { rev22Overtaken(t, st) })
}

func rev22Overtaken(t *testing.T, backend store.Store) {
	s := setupOn(t, backend)
	fillSession(t, s, "s")
	pay := &payTool{name: "pay"}
	model := &seenModel{Provider: pad(5, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
	a := approvalAgent(model.Provider, pay)
	a.Provider = model
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1", SessionID: "s", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := s.rt.Run(s.ctx, agent(pad(5, scripted.Turn{Text: "a5"})), &actoviq.Input{RunID: "r2", SessionID: "s",
		Items: []item.Item{item.UserText("q5")}}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("r2: %+v %v", res, err)
	}
	res, err = rt22(t, s).Resume(s.ctx, a, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusFailed || !errors.Is(res.Error, actoviq.ErrSessionConflict) {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if pay.count() != 0 || len(model.requests()) != 1 {
		t.Fatalf("payments %d, model requests %q", pay.count(), model.requests())
	}
	info, err := s.rt.Get(s.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(info.Transcript); got != tenItems+" | pay | call:p1" || info.SessionItems != 10 || info.SessionRevision != 10 {
		t.Fatalf("Get: %s (%d items, rev %d)", got, info.SessionItems, info.SessionRevision)
	}
	evs, err := s.rt.Events(s.ctx, "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(responses(t, evs)); got != "[call:p1]" {
		t.Fatalf("Events: %s", got)
	}
	st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s"})
	if err != nil || st.Revision != 12 {
		t.Fatalf("session: %+v %v", st, err)
	}
}

// failAfterAppend fails the first run write after a session append: the
// process "died" between the append and the completion write.
type failAfterAppend struct {
	store.Store
	mu       sync.Mutex
	appended bool
	failed   bool
}

func (s *failAfterAppend) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	rev, err := s.Store.SessionAppend(ctx, p)
	if err == nil {
		s.mu.Lock()
		s.appended = true
		s.mu.Unlock()
	}
	return rev, err
}

func (s *failAfterAppend) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	s.mu.Lock()
	fail := s.appended && !s.failed
	if fail {
		s.failed = true
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected: died after the session append")
	}
	return s.Store.RunWrite(ctx, p)
}

// A windowed run with a tool turn whose completion write is lost after its
// session append: the resume adopts the append, asks no model, and the
// transcript is the window plus the run's own items, once.
func TestRev22WindowedLostCompletion(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		for _, window := range []int{0, 5, 3} {
			t.Run(fmt.Sprint(window), func(t *testing.T) {
				s := setupOn(t, backend)
				sess := fmt.Sprintf("s%d", window)
				fillSession(t, s, sess)
				fa := &failAfterAppend{Store: s.st}
				s.st = fa
				s.rt = rt22(t, s)
				look := &payTool{name: "look"}
				want := map[int]string{0: tenItems, 5: "q3 | call:k3 | result:k3 | a3", 3: "call:k3 | result:k3 | a3"}[window]
				n := assistantTurns(want)
				model := &seenModel{Provider: pad(n, scripted.Turn{ToolCalls: []scripted.ToolCall{call("k9", "look", `{"amount":9}`)}}, scripted.Turn{Text: "ok"})}
				a := agent(model.Provider, look)
				a.Provider, a.SessionWindow = model, window
				res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "w" + sess, SessionID: sess, Items: []item.Item{item.UserText("go")}})
				if err == nil && res.Status == actoviq.StatusCompleted {
					t.Fatalf("the completion write did not fail: %+v", res)
				}
				if got := model.requests(); len(got) != 2 || got[0] != want+" | go" {
					t.Fatalf("the model saw %q", got)
				}
				// Another run of the session goes first: it sees the lost
				// run's append.
				other := okModel()
				oa := agent(other.Provider)
				oa.Provider = other
				if res, err := s.rt.Run(s.ctx, oa, &actoviq.Input{SessionID: sess, Items: []item.Item{item.UserText("next")}}); err != nil || res.Status != actoviq.StatusCompleted {
					t.Fatalf("next run: %+v %v", res, err)
				}
				if got := other.requests(); len(got) != 1 || got[0] != tenItems+" | go | call:k9 | result:k9 | ok | next" {
					t.Fatalf("the next run's model saw %q", got)
				}
				res, err = rt22(t, s).Resume(s.ctx, a, "w"+sess, nil)
				if err != nil || res.Status != actoviq.StatusCompleted || texts(res.Output) != "ok" {
					t.Fatalf("resume: %+v %v", res, err)
				}
				if len(model.requests()) != 2 || look.count() != 1 {
					t.Fatalf("after resume: %d model requests, %d tool calls", len(model.requests()), look.count())
				}
				info, err := s.rt.Get(s.ctx, "w"+sess)
				if err != nil {
					t.Fatal(err)
				}
				if got := texts(info.Transcript); got != want+" | go | call:k9 | result:k9 | ok" {
					t.Fatalf("Get: %s", got)
				}
				evs, _ := s.rt.Events(s.ctx, "w"+sess, nil)
				if got := fmt.Sprint(responses(t, evs)); got != "[call:k9]" {
					t.Fatalf("Events: %s", got)
				}
				st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: sess})
				if err != nil {
					t.Fatal(err)
				}
				items, _ := json2items(t, st)
				if got := texts(items); got != tenItems+" | go | call:k9 | result:k9 | ok | next | ok" {
					t.Fatalf("session: %s", got)
				}
			})
		}
	})
}

func json2items(t *testing.T, st *store.SessionState) ([]item.Item, error) {
	t.Helper()
	var out []item.Item
	for _, en := range st.Entries {
		var it item.Item
		if err := it.UnmarshalJSON(en.Item); err != nil {
			t.Fatal(err)
		}
		out = append(out, it)
	}
	return out, nil
}

// Two tenants with a session of the same id: each run reads its own
// tenant's session, on start, in Get and on resume.
func TestRev22TenantsSameSessionID(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	st := storemem.New(&storemem.Config{Clock: clock.Now})
	mk := func(tenant string) *setup {
		s := &setup{ctx: context.Background(), st: st, clock: clock}
		rt, err := actoviq.New(st, &actoviq.Config{Clock: clock.Now, LeaseTTL: time.Minute, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		s.rt = rt
		return s
	}
	sa, sb := mk("a"), mk("b")
	fillSession(t, sa, "s")
	if res, err := sb.rt.Run(sb.ctx, agent(pad(0, scripted.Turn{Text: "b1"})), &actoviq.Input{RunID: "b-0", SessionID: "s",
		Items: []item.Item{item.UserText("bq")}}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	pay := &payTool{name: "pay"}
	model := &seenModel{Provider: pad(5, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
	a := approvalAgent(model.Provider, pay)
	a.Provider = model
	res, err := sa.rt.Run(sa.ctx, a, &actoviq.Input{RunID: "ra", SessionID: "s", Items: []item.Item{item.UserText("pay")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	// Tenant b's session moves on: not a's.
	if res, err := sb.rt.Run(sb.ctx, agent(pad(1, scripted.Turn{Text: "b2"})), &actoviq.Input{RunID: "b-1", SessionID: "s",
		Items: []item.Item{item.UserText("bq2")}}); err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	info, err := sa.rt.Get(sa.ctx, "ra")
	if err != nil || texts(info.Transcript) != tenItems+" | pay | call:p1" {
		t.Fatalf("Get: %v %v", info, err)
	}
	res, err = sa.rt.Resume(sa.ctx, a, "ra", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}}})
	if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if got := model.requests(); len(got) != 2 || got[1] != tenItems+" | pay | call:p1 | result:p1" {
		t.Fatalf("the model saw %q", got)
	}
	if _, err := sb.rt.Get(sb.ctx, "ra"); !errors.Is(err, actoviq.ErrNotFound) {
		t.Fatalf("tenant b sees a's run: %v", err)
	}
}

// Runs of one session at once: each either completes, is refused busy, or
// ends overtaken; the session holds each completed run's items once, in
// the order of their appends.
func TestRev22ConcurrentRunsOfOneSession(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) { rev22Concurrent(t, st) })
}

func rev22Concurrent(t *testing.T, backend store.Store) {
	s := setupOn(t, backend)
	fillSession(t, s, "s")
	const n = 6
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := rt22(t, s)
			res, err := rt.Run(s.ctx, agent(pad(5, scripted.Turn{Text: fmt.Sprintf("x%d", i)})), &actoviq.Input{RunID: fmt.Sprintf("c%d", i), SessionID: "s",
				Items: []item.Item{item.UserText(fmt.Sprintf("y%d", i))}})
			switch {
			case errors.Is(err, actoviq.ErrSessionBusy):
				results[i] = "busy"
			case err != nil:
				results[i] = "error: " + err.Error()
			default:
				results[i] = string(res.Status)
			}
		}()
	}
	wg.Wait()
	st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: "default", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := json2items(t, st)
	got := texts(items)
	done := 0
	for i, r := range results {
		switch r {
		case "completed":
			done++
			if !strings.Contains(got, fmt.Sprintf("y%d | x%d", i, i)) || strings.Count(got, fmt.Sprintf("y%d", i)) != 1 {
				t.Fatalf("run %d completed, session %s", i, got)
			}
			info, err := s.rt.Get(s.ctx, fmt.Sprintf("c%d", i))
			if err != nil || !strings.HasSuffix(texts(info.Transcript), fmt.Sprintf("y%d | x%d", i, i)) {
				t.Fatalf("Get c%d: %v %v", i, info, err)
			}
		case "busy", "failed":
		default:
			t.Fatalf("run %d: %s", i, r)
		}
	}
	if done == 0 || len(items) != 10+2*done {
		t.Fatalf("results %v, session %s", results, got)
	}
}

// setupOn is a setup on a given store, with runtimes on the real clock.
func setupOn(t *testing.T, st store.Store) *setup {
	s := &setup{ctx: context.Background(), st: st, clock: &fakeClock{now: time.Now()}}
	s.rt = rt22(t, s)
	return s
}

func rt22(t *testing.T, s *setup) *actoviq.Runtime {
	rt, err := actoviq.New(s.st, &actoviq.Config{LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// okModel answers "ok" on whatever turn it is asked.
func okModel() *seenModel {
	turns := make([]scripted.Turn, 40)
	for i := range turns {
		turns[i] = scripted.Turn{Text: "ok"}
	}
	return &seenModel{Provider: scripted.New(turns...)}
}

// A session written by another writer, with reasoning items and ending in
// a tool result: each window starts at a user message or where calls and
// results pair up, the model sees what Get shows, and both stay the same
// after the session moves on.
func TestRev22WindowEdgesWithReasoning(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		var raw []json.RawMessage
		for _, it := range []item.Item{item.UserText("q1"), {Type: item.TypeReasoning, Role: item.RoleAssistant, Reasoning: &item.Reasoning{Provider: "anthropic", Opaque: []byte("r1")}},
			item.NewToolCall("x1", "look", json.RawMessage(`{"amount":1}`)), item.NewToolResult("x1", "seen", false), item.AssistantText("a1"),
			item.UserText("q2"), {Type: item.TypeReasoning, Role: item.RoleAssistant, Reasoning: &item.Reasoning{Provider: "anthropic", Opaque: []byte("r2")}},
			item.NewToolCall("x2", "look", json.RawMessage(`{"amount":2}`)), item.NewToolResult("x2", "seen", false)} {
			if err := it.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, b)
		}
		for _, sess := range []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e0"} {
			if _, err := s.st.SessionAppend(s.ctx, &store.SessionAppendParams{Tenant: store.DefaultTenant, SessionID: sess, RunID: "writer", Items: raw}); err != nil {
				t.Fatal(err)
			}
		}
		const all = "q1 | reasoning | call:x1 | result:x1 | a1 | q2 | reasoning | call:x2 | result:x2"
		for _, c := range []struct {
			window int
			want   string
		}{
			{1, ""},
			{2, "call:x2 | result:x2"},
			{3, "reasoning | call:x2 | result:x2"},
			{4, "q2 | reasoning | call:x2 | result:x2"},
			{5, "q2 | reasoning | call:x2 | result:x2"},
			{6, "q2 | reasoning | call:x2 | result:x2"},
			{7, "q2 | reasoning | call:x2 | result:x2"},
			{0, all},
		} {
			sess := fmt.Sprintf("e%d", c.window)
			model := okModel()
			a := agent(model.Provider, &payTool{name: "look"})
			a.Provider, a.SessionWindow = model, c.window
			id := "run-" + sess
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: sess, Items: []item.Item{item.UserText("go")}})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("window %d: %+v %v", c.window, res, err)
			}
			want := strings.TrimPrefix(c.want+" | go", " | ")
			if got := rtexts(model.requests()); len(got) != 1 || got[0] != want {
				t.Fatalf("window %d: the model saw %q, want %q", c.window, got, want)
			}
			// The session moves on.
			if res, err := s.rt.Run(s.ctx, agent(okModel().Provider), &actoviq.Input{SessionID: sess, Items: []item.Item{item.UserText("later")}}); err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("window %d: later run %+v %v", c.window, res, err)
			}
			info, err := rt22(t, s).Get(s.ctx, id)
			if err != nil {
				t.Fatalf("window %d: Get: %v", c.window, err)
			}
			if got := rtexts([]string{texts(info.Transcript)})[0]; got != want+" | ok" || info.SessionItems != len(strings.Split(c.want, " | "))-b2i(c.want == "") {
				t.Fatalf("window %d: Get %q (%d session items), want %q", c.window, got, info.SessionItems, want+" | ok")
			}
		}
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rtexts names the empty texts of reasoning items.
func rtexts(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		parts := strings.Split(s, " | ")
		for j, p := range parts {
			if p == "" {
				parts[j] = "reasoning"
			}
		}
		out[i] = strings.Join(parts, " | ")
	}
	return out
}

// A session run interrupted for approval, handed to the queue with its
// decision (Requeue) and driven by a worker in another runtime: the model
// sees the history as of the run's start once, then the run's own items;
// the session gets the run's items once.
func TestRev22RequeuedSessionRunOnAWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		for _, window := range []int{0, 4} {
			s := setupOn(t, backend)
			sess := fmt.Sprintf("q%d", window)
			fillSession(t, s, sess)
			pay := &payTool{name: "pay"}
			want := map[int]string{0: tenItems, 4: "q3 | call:k3 | result:k3 | a3"}[window]
			model := &seenModel{Provider: pad(assistantTurns(want), scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
			a := approvalAgent(model.Provider, pay)
			a.Provider, a.SessionWindow = model, window
			id := "rq-" + sess
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: sess, Items: []item.Item{item.UserText("pay")}})
			if err != nil || res.Status != actoviq.StatusInterrupted {
				t.Fatalf("%+v %v", res, err)
			}
			if err := s.rt.Requeue(s.ctx, id, actoviq.Decision{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}); err != nil {
				t.Fatal(err)
			}
			// The worker's agent asks for another window: the run keeps
			// the one it started with.
			wa := *a
			wa.SessionWindow = map[int]int{0: 2, 4: 0}[window]
			stop := startWorkers(t, []store.Store{s.st}, 1, &wa, actoviq.WorkOptions{})
			ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
			res, err = s.rt.Wait(ctx, id)
			cancel()
			stop()
			if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
				t.Fatalf("window %d: worker: %+v %v, %d payments", window, res, err, pay.count())
			}
			if got := model.requests(); len(got) != 2 || got[0] != want+" | pay" || got[1] != want+" | pay | call:p1 | result:p1" {
				t.Fatalf("window %d: the model saw %q", window, got)
			}
			st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: store.DefaultTenant, SessionID: sess})
			if err != nil {
				t.Fatal(err)
			}
			items, _ := json2items(t, st)
			if got := texts(items); got != tenItems+" | pay | call:p1 | result:p1 | paid" {
				t.Fatalf("window %d: session %s", window, got)
			}
			evs, _ := s.rt.Events(s.ctx, id, nil)
			if got := fmt.Sprint(responses(t, evs)); got != "[call:p1 paid]" {
				t.Fatalf("window %d: Events %s", window, got)
			}
		}
	})
}

// A session run interrupted for approval spawns a background child, which
// a worker drives to completion; then the parent resumes: the child has
// no session, the parent's model sees its history once.
func TestRev22SpawnFromASessionRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		fillSession(t, s, "sp")
		pay := &payTool{name: "pay"}
		model := &seenModel{Provider: pad(5, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}, scripted.Turn{Text: "paid"})}
		a := approvalAgent(model.Provider, pay)
		a.Provider = model
		res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "sp-parent", SessionID: "sp", Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("%+v %v", res, err)
		}
		childModel := &seenModel{Provider: scripted.New(scripted.Turn{Text: "child done"})}
		ca := agent(childModel.Provider)
		ca.ID, ca.Provider = "kid", childModel
		kid, err := s.rt.Spawn(s.ctx, "sp-parent", ca, &actoviq.Input{Items: []item.Item{item.UserText("help")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		stop := startWorkers(t, []store.Store{s.st}, 1, ca, actoviq.WorkOptions{})
		ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
		kres, err := s.rt.Wait(ctx, kid)
		cancel()
		stop()
		if err != nil || kres.Status != actoviq.StatusCompleted {
			t.Fatalf("child: %+v %v", kres, err)
		}
		if got := childModel.requests(); len(got) != 1 || got[0] != "help" {
			t.Fatalf("the child saw %q", got)
		}
		kinfo, err := s.rt.Get(s.ctx, kid)
		if err != nil || kinfo.SessionID != "" || texts(kinfo.Transcript) != "help | child done" {
			t.Fatalf("child Get: %+v %v", kinfo, err)
		}
		res, err = rt22(t, s).Resume(s.ctx, a, "sp-parent", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "p1", Kind: actoviq.DecideApprove, By: "alice"}}})
		if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
			t.Fatalf("resume: %+v %v", res, err)
		}
		if got := model.requests(); len(got) != 2 || got[1] != tenItems+" | pay | call:p1 | result:p1" {
			t.Fatalf("the parent's model saw %q", got)
		}
		info, err := s.rt.Get(s.ctx, "sp-parent")
		if err != nil || texts(info.Transcript) != tenItems+" | pay | call:p1 | result:p1 | paid" {
			t.Fatalf("parent Get: %v %v", texts(info.Transcript), err)
		}
	})
}

// A cancelled interrupted session run: the cancellation reads nothing of
// the session, Get still shows the history as of its start, nothing is
// appended, and the next run of the session proceeds.
func TestRev22CancelInterruptedSessionRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		fillSession(t, s, "cs")
		pay := &payTool{name: "pay"}
		a := approvalAgent(pad(2, scripted.Turn{ToolCalls: []scripted.ToolCall{call("p1", "pay", `{"amount":5}`)}}), pay)
		a.SessionWindow = 4
		res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "cs-1", SessionID: "cs", Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("%+v %v", res, err)
		}
		if err := rt22(t, s).Cancel(s.ctx, "cs-1"); err != nil {
			t.Fatal(err)
		}
		info, err := s.rt.Get(s.ctx, "cs-1")
		if err != nil || info.Status != actoviq.StatusCancelled || texts(info.Transcript) != "q3 | call:k3 | result:k3 | a3 | pay | call:p1" || info.SessionItems != 4 {
			t.Fatalf("Get: %+v %v", info, err)
		}
		evs, err := s.rt.Events(s.ctx, "cs-1", nil)
		if err != nil || fmt.Sprint(responses(t, evs)) != "[call:p1]" {
			t.Fatalf("Events: %v %v", responses(t, evs), err)
		}
		st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: store.DefaultTenant, SessionID: "cs"})
		if err != nil || st.Revision != 10 {
			t.Fatalf("session %+v %v", st, err)
		}
		if res, err := s.rt.Run(s.ctx, agent(pad(5, scripted.Turn{Text: "a4"})), &actoviq.Input{SessionID: "cs", Items: []item.Item{item.UserText("q4")}}); err != nil || res.Status != actoviq.StatusCompleted {
			t.Fatalf("next run: %+v %v", res, err)
		}
	})
}

// appendingTool appends to the session behind the run's back (a writer
// that takes no session claim) while the run is in its tool turn.
type appendingTool struct {
	st      store.Store
	session string
}

func (a *appendingTool) Spec() tool.Spec {
	return tool.Spec{Name: "meddle", Description: "appends", Effect: tool.Read, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (a *appendingTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	raw, _ := json.Marshal(item.UserText("intruder"))
	if _, err := a.st.SessionAppend(ctx, &store.SessionAppendParams{Tenant: store.DefaultTenant, SessionID: a.session, ExpectedRevision: 10, RunID: "other", Items: []json.RawMessage{raw}}); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: "done"}, nil
}

// The conflict path at the final append: the run ends failed
// session_conflict, its answer kept, nothing appended, and its transcript
// is the history as of its start plus its own items, once.
func TestRev22AppendConflictDuringTheRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend store.Store) {
		s := setupOn(t, backend)
		for _, c := range []struct {
			window int
			want   string
		}{{0, tenItems}, {4, "q3 | call:k3 | result:k3 | a3"}} {
			sess := fmt.Sprintf("ac%d", c.window)
			fillSession(t, s, sess)
			model := &seenModel{Provider: pad(assistantTurns(c.want), scripted.Turn{ToolCalls: []scripted.ToolCall{call("m1", "meddle", `{}`)}}, scripted.Turn{Text: "done"})}
			a := agent(model.Provider, &appendingTool{st: s.st, session: sess})
			a.Provider, a.SessionWindow = model, c.window
			id := "run-" + sess
			res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: id, SessionID: sess, Items: []item.Item{item.UserText("go")}})
			if err != nil || res.Status != actoviq.StatusFailed || !errors.Is(res.Error, actoviq.ErrSessionConflict) || texts(res.Output) != "done" {
				t.Fatalf("window %d: %+v %v", c.window, res, err)
			}
			if got := model.requests(); len(got) != 2 || got[1] != c.want+" | go | call:m1 | result:m1" {
				t.Fatalf("window %d: the model saw %q", c.window, got)
			}
			info, err := rt22(t, s).Get(s.ctx, id)
			if err != nil || texts(info.Transcript) != c.want+" | go | call:m1 | result:m1 | done" {
				t.Fatalf("window %d: Get: %v %v", c.window, texts(info.Transcript), err)
			}
			// The answer's model.response is among the run's events.
			evs, _ := s.rt.Events(s.ctx, id, nil)
			if got := fmt.Sprint(responses(t, evs)); got != "[call:m1 done]" {
				t.Fatalf("window %d: Events %s", c.window, got)
			}
			st, err := s.st.SessionLoad(s.ctx, &store.SessionLoadParams{Tenant: store.DefaultTenant, SessionID: sess})
			if err != nil || st.Revision != 11 {
				t.Fatalf("window %d: session %+v %v", c.window, st, err)
			}
		}
	})
}
