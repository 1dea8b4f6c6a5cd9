package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
)

func TestParseAndStream(t *testing.T) {
	p, err := scripted.Parse([]byte(`{"turns":[{"text":"hello there"},{"tool_calls":[{"id":"a","name":"x"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Collect(p.Stream(context.Background(), &llm.Request{Items: []item.Item{item.UserText("hi")}}))
	if err != nil || resp.Text() != "hello there" {
		t.Fatalf("%+v %v", resp, err)
	}
	var deltas []string
	for ev, err := range p.Stream(context.Background(), &llm.Request{Items: []item.Item{item.UserText("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == llm.EventTextDelta {
			deltas = append(deltas, ev.Delta)
		}
	}
	if strings.Join(deltas, "|") != "hello |there" {
		t.Fatalf("deltas %q", deltas)
	}
	two := []item.Item{item.UserText("hi"), item.AssistantText("hello there"), item.UserText("go on")}
	resp, err = p.Generate(context.Background(), &llm.Request{Items: two})
	if err != nil || len(resp.ToolCalls()) != 1 || string(resp.ToolCalls()[0].Arguments) != "{}" {
		t.Fatalf("turn 2: %+v %v", resp, err)
	}
	three := append(two, resp.Items...)
	three = append(three, item.NewToolResult("a", "ok", false))
	_, err = p.Generate(context.Background(), &llm.Request{Items: three})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Code != "script_exhausted" {
		t.Fatalf("exhausted script: %v", err)
	}
	if p.Calls() != 4 {
		t.Fatalf("calls %d", p.Calls())
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{`nope`, `[{"tool_calls":[{"id":"a"}]}]`} {
		if _, err := scripted.Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%s) succeeded", in)
		}
	}
}

func TestDanglingToolCallRefused(t *testing.T) {
	p := scripted.New(scripted.Turn{Text: "x"})
	items := []item.Item{item.UserText("hi"), item.NewToolCall("c1", "t", []byte(`{}`))}
	_, err := p.Generate(context.Background(), &llm.Request{Items: items})
	if !errors.Is(err, llm.ErrDanglingToolCall) {
		t.Fatalf("want ErrDanglingToolCall, got %v", err)
	}
}
