package wire

import (
	"errors"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

func TestParseArguments(t *testing.T) {
	cases := map[string]string{
		"":                        "{}",
		"  ":                      "{}",
		`{"a": 1, "b": [1, 2]}  `: `{"a":1,"b":[1,2]}`,
	}
	for in, want := range cases {
		got, ok := ParseArguments(in)
		if !ok || string(got) != want {
			t.Errorf("ParseArguments(%q) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`, `{"a":1}{"b":2}`, `null`} {
		if _, ok := ParseArguments(bad); ok {
			t.Errorf("ParseArguments(%q) accepted", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	tools := &llm.Request{Model: "m", Items: []item.Item{item.UserText("hi")}, Tools: []llm.ToolDef{{Name: "t"}}}
	if err := Check("p", llm.Capabilities{Streaming: true}, tools, true); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("tools on a model without tools: %v", err)
	}
	if err := Check("p", llm.Capabilities{Tools: true}, tools, true); !errors.Is(err, llm.ErrUnsupported) {
		t.Fatalf("streaming on a model without streaming: %v", err)
	}
	dangling := &llm.Request{Model: "m", Items: []item.Item{item.UserText("hi"), item.NewToolCall("c1", "t", []byte(`{}`))}}
	if err := Check("p", llm.Capabilities{Tools: true, Streaming: true}, dangling, false); !errors.Is(err, llm.ErrDanglingToolCall) {
		t.Fatalf("dangling call: %v", err)
	}
	if err := Check("p", llm.Capabilities{}, nil, false); err == nil {
		t.Fatal("nil request accepted")
	}
	if err := Check("p", llm.Capabilities{Tools: true, Streaming: true}, tools, true); err != nil {
		t.Fatal(err)
	}
}
