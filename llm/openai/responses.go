package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"sort"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// Responses is the Responses API adapter (POST {BaseURL}/responses). It is
// safe for concurrent use.
type Responses struct {
	c *client
}

var _ llm.Provider = (*Responses)(nil)

// NewResponses returns a Responses API provider. cfg may be nil; it is
// copied.
func NewResponses(cfg *Config) (*Responses, error) {
	c, err := newClient("openai.responses", cfg)
	if err != nil {
		return nil, err
	}
	return &Responses{c: c}, nil
}

// Name implements llm.Provider: "openai.responses".
func (p *Responses) Name() string { return p.c.name }

// Capabilities implements llm.Provider: Config.Models[model], else
// DefaultCapabilities.
func (p *Responses) Capabilities(model string) llm.Capabilities { return p.c.capabilities(model) }

func (p *Responses) prepare(req *llm.Request, stream bool) (*transport.Request, error) {
	return p.c.prepare(req, stream, "/responses", p.c.responsesBody)
}

// Generate implements llm.Provider with one non-streaming call. A response
// whose status is "failed" is a *llm.ProviderError; "incomplete" is a
// response with StopMaxTokens, StopRefusal or StopOther.
func (p *Responses) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	treq, err := p.prepare(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.c.tr.Do(ctx, treq)
	if err != nil {
		return nil, p.c.providerError(err)
	}
	defer resp.Body.Close()
	rid := resp.Header.Get("X-Request-Id")
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &llm.ProviderError{Provider: p.c.name, Status: resp.StatusCode, RequestID: rid,
			Message: "reading the response body failed", Err: err}
	}
	var ro respObject
	if err := json.Unmarshal(b, &ro); err != nil {
		return nil, &llm.ProviderError{Provider: p.c.name, Status: resp.StatusCode, RequestID: rid,
			Message: "the response is not a Responses API object", Err: err}
	}
	if ro.Status == "failed" {
		pe := &llm.ProviderError{Provider: p.c.name, Status: resp.StatusCode, RequestID: rid, Message: "response failed"}
		if ro.Error != nil {
			pe.Message, pe.Type, pe.Code = p.c.scrub(ro.Error.Message), ro.Error.Type, ro.Error.code()
		}
		return nil, pe
	}
	return p.c.respResponse(&ro, nil)
}

// respResponse builds the llm response from a final response object.
func (c *client) respResponse(ro *respObject, joined map[int]*bytes.Buffer) (*llm.Response, error) {
	out := &llm.Response{ID: ro.ID, Model: ro.Model, Usage: ro.Usage.usage()}
	hasCalls := false
	var bad *llm.MalformedToolCallError
	for i, raw := range ro.Output {
		var args *string
		if b := joined[i]; b != nil {
			s := b.String()
			args = &s
		}
		items, oi, ok := outputItems(raw, args)
		if !ok {
			if bad == nil {
				bad = &llm.MalformedToolCallError{Provider: c.name, CallID: oi.CallID, Name: oi.Name, Arguments: oi.Arguments}
			}
			continue
		}
		if oi != nil && oi.Type == "function_call" {
			hasCalls = true
		}
		out.Items = append(out.Items, items...)
	}
	out.StopReason = respStop(ro, hasCalls || bad != nil)
	if bad != nil {
		bad.Response = out
		return nil, bad
	}
	return out, nil
}

// Stream implements llm.Provider. Events are read by their "type" (equal
// to the SSE event name); sequence numbers that do not increase are
// dropped as duplicates. response.completed and response.incomplete end
// the stream; an "error" or "response.failed" event is classified by the
// status its code stands for.
func (p *Responses) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	treq, err := p.prepare(req, true)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	treq.ErrorEvent = respErrorEvent
	treq.ErrorEventFinal = finalErrorEvent
	return func(yield func(llm.StreamEvent, error) bool) {
		p.c.stream(ctx, treq, &respAcc{c: p.c, items: map[int][]item.Item{}, args: map[int]*bytes.Buffer{},
			text: map[int]*bytes.Buffer{}, refusal: map[int]*bytes.Buffer{}, seq: -1})(yield)
	}
}

