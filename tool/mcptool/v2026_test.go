package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// handles records the handles a call writes, and lets a test look at the
// server at the moment of each write.
type handles struct {
	mu     sync.Mutex
	got    []tool.Handle
	onSave func(tool.Handle)
}

func (h *handles) RecordHandle(_ context.Context, x tool.Handle) error {
	if h.onSave != nil {
		h.onSave(x)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, x)
	return nil
}

func (h *handles) list() []tool.Handle {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]tool.Handle(nil), h.got...)
}

func v26Tools(t *testing.T, s *v26Server, opts *mcptool.Options) (*mcptool.Source, map[string]*mcptool.Tool) {
	t.Helper()
	src := newSource(t, map[string]*mcptool.ServerConfig{"v": {URL: s.url()}}, opts)
	ts, err := src.ServerTools(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	return src, byName(t, ts)
}

func callCtx(key string, rec tool.HandleRecorder) context.Context {
	ctx := tool.WithIdempotencyKey(context.Background(), key)
	if rec != nil {
		ctx = tool.WithHandleRecorder(ctx, rec)
	}
	return ctx
}

func TestProtocol2026AndFallback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stateful bool
		pin      string
		want     string
	}{
		{"stateless server", false, "", "2026-07-28"},
		{"stateful server falls back", true, "", "2025-11-25"},
		{"pinned older version", false, "2025-06-18", "2025-06-18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newV26Server(t, tc.stateful)
			src, tools := v26Tools(t, s, &mcptool.Options{ProtocolVersion: tc.pin})
			if got := src.ProtocolVersion("v"); got != tc.want {
				t.Fatalf("protocol version %q, want %q", got, tc.want)
			}
			res, err := tools["v__echo"].Call(callCtx("run1:c1", nil), json.RawMessage(`{"x":1}`))
			if err != nil || !strings.Contains(res.Content, `{"x":1}`) {
				t.Fatalf("echo: %+v, %v", res, err)
			}
			if p, e := s.counts("run1:c1"); p != 1 || e != 1 {
				t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
			}
		})
	}
}

// Under 2026-07-28 a response stream that breaks mid-call is an unknown
// outcome: the call is not re-sent and the stream is not resumed, even
// when the server gave an event id.
func TestBrokenStream2026IsUnknown(t *testing.T) {
	s := newV26Server(t, false)
	src, tools := v26Tools(t, s, nil)
	_, err := tools["v__drop"].Call(callCtx("run1:c1", nil), nil)
	if !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
	}
	if !strings.Contains(err.Error(), "2026-07-28") {
		t.Errorf("the error does not say why: %v", err)
	}
	if p, e := s.counts("run1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
	s.mu.Lock()
	gets := s.getsSSE
	s.mu.Unlock()
	if gets != 0 {
		t.Fatalf("%d GETs reached the server: the stream was resumed under 2026-07-28", gets)
	}
	// The next call connects again and works.
	if _, err := tools["v__echo"].Call(callCtx("run1:c2", nil), nil); err != nil {
		t.Fatal(err)
	}
	if n := src.Connections("v"); n != 2 {
		t.Fatalf("%d connections, want 2 (the broken one dropped)", n)
	}
}

func TestMRTRWithHandler(t *testing.T) {
	s := newV26Server(t, false)
	var asked []string
	_, tools := v26Tools(t, s, &mcptool.Options{Elicit: func(_ context.Context, r *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
		asked = append(asked, r.Message)
		return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"ok": true}}, nil
	}})
	rec := &handles{onSave: func(h tool.Handle) {
		var ih mcptool.InputHandle
		_ = json.Unmarshal(h.Data, &ih)
		p, _ := s.counts("run1:c1")
		// Recorded before the continuation is sent.
		if p != 1 {
			t.Errorf("handle %s/%s recorded after %d POSTs, want 1", h.Kind, ih.Step, p)
		}
	}}
	res, err := tools["v__pay"].Call(callCtx("run1:c1", rec), json.RawMessage(`{}`))
	if err != nil || res.Content != "paid" {
		t.Fatalf("pay: %+v, %v", res, err)
	}
	if len(asked) != 1 || asked[0] != "Pay 40 EUR to ACME?" {
		t.Fatalf("asked %q", asked)
	}
	got := rec.list()
	if len(got) != 2 {
		t.Fatalf("%d handles, want 2: %+v", len(got), got)
	}
	var steps []string
	for _, h := range got {
		var ih mcptool.InputHandle
		if err := json.Unmarshal(h.Data, &ih); err != nil || h.Kind != mcptool.HandleInput {
			t.Fatalf("handle %+v: %v", h, err)
		}
		steps = append(steps, ih.Step)
		if ih.RequestState != "state-1" || ih.Round != 1 {
			t.Errorf("handle %+v", ih)
		}
	}
	if steps[0] != mcptool.StepAsked || steps[1] != mcptool.StepSending {
		t.Fatalf("steps %v", steps)
	}
	// Same key on the call and its continuation: two POSTs, one payment.
	if p, e := s.counts("run1:c1"); p != 2 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 2, 1", p, e)
	}
}

