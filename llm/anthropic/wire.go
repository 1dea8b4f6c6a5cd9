package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
)

type request struct {
	Model       string       `json:"model"`
	MaxTokens   int          `json:"max_tokens"`
	System      string       `json:"system,omitempty"`
	Messages    []reqMessage `json:"messages"`
	Tools       []toolDef    `json:"tools,omitempty"`
	Thinking    *thinking    `json:"thinking,omitempty"`
	Temperature *float64     `json:"temperature,omitempty"`
	Metadata    *metadata    `json:"metadata,omitempty"`
	Stream      bool         `json:"stream,omitempty"`
}

// reqMessage is a request message; message is a response.
type reqMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imageBlock struct {
	Type   string      `json:"type"`
	Source imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

// body maps a request onto the Messages API:
//   - the system prompt, and any system items, become the top-level
//     "system" field (joined by a blank line);
//   - user text and images are user content blocks; assistant text and
//     refusals are text blocks; tool calls are tool_use blocks;
//   - tool results are user blocks {type:"tool_result", tool_use_id,
//     content, is_error};
//   - thinking and redacted_thinking blocks, text blocks with citations,
//     and every other block this adapter received (server tool use and
//     results, MCP blocks…) are sent back verbatim; other providers'
//     reasoning and raw items are dropped;
//   - consecutive items of the same role are merged into one message, as
//     the API requires alternating roles; empty text blocks, which the API
//     rejects, are left out.
func (p *Messages) body(req *llm.Request, stream bool) ([]byte, error) {
	body := request{Model: req.Model, MaxTokens: p.maxTokens, Temperature: req.Temperature, Stream: stream, Messages: []reqMessage{}}
	if req.MaxOutputTokens > 0 {
		body.MaxTokens = req.MaxOutputTokens
	}
	if p.thinking > 0 {
		body.Thinking = &thinking{Type: "enabled", BudgetTokens: p.thinking}
	}
	if uid := req.Metadata["user_id"]; uid != "" {
		body.Metadata = &metadata{UserID: uid}
	}
	for _, t := range req.Tools {
		s := t.InputSchema
		if len(s) == 0 {
			s = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		body.Tools = append(body.Tools, toolDef{Name: t.Name, Description: t.Description, InputSchema: s})
	}
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	add := func(role string, block any) {
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == role {
			body.Messages[n-1].Content = append(body.Messages[n-1].Content, block)
			return
		}
		body.Messages = append(body.Messages, reqMessage{Role: role, Content: []any{block}})
	}
	for _, it := range req.Items {
		switch {
		case it.Type == item.TypeText && it.Role == item.RoleSystem:
			if it.Text != "" {
				system = append(system, it.Text)
			}
		case it.Type == item.TypeText && it.Original != nil && it.Original.Provider == ReasoningProvider && json.Valid(it.Original.Value):
			add("assistant", it.Original.Value) // a text block with citations, as it came
		case (it.Type == item.TypeText || it.Type == item.TypeRefusal) && it.Role == item.RoleAssistant,
			it.Type == item.TypeRefusal:
			if it.Text != "" {
				add("assistant", textBlock{Type: "text", Text: it.Text})
			}
		case it.Type == item.TypeText:
			if it.Text != "" {
				add("user", textBlock{Type: "text", Text: it.Text})
			}
		case it.Type == item.TypeStructured:
			add("assistant", textBlock{Type: "text", Text: string(it.Structured)})
		case it.Type == item.TypeImage && it.Image != nil:
			src := imageSource{Type: "url", URL: it.Image.URL}
			if it.Image.URL == "" {
				mt := it.Image.MediaType
				if mt == "" {
					mt = "image/png"
				}
				src = imageSource{Type: "base64", MediaType: mt, Data: base64.StdEncoding.EncodeToString(it.Image.Data)}
			}
			add("user", imageBlock{Type: "image", Source: src})
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			in := it.ToolCall.Arguments
			if len(bytes.TrimSpace(in)) == 0 {
				in = json.RawMessage(`{}`)
			}
			add("assistant", toolUseBlock{Type: "tool_use", ID: it.ToolCall.ID, Name: it.ToolCall.Name, Input: in})
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			add("user", toolResultBlock{Type: "tool_result", ToolUseID: it.ToolResult.CallID,
				Content: it.ToolResult.Content, IsError: it.ToolResult.IsError})
		case it.Type == item.TypeReasoning && it.Reasoning != nil && it.Reasoning.Provider == ReasoningProvider && json.Valid(it.Reasoning.Opaque):
			add("assistant", json.RawMessage(it.Reasoning.Opaque))
		case it.Type == item.TypeRaw && it.Raw != nil && it.Raw.Provider == ReasoningProvider && json.Valid(it.Raw.Value):
			add("assistant", it.Raw.Value)
		}
	}
	body.System = strings.Join(system, "\n\n")
	return json.Marshal(body)
}

// message is a Messages API response (and the message of reqMessagestart).
type message struct {
	ID         string            `json:"id"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *usage            `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// merge takes the non-zero counts of v (reqMessagedelta carries cumulative
// counts).
func (u *usage) merge(v *usage) {
	if v == nil {
		return
	}
	if v.InputTokens != 0 {
		u.InputTokens = v.InputTokens
	}
	if v.OutputTokens != 0 {
		u.OutputTokens = v.OutputTokens
	}
	if v.CacheReadInputTokens != 0 {
		u.CacheReadInputTokens = v.CacheReadInputTokens
	}
	if v.CacheCreationInputTokens != 0 {
		u.CacheCreationInputTokens = v.CacheCreationInputTokens
	}
}

// normalise: Anthropic's input_tokens excludes cached tokens; item.Usage
// counts them in InputTokens, and shows them in CachedInputTokens (read)
// and CacheWriteTokens (created).
func (u *usage) normalise() item.Usage {
	if u == nil {
		return item.Usage{Requests: 1}
	}
	return item.Usage{
		InputTokens:       u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.CacheReadInputTokens,
		CacheWriteTokens:  u.CacheCreationInputTokens,
		Requests:          1,
	}
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

func stopReason(s string) llm.StopReason {
	switch s {
	case "end_turn", "stop_sequence":
		return llm.StopEndTurn
	case "tool_use":
		return llm.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopMaxTokens
	case "refusal":
		return llm.StopRefusal
	}
	return llm.StopOther
}

// field is one member of a JSON object, in the order it came.
type field struct {
	key string
	val json.RawMessage
}

// overlay returns the object raw with the given members replaced or, when
// missing, appended, keeping the order the members came in. A streamed
// block is rebuilt this way from its content_block_start and its deltas,
// so that it reads as the block a non-streaming response carries.
func overlay(raw json.RawMessage, set []field) json.RawMessage {
	var have []field
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				break
			}
			key, _ := k.(string)
			have = append(have, field{key, v})
		}
	}
	for _, f := range set {
		found := false
		for i := range have {
			if have[i].key == f.key {
				have[i].val, found = f.val, true
			}
		}
		if !found {
			have = append(have, f)
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range have {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		_ = json.Compact(&b, f.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// hasCitations reports whether a text block carries a non-empty citations
// list.
func hasCitations(raw json.RawMessage) bool {
	var b struct {
		Citations []json.RawMessage `json:"citations"`
	}
	return json.Unmarshal(raw, &b) == nil && len(b.Citations) > 0
}

// blockItem maps one complete content block other than tool_use, kept as
// it came:
//   - text becomes a text item; with citations it keeps the whole block as
//     its Original, which is sent back as it came;
//   - thinking and redacted_thinking become reasoning whose Opaque is the
//     block, sent back verbatim (the signature and the encrypted data must
//     not change);
//   - every other block (server_tool_use, web_search_tool_result,
//     mcp_tool_use, mcp_tool_result, container_upload, and types not known
//     yet) becomes a raw item holding the block, sent back verbatim.
func blockItem(raw json.RawMessage, typ string) item.Item {
	raw = bytes.Clone(raw)
	switch typ {
	case "text":
		var b block
		_ = json.Unmarshal(raw, &b)
		it := item.AssistantText(b.Text)
		if hasCitations(raw) {
			it.Original = &item.Raw{Provider: ReasoningProvider, Value: raw}
		}
		return it
	case "thinking", "redacted_thinking":
		var b block
		_ = json.Unmarshal(raw, &b)
		return item.Item{Type: item.TypeReasoning, Role: item.RoleAssistant, Reasoning: &item.Reasoning{
			Summary: b.Thinking, Provider: ReasoningProvider, Opaque: raw}}
	}
	return item.Item{Type: item.TypeRaw, Role: item.RoleAssistant, Raw: &item.Raw{Provider: ReasoningProvider, Value: raw}}
}

// response maps a complete message.
func (p *Messages) response(m *message) (*llm.Response, error) {
	out := &llm.Response{ID: m.ID, Model: m.Model, Usage: m.Usage.normalise(), StopReason: stopReason(m.StopReason)}
	var bad *llm.MalformedToolCallError
	for _, raw := range m.Content {
		var b block
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		if b.Type == "tool_use" {
			in, ok := wire.ParseArguments(string(b.Input))
			if !ok || b.Name == "" {
				if bad == nil {
					bad = &llm.MalformedToolCallError{Provider: "anthropic", CallID: b.ID, Name: b.Name, Type: b.Type, Arguments: string(b.Input)}
				}
				continue
			}
			out.Items = append(out.Items, item.NewToolCall(b.ID, b.Name, in))
			continue
		}
		out.Items = append(out.Items, blockItem(raw, b.Type))
	}
	if bad != nil {
		bad.Response = out
		return nil, bad
	}
	return out, nil
}
