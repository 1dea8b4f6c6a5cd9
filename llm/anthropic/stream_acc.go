package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// acc accumulates a Messages stream.
type acc struct {
	provider string
	id       string
	model    string
	usage    usage
	stop     string
	open     map[int]*openBlock
	done     map[int]item.Item
	finished bool
}

type openBlock struct {
	start     block
	raw       json.RawMessage // the content_block_start block
	text      bytes.Buffer
	input     bytes.Buffer
	sawInput  bool // input_json_delta fragments arrived (any block type)
	thinking  bytes.Buffer
	signature bytes.Buffer
	citations []json.RawMessage // from citations_delta, in order
}

func newAcc(provider string) *acc {
	return &acc{provider: provider, open: map[int]*openBlock{}, done: map[int]item.Item{}}
}

type streamEvent struct {
	Type         string          `json:"type"`
	Message      *message        `json:"message"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        *struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		PartialJSON string          `json:"partial_json"`
		Thinking    string          `json:"thinking"`
		Signature   string          `json:"signature"`
		Citation    json.RawMessage `json:"citation"`
		StopReason  string          `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage `json:"usage"`
}

func (a *acc) Handle(ev transport.SSEEvent, emit func(llm.StreamEvent) bool) (bool, error) {
	var e streamEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return false, &llm.StreamInterruptedError{Provider: a.provider, Partial: a.Partial(),
			Err: fmt.Errorf("undecodable event %q: %w", ev.Type, err)}
	}
	if e.Type == "" {
		e.Type = ev.Type
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			a.id, a.model = e.Message.ID, e.Message.Model
			a.usage.merge(e.Message.Usage)
		}
	case "content_block_start":
		ob := &openBlock{raw: e.ContentBlock}
		_ = json.Unmarshal(e.ContentBlock, &ob.start)
		ob.text.WriteString(ob.start.Text)
		ob.thinking.WriteString(ob.start.Thinking)
		ob.signature.WriteString(ob.start.Signature)
		a.open[e.Index] = ob
	case "content_block_delta":
		ob := a.open[e.Index]
		if ob == nil || e.Delta == nil {
			return false, nil
		}
		switch e.Delta.Type {
		case "text_delta":
			ob.text.WriteString(e.Delta.Text)
			emit(llm.StreamEvent{Type: llm.EventTextDelta, Index: e.Index, Delta: e.Delta.Text})
		case "input_json_delta":
			// tool_use, server_tool_use, mcp_tool_use… all stream their
			// input this way; only a tool_use is a call the client runs.
			ob.input.WriteString(e.Delta.PartialJSON)
			ob.sawInput = true
			if e.Delta.PartialJSON != "" && ob.start.Type == "tool_use" {
				emit(llm.StreamEvent{Type: llm.EventToolCallDelta, Index: e.Index, Delta: e.Delta.PartialJSON})
			}
		case "citations_delta":
			if len(e.Delta.Citation) > 0 {
				ob.citations = append(ob.citations, e.Delta.Citation)
			}
		case "thinking_delta":
			ob.thinking.WriteString(e.Delta.Thinking)
			emit(llm.StreamEvent{Type: llm.EventReasoningDelta, Index: e.Index, Delta: e.Delta.Thinking})
		case "signature_delta":
			ob.signature.WriteString(e.Delta.Signature)
		}
	case "content_block_stop":
		ob := a.open[e.Index]
		if ob == nil {
			return false, nil
		}
		delete(a.open, e.Index)
		it, err := a.close(ob)
		if err != nil {
			return false, err
		}
		a.done[e.Index] = it
		if !emit(llm.StreamEvent{Type: llm.EventItemDone, Index: e.Index, Item: &it}) {
			return false, nil
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			a.stop = e.Delta.StopReason
		}
		a.usage.merge(e.Usage)
	case "message_stop":
		a.finished = true
		return true, nil
	}
	return false, nil // ping and unknown events
}

// close completes a block: the deltas are folded into the start block, so
// that the result is the block Generate would have received whole, and
// any input fragments are joined and parsed here, once.
func (a *acc) close(ob *openBlock) (item.Item, error) {
	b := ob.start
	var set []field
	str := func(k, v string) {
		enc, _ := json.Marshal(v)
		set = append(set, field{k, enc})
	}
	switch b.Type {
	case "text":
		str("text", ob.text.String())
	case "thinking":
		str("thinking", ob.thinking.String())
		str("signature", ob.signature.String())
	}
	if len(ob.citations) > 0 {
		var start struct {
			Citations []json.RawMessage `json:"citations"`
		}
		_ = json.Unmarshal(ob.raw, &start)
		enc, _ := json.Marshal(append(start.Citations, ob.citations...))
		set = append(set, field{"citations", enc})
	}
	var input json.RawMessage
	if ob.sawInput || b.Type == "tool_use" {
		joined := ob.input.String()
		if joined == "" && len(b.Input) > 0 {
			joined = string(b.Input) // the whole input came with the start
		}
		in, ok := wire.ParseArguments(joined)
		if !ok || (b.Type == "tool_use" && b.Name == "") {
			return item.Item{}, &llm.MalformedToolCallError{Provider: "anthropic", CallID: b.ID, Name: b.Name, Type: b.Type, Arguments: joined, Response: a.Partial()}
		}
		input = in
		set = append(set, field{"input", in})
	}
	if b.Type == "tool_use" {
		return item.NewToolCall(b.ID, b.Name, input), nil
	}
	return blockItem(overlay(ob.raw, set), b.Type), nil
}

func (a *acc) items() []item.Item {
	idx := make([]int, 0, len(a.done))
	for i := range a.done {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]item.Item, 0, len(idx))
	for _, i := range idx {
		out = append(out, a.done[i])
	}
	return out
}

// partial is the completed blocks plus the text of open text blocks.
func (a *acc) Partial() *llm.Response {
	out := &llm.Response{ID: a.id, Model: a.model, Usage: a.usage.normalise(), StopReason: llm.StopOther}
	out.Items = a.items()
	idx := make([]int, 0, len(a.open))
	for i, ob := range a.open {
		if ob.start.Type == "text" && ob.text.Len() > 0 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		out.Items = append(out.Items, item.AssistantText(a.open[i].text.String()))
	}
	return out
}

func (a *acc) Result(eof bool, _ func(llm.StreamEvent) bool) (*llm.Response, error) {
	if !a.finished {
		return nil, &llm.StreamInterruptedError{Provider: a.provider, Partial: a.Partial(), Err: io.ErrUnexpectedEOF}
	}
	return &llm.Response{ID: a.id, Model: a.model, Items: a.items(), Usage: a.usage.normalise(), StopReason: stopReason(a.stop)}, nil
}
