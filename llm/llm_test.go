package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	all := llm.Capabilities{Tools: true, Streaming: true, ImageInput: true, Reasoning: true, StructuredOutput: true}
	img := item.Item{Type: item.TypeImage, Role: item.RoleUser, Image: &item.Image{URL: "https://x/y.png"}}
	call := item.NewToolCall("c1", "t", json.RawMessage(`{}`))
	reasoning := item.Item{Type: item.TypeReasoning, Reasoning: &item.Reasoning{Provider: "other", Opaque: []byte{1}}}
	tests := []struct {
		name    string
		caps    llm.Capabilities
		req     *llm.Request
		feature string // "" means no error
	}{
		{"plain text", llm.Capabilities{}, &llm.Request{Model: "m", Items: []item.Item{item.UserText("hi")}}, ""},
		{"nil request", llm.Capabilities{}, nil, ""},
		{"all features", all, &llm.Request{Tools: []llm.ToolDef{{Name: "t"}}, OutputSchema: json.RawMessage(`{}`), Items: []item.Item{img, call}}, ""},
		{"tools defined", llm.Capabilities{}, &llm.Request{Model: "m", Tools: []llm.ToolDef{{Name: "t"}}}, "tools"},
		{"tool items", llm.Capabilities{}, &llm.Request{Items: []item.Item{call}}, "tools"},
		{"image", llm.Capabilities{Tools: true}, &llm.Request{Items: []item.Item{img}}, "image_input"},
		{"schema", llm.Capabilities{Tools: true}, &llm.Request{OutputSchema: json.RawMessage(`{"type":"object"}`)}, "structured_output"},
		{"reasoning items pass", llm.Capabilities{}, &llm.Request{Items: []item.Item{reasoning}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.caps.Check(tt.req)
			if tt.feature == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, llm.ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
			var ue *llm.UnsupportedError
			if !errors.As(err, &ue) || ue.Feature != tt.feature {
				t.Fatalf("err = %#v, want feature %s", err, tt.feature)
			}
		})
	}
	if err := (llm.Capabilities{Tools: true}).CheckStream(&llm.Request{}); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("CheckStream without streaming: %v", err)
	}
	if err := all.CheckStream(&llm.Request{}); err != nil {
		t.Fatalf("CheckStream: %v", err)
	}
}

func TestValidateTranscript(t *testing.T) {
	t.Parallel()
	call := func(id string) item.Item { return item.NewToolCall(id, "t", json.RawMessage(`{}`)) }
	res := func(id string) item.Item { return item.NewToolResult(id, "ok", false) }
	u := item.UserText("hi")
	tests := []struct {
		name    string
		items   []item.Item
		problem string
		callID  string
	}{
		{"empty", nil, "", ""},
		{"paired", []item.Item{u, call("a"), res("a"), item.AssistantText("done")}, "", ""},
		{"parallel", []item.Item{call("a"), call("b"), res("b"), res("a")}, "", ""},
		{"dangling", []item.Item{u, call("a")}, llm.ProblemNoResult, "a"},
		{"one of two dangling", []item.Item{call("a"), call("b"), res("a")}, llm.ProblemNoResult, "b"},
		{"orphan result", []item.Item{u, res("x")}, llm.ProblemNoCall, "x"},
		{"result before call", []item.Item{res("a"), call("a")}, llm.ProblemNoCall, "a"},
		{"two results", []item.Item{call("a"), res("a"), res("a")}, llm.ProblemDuplicateResult, "a"},
		{"duplicate call id", []item.Item{call("a"), res("a"), call("a"), res("a")}, llm.ProblemDuplicateCall, "a"},
		{"empty id", []item.Item{call(""), res("")}, llm.ProblemEmptyCallID, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := llm.ValidateTranscript(tt.items)
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, llm.ErrDanglingToolCall) {
				t.Fatalf("err = %v, want ErrDanglingToolCall", err)
			}
			var de *llm.DanglingToolCallError
			if !errors.As(err, &de) || de.Problem != tt.problem || de.CallID != tt.callID {
				t.Fatalf("err = %#v, want %s/%s", err, tt.problem, tt.callID)
			}
		})
	}
}

func seq(events []llm.StreamEvent, final error) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		for _, ev := range events {
			if !yield(ev, nil) {
				return
			}
		}
		if final != nil {
			yield(llm.StreamEvent{}, final)
		}
	}
}

