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
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// Chat is the Chat Completions adapter (POST {BaseURL}/chat/completions).
// It works with OpenAI and with any server that speaks the same protocol.
// It is safe for concurrent use.
type Chat struct {
	c *client
}

var _ llm.Provider = (*Chat)(nil)

// NewChat returns a Chat Completions provider. cfg may be nil; it is copied.
func NewChat(cfg *Config) (*Chat, error) {
	c, err := newClient("openai.chat", cfg)
	if err != nil {
		return nil, err
	}
	return &Chat{c: c}, nil
}

// Name implements llm.Provider: "openai.chat".
func (p *Chat) Name() string { return p.c.name }

// Capabilities implements llm.Provider: Config.Models[model], else
// DefaultCapabilities.
func (p *Chat) Capabilities(model string) llm.Capabilities { return p.c.capabilities(model) }

// prepare checks the request before anything is sent.
func (p *Chat) prepare(req *llm.Request, stream bool) (*transport.Request, error) {
	return p.c.prepare(req, stream, "/chat/completions", p.c.chatBody)
}

// Generate implements llm.Provider with one non-streaming call.
func (p *Chat) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	treq, err := p.prepare(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.c.tr.Do(ctx, treq)
	if err != nil {
		return nil, p.c.providerError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &llm.ProviderError{Provider: p.c.name, Status: resp.StatusCode,
			RequestID: resp.Header.Get("X-Request-Id"), Message: "reading the response body failed", Err: err}
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, &llm.ProviderError{Provider: p.c.name, Status: resp.StatusCode,
			RequestID: resp.Header.Get("X-Request-Id"), Message: "the response is not a chat completion", Err: err}
	}
	acc := newChatAcc(p.c.name)
	acc.id, acc.model = cr.ID, cr.Model
	acc.usage = cr.Usage.usage()
	for _, ch := range cr.Choices {
		if ch.Index != 0 || ch.Message == nil {
			continue
		}
		// A whole message lists its calls without "index" (that field
		// belongs to stream deltas): number them by position, so they are
		// not merged into one.
		for i := range ch.Message.ToolCalls {
			ch.Message.ToolCalls[i].Index = i
		}
		acc.add(ch.Message, nil)
		if ch.FinishReason != nil {
			acc.finish = *ch.FinishReason
		}
	}
	return acc.response()
}

// Stream implements llm.Provider. It asks for usage in the stream
// (stream_options.include_usage) and yields text deltas, argument
// fragments, each complete item, and the response after "[DONE]".
func (p *Chat) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	treq, err := p.prepare(req, true)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	treq.ErrorEvent = chatErrorEvent
	treq.ErrorEventFinal = finalErrorEvent
	return func(yield func(llm.StreamEvent, error) bool) {
		p.c.stream(ctx, treq, newChatAcc(p.c.name))(yield)
	}
}

// chatErrorEvent classifies a chunk carrying an "error" object (OpenAI and
// compatible servers report failures inside a 200 stream that way).
func chatErrorEvent(ev transport.SSEEvent) (int, bool) {
	if !bytes.Contains(ev.Data, []byte(`"error`)) {
		return 0, false
	}
	var doc struct {
		Error  *apiError `json:"error"`
		Object string    `json:"object"`
		apiError
	}
	if json.Unmarshal(ev.Data, &doc) != nil {
		return 0, false
	}
	if doc.Error == nil && doc.Object == "error" {
		// Some compatible servers (vLLM) put the error object itself in
		// the chunk: {"object":"error","message","type","code"}.
		doc.Error = &doc.apiError
	}
	if doc.Error == nil {
		return 0, false
	}
	return errorStatus(doc.Error.Type, doc.Error.code()), true
}

// chatAcc accumulates a chat completion, streamed or not.
type chatAcc struct {
	provider  string
	id, model string
	text      bytes.Buffer
	hasText   bool
	refusal   bytes.Buffer
	// annotations are the message's url_citation (and other) annotations,
	// kept in the text item's Original.
	annotations []json.RawMessage
	calls       map[int]*chatCall
	finish      string
	sawFinish   bool
	usage       item.Usage
	done        bool
}

type chatCall struct {
	id, name string
	args     bytes.Buffer
}

func newChatAcc(provider string) *chatAcc {
	return &chatAcc{provider: provider, calls: map[int]*chatCall{}, usage: item.Usage{Requests: 1}}
}

// add folds one message or delta in; emit, when set, receives deltas.
func (a *chatAcc) add(m *chatOutMsg, emit func(llm.StreamEvent) bool) bool {
	if m.Content != nil && *m.Content != "" {
		a.hasText = true
		a.text.WriteString(*m.Content)
		if emit != nil && !emit(llm.StreamEvent{Type: llm.EventTextDelta, Index: 0, Delta: *m.Content}) {
			return false
		}
	}
	if m.Refusal != nil && *m.Refusal != "" {
		a.refusal.WriteString(*m.Refusal)
		if emit != nil && !emit(llm.StreamEvent{Type: llm.EventRefusalDelta, Index: 0, Delta: *m.Refusal}) {
			return false
		}
	}
	a.annotations = append(a.annotations, m.Annotations...)
	for _, d := range m.ToolCalls {
		tc := a.calls[d.Index]
		if tc == nil {
			tc = &chatCall{}
			a.calls[d.Index] = tc
		}
		if d.ID != "" {
			tc.id = d.ID
		}
		if d.Function.Name != "" {
			tc.name = d.Function.Name
		}
		tc.args.WriteString(d.Function.Arguments)
		if emit != nil && d.Function.Arguments != "" {
			idx := d.Index
			if a.hasText {
				idx++
			}
			if !emit(llm.StreamEvent{Type: llm.EventToolCallDelta, Index: idx, Delta: d.Function.Arguments}) {
				return false
			}
		}
	}
	return true
}