// Without an elicitation handler the call stops with a tool.InputError
// after recording the round; a person's answer resumes the continuation.
func TestMRTRPersonAnswers(t *testing.T) {
	s := newV26Server(t, false)
	_, tools := v26Tools(t, s, nil)
	rec := &handles{}
	pay := tools["v__pay"]
	_, err := pay.Call(callCtx("run1:c1", rec), nil)
	var ie *tool.InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Prompt, "Pay 40 EUR to ACME?") {
		t.Fatalf("err = %v, want a tool.InputError with the question", err)
	}
	got := rec.list()
	if len(got) != 1 {
		t.Fatalf("handles %+v", got)
	}
	ctx := tool.WithAnswer(callCtx("run1:c1", rec), json.RawMessage(`{"ok":true}`))
	res, err := pay.Resume(ctx, "run1:c1", nil, got[0])
	if err != nil || res.Content != "paid" {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	var ih mcptool.InputHandle
	_ = json.Unmarshal(rec.list()[1].Data, &ih)
	if ih.Step != mcptool.StepSending || ih.AnsweredBy != "person" || !strings.Contains(string(ih.InputResponses), `"ok":true`) {
		t.Fatalf("answers not recorded: %+v", ih)
	}
	if p, e := s.counts("run1:c1"); p != 2 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 2, 1", p, e)
	}
	// A handle at the sending step is never re-sent.
	_, err = pay.Resume(callCtx("run1:c1", rec), "run1:c1", nil, rec.list()[1])
	if !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("resume at sending: %v, want unknown", err)
	}
	if p, _ := s.counts("run1:c1"); p != 2 {
		t.Fatalf("posts %d after resuming a sent continuation", p)
	}
}

func TestTaskRecordedThenPolled(t *testing.T) {
	s := newV26Server(t, false)
	_, tools := v26Tools(t, s, &mcptool.Options{TaskPoll: 5e6})
	var taskID string
	rec := &handles{onSave: func(h tool.Handle) {
		var th mcptool.TaskHandle
		_ = json.Unmarshal(h.Data, &th)
		if taskID == "" {
			taskID = th.TaskID
			// Written before anything else: no tasks/get yet.
			if n := s.taskGets(th.TaskID); n != 0 {
				t.Errorf("task handle recorded after %d tasks/get", n)
			}
		}
	}}
	s.setOnGet(func(_ string, n int) {
		if n == 3 {
			s.complete("run1:c1")
		}
	})
	res, err := tools["v__slow_task"].Call(callCtx("run1:c1", rec), nil)
	if err != nil || res.Content != "report for run1:c1" {
		t.Fatalf("task: %+v, %v", res, err)
	}
	if h := rec.list(); len(h) != 1 || h[0].Kind != mcptool.HandleTask || !strings.Contains(h[0].Evidence, taskID) {
		t.Fatalf("handles %+v", h)
	}
	if p, e := s.counts("run1:c1"); p != 1 || e != 1 {
		t.Fatalf("posts %d, executions %d; want 1, 1", p, e)
	}
}

func TestTaskCancelledCall(t *testing.T) {
	s := newV26Server(t, false)
	_, tools := v26Tools(t, s, &mcptool.Options{TaskPoll: 5e6})
	ctx, cancel := context.WithCancel(callCtx("run1:c1", nil))
	rec := &handles{}
	s.setOnGet(func(_ string, n int) {
		if n == 2 {
			cancel()
		}
	})
	_, err := tools["v__slow_task"].Call(tool.WithHandleRecorder(ctx, rec), nil)
	if !errors.Is(err, tool.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "tasks/cancel was sent") {
		t.Fatalf("err = %v", err)
	}
	s.mu.Lock()
	cancels := append([]string(nil), s.cancels...)
	s.mu.Unlock()
	if len(cancels) != 1 {
		t.Fatalf("cancels %v", cancels)
	}
	last := rec.list()[len(rec.list())-1]
	var th mcptool.TaskHandle
	_ = json.Unmarshal(last.Data, &th)
	if th.TaskID != cancels[0] || th.CancelRequested == "" || th.Status != "cancel_requested" {
		t.Fatalf("the cancel was not recorded: %+v", th)
	}
}

func TestTaskUnknownToServer(t *testing.T) {
	s := newV26Server(t, false)
	src, tools := v26Tools(t, s, &mcptool.Options{TaskPoll: 5e6})
	rec := &handles{onSave: func(tool.Handle) { s.forget() }}
	_, err := tools["v__slow_task"].Call(callCtx("run1:c1", rec), nil)
	if !errors.Is(err, tool.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "no longer knows task task-1") {
		t.Fatalf("err = %v", err)
	}
	// An operator's cancel of a task the server does not know fails.
	if err := src.CancelTask(context.Background(), "v", "task-1"); err == nil {
		t.Fatal("CancelTask of an unknown task succeeded")
	}
}

func TestOperatorCancelTask(t *testing.T) {
	s := newV26Server(t, false)
	src, tools := v26Tools(t, s, &mcptool.Options{TaskPoll: 5e6})
	ctx, stop := context.WithTimeout(callCtx("run1:c1", nil), 3e8)
	defer stop()
	_, err := tools["v__slow_task"].Call(ctx, nil)
	if !errors.Is(err, tool.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may still complete") {
		t.Fatalf("err = %v", err)
	}
	if st, _, err := src.TaskStatus(context.Background(), "v", "task-1"); err != nil || st != "working" {
		t.Fatalf("status %q, %v", st, err)
	}
	if err := src.CancelTask(context.Background(), "v", "task-1"); err != nil {
		t.Fatal(err)
	}
	if st, _, err := src.TaskStatus(context.Background(), "v", "task-1"); err != nil || st != "cancelled" {
		t.Fatalf("status %q, %v", st, err)
	}
}