func TestCollect(t *testing.T) {
	t.Parallel()
	text := item.AssistantText("hello")
	call := item.NewToolCall("c1", "t", json.RawMessage(`{"a":1}`))
	full := &llm.Response{ID: "r1", Items: []item.Item{text, call}, StopReason: llm.StopToolUse}

	t.Run("done", func(t *testing.T) {
		t.Parallel()
		got, err := llm.Collect(seq([]llm.StreamEvent{
			{Type: llm.EventAttempt, Attempt: &llm.Attempt{Number: 1, Status: 529}},
			{Type: llm.EventTextDelta, Delta: "hel"},
			{Type: llm.EventItemDone, Item: &text},
			{Type: llm.EventDone, Response: full},
		}, nil))
		if err != nil || got != full {
			t.Fatalf("got %v, %v", got, err)
		}
		if calls := got.ToolCalls(); len(calls) != 1 || calls[0].ID != "c1" || got.Text() != "hello" {
			t.Fatalf("helpers: %v %q", calls, got.Text())
		}
	})
	t.Run("stops at done", func(t *testing.T) {
		t.Parallel()
		released := false
		s := func(yield func(llm.StreamEvent, error) bool) {
			defer func() { released = true }()
			if !yield(llm.StreamEvent{Type: llm.EventDone, Response: full}, nil) {
				return
			}
			t.Error("iterator continued after the consumer stopped")
		}
		if _, err := llm.Collect(s); err != nil || !released {
			t.Fatalf("err %v released %v", err, released)
		}
	})
	t.Run("plain error", func(t *testing.T) {
		t.Parallel()
		pe := &llm.ProviderError{Provider: "p", Status: 400}
		got, err := llm.Collect(seq(nil, pe))
		if got != nil || err != pe {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	t.Run("interrupted without partial", func(t *testing.T) {
		t.Parallel()
		cause := errors.New("connection reset")
		got, err := llm.Collect(seq([]llm.StreamEvent{{Type: llm.EventItemDone, Item: &text}},
			&llm.StreamInterruptedError{Provider: "p", Err: cause}))
		var sie *llm.StreamInterruptedError
		if !errors.As(err, &sie) || !errors.Is(err, llm.ErrStreamInterrupted) || !errors.Is(err, cause) {
			t.Fatalf("err = %v", err)
		}
		if got == nil || len(got.Items) != 1 || sie.Partial != got {
			t.Fatalf("partial = %#v / %#v", got, sie.Partial)
		}
	})
	t.Run("interrupted with partial", func(t *testing.T) {
		t.Parallel()
		partial := &llm.Response{Items: []item.Item{text}}
		got, err := llm.Collect(seq(nil, fmt.Errorf("turn: %w", &llm.StreamInterruptedError{Partial: partial, Err: io.EOF})))
		if got != partial || !errors.Is(err, llm.ErrStreamInterrupted) {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	t.Run("ends without done", func(t *testing.T) {
		t.Parallel()
		got, err := llm.Collect(seq([]llm.StreamEvent{{Type: llm.EventItemDone, Item: &call}}, nil))
		if !errors.Is(err, llm.ErrStreamInterrupted) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v", err)
		}
		if len(got.ToolCalls()) != 1 {
			t.Fatalf("partial = %#v", got)
		}
	})
}

func TestProviderError(t *testing.T) {
	t.Parallel()
	cause := context.DeadlineExceeded
	err := error(&llm.ProviderError{
		Provider: "openai", Status: 401, Type: "invalid_request_error", Code: "invalid_api_key",
		Message:   "Incorrect API key provided: sk-proj-abcdef123456. Header was Bearer sk-ant-xyz987654321",
		RequestID: "req_1", Err: fmt.Errorf("GET https://h/v1?key=AIzaSECRET&x=1: %w", cause),
	})
	msg := err.Error()
	for _, secret := range []string{"sk-proj-abcdef123456", "abcdef123456", "xyz987654321", "AIzaSECRET"} {
		if strings.Contains(msg, secret) {
			t.Errorf("message leaks %q: %s", secret, msg)
		}
	}
	for _, want := range []string{"openai", "401", "invalid_api_key", "req_1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("Unwrap lost the cause")
	}
	var pe *llm.ProviderError
	if !errors.As(fmt.Errorf("turn 3: %w", err), &pe) || pe.Status != 401 {
		t.Error("errors.As")
	}
	if errors.Is(err, llm.ErrStreamInterrupted) || errors.Is(err, llm.ErrUnsupported) {
		t.Error("provider error matches a foreign sentinel")
	}
	sie := &llm.StreamInterruptedError{Provider: "anthropic", Err: err}
	if !errors.As(sie, &pe) || !errors.Is(sie, llm.ErrStreamInterrupted) || strings.Contains(sie.Error(), "AIzaSECRET") {
		t.Errorf("stream interrupted: %v", sie)
	}
}