// items builds the output: text, refusal, then the calls by index, each
// call's joined arguments parsed once.
func (a *chatAcc) items() ([]item.Item, error) {
	var out []item.Item
	if a.hasText {
		out = append(out, a.textItem())
	}
	if a.refusal.Len() > 0 {
		out = append(out, item.Item{Type: item.TypeRefusal, Role: item.RoleAssistant, Text: a.refusal.String()})
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var bad *llm.MalformedToolCallError
	for _, i := range idx {
		tc := a.calls[i]
		args, ok := wire.ParseArguments(tc.args.String())
		if !ok || tc.name == "" {
			if bad == nil {
				bad = &llm.MalformedToolCallError{Provider: a.provider, CallID: tc.id, Name: tc.name, Arguments: tc.args.String()}
			}
			continue
		}
		out = append(out, item.NewToolCall(tc.id, tc.name, args))
	}
	if bad != nil {
		bad.Response = &llm.Response{ID: a.id, Model: a.model, Items: out, Usage: a.usage, StopReason: chatStop(a.finish, true)}
		return nil, bad
	}
	return out, nil
}

// textItem is the joined text; with annotations (web search citations) it
// keeps the message's text and annotations as its Original. Chat
// Completions has no place for them in a request, so they are not sent
// back, but the transcript holds them.
func (a *chatAcc) textItem() item.Item {
	it := item.AssistantText(a.text.String())
	if len(a.annotations) > 0 {
		raw, err := json.Marshal(struct {
			Role        string            `json:"role"`
			Content     string            `json:"content"`
			Annotations []json.RawMessage `json:"annotations"`
		}{"assistant", a.text.String(), a.annotations})
		if err == nil {
			it.Original = &item.Raw{Provider: ChatProvider, Value: raw}
		}
	}
	return it
}

func (a *chatAcc) response() (*llm.Response, error) {
	items, err := a.items()
	if err != nil {
		return nil, err
	}
	return &llm.Response{ID: a.id, Model: a.model, Items: items, Usage: a.usage,
		StopReason: chatStop(a.finish, len(a.calls) > 0)}, nil
}

func (a *chatAcc) Handle(ev transport.SSEEvent, emit func(llm.StreamEvent) bool) (bool, error) {
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" {
		a.done = true
		return true, nil
	}
	if len(data) == 0 {
		return false, nil
	}
	var ch chatResponse
	if err := json.Unmarshal(data, &ch); err != nil {
		return false, &llm.StreamInterruptedError{Provider: a.provider, Partial: a.Partial(),
			Err: fmt.Errorf("undecodable chunk: %w", err)}
	}
	if ch.ID != "" {
		a.id = ch.ID
	}
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = ch.Usage.usage()
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta != nil && !a.add(c.Delta, emit) {
			return false, nil
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finish, a.sawFinish = *c.FinishReason, true
		}
	}
	return false, nil
}

func (a *chatAcc) Partial() *llm.Response {
	var out []item.Item
	if a.hasText {
		out = append(out, item.AssistantText(a.text.String()))
	}
	if a.refusal.Len() > 0 {
		out = append(out, item.Item{Type: item.TypeRefusal, Role: item.RoleAssistant, Text: a.refusal.String()})
	}
	// Calls are evidence only when their arguments are complete JSON.
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		tc := a.calls[i]
		if args, ok := wire.ParseArguments(tc.args.String()); ok && tc.name != "" && tc.args.Len() > 0 {
			out = append(out, item.NewToolCall(tc.id, tc.name, args))
		}
	}
	return &llm.Response{ID: a.id, Model: a.model, Items: out, Usage: a.usage, StopReason: llm.StopOther}
}

// result ends the stream. A clean end of the body without "[DONE]" is
// accepted once a finish_reason arrived (some compatible servers omit the
// sentinel); otherwise the stream was cut and is reported as interrupted.
func (a *chatAcc) Result(eof bool, emit func(llm.StreamEvent) bool) (*llm.Response, error) {
	if eof && !a.done && !a.sawFinish {
		return nil, &llm.StreamInterruptedError{Provider: a.provider, Partial: a.Partial(), Err: io.ErrUnexpectedEOF}
	}
	resp, err := a.response()
	if err != nil {
		return nil, err
	}
	for i := range resp.Items {
		it := resp.Items[i]
		if !emit(llm.StreamEvent{Type: llm.EventItemDone, Index: i, Item: &it}) {
			return nil, nil
		}
	}
	return resp, nil
}