type respEvent struct {
	Type        string          `json:"type"`
	Seq         *int64          `json:"sequence_number"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *respObject     `json:"response"`
	Code        json.RawMessage `json:"code"`
	Message     string          `json:"message"`
}

func respErrorEvent(ev transport.SSEEvent) (int, bool) {
	typ := ev.Type
	if typ == "" || typ == "message" {
		var head struct {
			Type string `json:"type"`
		}
		if !bytes.Contains(ev.Data, []byte(`"error`)) && !bytes.Contains(ev.Data, []byte(`failed`)) {
			return 0, false
		}
		_ = json.Unmarshal(ev.Data, &head)
		typ = head.Type
	}
	switch typ {
	case "error":
		// The reference puts code and message at the top level; the live
		// API also nests them under "error" (with a type). Both count.
		var e struct {
			Code  json.RawMessage `json:"code"`
			Error *apiError       `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		if e.Error != nil {
			return errorStatus(e.Error.Type, e.Error.code()), true
		}
		a := apiError{Code: e.Code}
		return errorStatus("", a.code()), true
	case "response.failed":
		var e respEvent
		_ = json.Unmarshal(ev.Data, &e)
		if e.Response != nil && e.Response.Error != nil {
			return errorStatus(e.Response.Error.Type, e.Response.Error.code()), true
		}
		return 500, true
	}
	return 0, false
}

// respAcc accumulates a Responses stream.
type respAcc struct {
	c       *client
	id      string
	model   string
	seq     int64
	items   map[int][]item.Item   // completed output items by output_index
	args    map[int]*bytes.Buffer // joined argument deltas by output_index
	text    map[int]*bytes.Buffer // text deltas by output_index, for partial output
	refusal map[int]*bytes.Buffer // refusal deltas by output_index, for partial output
	final   *llm.Response
}

func buf(m map[int]*bytes.Buffer, i int) *bytes.Buffer {
	b := m[i]
	if b == nil {
		b = new(bytes.Buffer)
		m[i] = b
	}
	return b
}

func (a *respAcc) Handle(ev transport.SSEEvent, emit func(llm.StreamEvent) bool) (bool, error) {
	var e respEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return false, &llm.StreamInterruptedError{Provider: a.c.name, Partial: a.Partial(), Err: fmt.Errorf("undecodable event %q: %w", ev.Type, err)}
	}
	if e.Type == "" {
		e.Type = ev.Type
	}
	if e.Seq != nil {
		if *e.Seq <= a.seq {
			return false, nil // a repeated event
		}
		a.seq = *e.Seq
	}
	switch e.Type {
	case "response.created", "response.in_progress":
		if e.Response != nil {
			a.id, a.model = e.Response.ID, e.Response.Model
		}
	case "response.output_text.delta":
		buf(a.text, e.OutputIndex).WriteString(e.Delta)
		emit(llm.StreamEvent{Type: llm.EventTextDelta, Index: e.OutputIndex, Delta: e.Delta})
	case "response.function_call_arguments.delta":
		buf(a.args, e.OutputIndex).WriteString(e.Delta)
		emit(llm.StreamEvent{Type: llm.EventToolCallDelta, Index: e.OutputIndex, Delta: e.Delta})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		emit(llm.StreamEvent{Type: llm.EventReasoningDelta, Index: e.OutputIndex, Delta: e.Delta})
	case "response.refusal.delta":
		buf(a.refusal, e.OutputIndex).WriteString(e.Delta)
		emit(llm.StreamEvent{Type: llm.EventRefusalDelta, Index: e.OutputIndex, Delta: e.Delta})
	case "response.output_item.done":
		var joined *string
		if b := a.args[e.OutputIndex]; b != nil {
			s := b.String()
			joined = &s
		}
		items, oi, ok := outputItems(e.Item, joined)
		if !ok {
			return false, &llm.MalformedToolCallError{Provider: a.c.name, CallID: oi.CallID, Name: oi.Name, Arguments: oi.Arguments, Response: a.Partial()}
		}
		a.items[e.OutputIndex] = items
		for i := range items {
			it := items[i]
			if !emit(llm.StreamEvent{Type: llm.EventItemDone, Index: e.OutputIndex, Item: &it}) {
				return false, nil
			}
		}
	case "response.completed", "response.incomplete":
		if e.Response == nil {
			return false, &llm.StreamInterruptedError{Provider: a.c.name, Partial: a.Partial(), Err: fmt.Errorf("%s event without a response", e.Type)}
		}
		return a.complete(e.Response, emit)
	}
	return false, nil
}

// complete builds the response from the terminal event. An output entry the
// stream already completed (response.output_item.done) is taken from
// there, not from the terminal event's copy: the API reference says to send
// back the item as response.output_item.done delivered it, and with
// store:false the two copies of a reasoning item's encrypted_content can
// differ. Entries the stream did not complete come from the terminal event.
func (a *respAcc) complete(ro *respObject, emit func(llm.StreamEvent) bool) (bool, error) {
	resp := &llm.Response{ID: ro.ID, Model: ro.Model, Usage: ro.Usage.usage()}
	if resp.ID == "" {
		resp.ID = a.id
	}
	if resp.Model == "" {
		resp.Model = a.model
	}
	n := len(ro.Output)
	for i := range a.items {
		n = max(n, i+1)
	}
	hasCalls := false
	var bad *llm.MalformedToolCallError
	type fresh struct {
		index int
		items []item.Item
	}
	var late []fresh
	for i := 0; i < n; i++ {
		items, ok := a.items[i]
		if !ok && i < len(ro.Output) {
			var joined *string
			if b := a.args[i]; b != nil {
				s := b.String()
				joined = &s
			}
			var oi *respOutputItem
			items, oi, ok = outputItems(ro.Output[i], joined)
			if !ok {
				hasCalls = true
				if bad == nil {
					bad = &llm.MalformedToolCallError{Provider: a.c.name, CallID: oi.CallID, Name: oi.Name, Arguments: oi.Arguments}
				}
				continue
			}
			late = append(late, fresh{i, items})
		}
		for _, it := range items {
			hasCalls = hasCalls || it.Type == item.TypeToolCall
			resp.Items = append(resp.Items, it)
		}
	}
	resp.StopReason = respStop(ro, hasCalls)
	if bad != nil {
		bad.Response = resp
		return false, bad
	}
	a.final = resp
	// Announce the output entries the stream did not complete itself.
	for _, f := range late {
		for j := range f.items {
			it := f.items[j]
			if !emit(llm.StreamEvent{Type: llm.EventItemDone, Index: f.index, Item: &it}) {
				return false, nil
			}
		}
	}
	return true, nil
}

func sortedKeys[V any](m map[int]V) []int {
	k := make([]int, 0, len(m))
	for i := range m {
		k = append(k, i)
	}
	sort.Ints(k)
	return k
}

func (a *respAcc) Partial() *llm.Response {
	out := &llm.Response{ID: a.id, Model: a.model, StopReason: llm.StopOther, Usage: item.Usage{Requests: 1}}
	idx := map[int]bool{}
	for i := range a.items {
		idx[i] = true
	}
	for i := range a.text {
		idx[i] = true
	}
	for i := range a.refusal {
		idx[i] = true
	}
	for _, i := range sortedKeys(idx) {
		if items, ok := a.items[i]; ok {
			out.Items = append(out.Items, items...)
		} else {
			if t := a.text[i]; t != nil {
				out.Items = append(out.Items, item.AssistantText(t.String()))
			}
			if r := a.refusal[i]; r != nil {
				out.Items = append(out.Items, item.Item{Type: item.TypeRefusal, Role: item.RoleAssistant, Text: r.String()})
			}
		}
	}
	return out
}

func (a *respAcc) Result(eof bool, _ func(llm.StreamEvent) bool) (*llm.Response, error) {
	if a.final == nil {
		return nil, &llm.StreamInterruptedError{Provider: a.c.name, Partial: a.Partial(), Err: io.ErrUnexpectedEOF}
	}
	return a.final, nil
}
