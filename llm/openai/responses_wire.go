package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
)

// ReasoningProvider tags item.Reasoning and item.Raw values produced by the
// Responses adapter; only values with this tag are sent back.
const ReasoningProvider = "openai.responses"

type respRequest struct {
	Model           string            `json:"model"`
	Instructions    string            `json:"instructions,omitempty"`
	Input           []any             `json:"input"`
	Tools           []respTool        `json:"tools,omitempty"`
	Text            *respText         `json:"text,omitempty"`
	MaxOutputTokens int               `json:"max_output_tokens,omitempty"`
	Temperature     *float64          `json:"temperature,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Store           *bool             `json:"store,omitempty"`
	Include         []string          `json:"include,omitempty"`
	Stream          bool              `json:"stream,omitempty"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type respText struct {
	Format respFormat `json:"format"`
}

type respFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

type respMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

type respFunctionCall struct {
	Type      string `json:"type"`
	ID        string `json:"id,omitempty"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type respFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// responsesBody maps a request onto the Responses API:
//   - the system prompt becomes "instructions"; system items become
//     system messages;
//   - consecutive user items become one message with input_text and
//     input_image parts; assistant text and refusals become assistant
//     messages;
//   - a tool call becomes a function_call with call_id = ToolCall.ID, and
//     id = ToolCall.ProviderID (the fc_ id) when known;
//   - a tool result becomes a function_call_output;
//   - reasoning and raw items produced by this adapter, and text items
//     that kept their output message (annotations), are sent back
//     verbatim (the whole provider item); other providers' are dropped;
//   - Config.NoStore adds "store": false and the include list.
func (c *client) responsesBody(req *llm.Request, stream bool) ([]byte, error) {
	body := respRequest{Model: req.Model, Instructions: req.System, Input: []any{}, MaxOutputTokens: req.MaxOutputTokens,
		Temperature: req.Temperature, Stream: stream}
	if len(req.Metadata) > 0 {
		body.Metadata = req.Metadata
	}
	if c.noStore {
		no := false
		body.Store = &no
	}
	body.Include = c.include
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schemaOrEmpty(t.InputSchema)})
	}
	if len(req.OutputSchema) > 0 {
		body.Text = &respText{Format: respFormat{Type: "json_schema", Name: "output", Schema: req.OutputSchema}}
	}
	var user []respPart
	flush := func() {
		if len(user) > 0 {
			body.Input = append(body.Input, respMessage{Type: "message", Role: "user", Content: user})
			user = nil
		}
	}
	add := func(v any) {
		flush()
		body.Input = append(body.Input, v)
	}
	for _, it := range req.Items {
		switch {
		case it.Type == item.TypeText && (it.Role == item.RoleUser || it.Role == item.RoleTool || it.Role == ""):
			user = append(user, respPart{Type: "input_text", Text: it.Text})
		case it.Type == item.TypeImage && it.Image != nil:
			d := it.Image.Detail
			if d == "" {
				d = "auto"
			}
			user = append(user, respPart{Type: "input_image", ImageURL: imageRef(it.Image), Detail: d})
		case it.Type == item.TypeText && it.Role == item.RoleSystem:
			add(respMessage{Type: "message", Role: "system", Content: it.Text})
		case (it.Type == item.TypeText || it.Type == item.TypeRefusal) && it.Original != nil &&
			it.Original.Provider == ReasoningProvider && json.Valid(it.Original.Value):
			add(it.Original.Value) // an output message with annotations, as it came
		case it.Type == item.TypeText, it.Type == item.TypeRefusal:
			add(respMessage{Type: "message", Role: "assistant", Content: it.Text})
		case it.Type == item.TypeStructured:
			add(respMessage{Type: "message", Role: "assistant", Content: string(it.Structured)})
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			args := string(it.ToolCall.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			add(respFunctionCall{Type: "function_call", ID: it.ToolCall.ProviderID, CallID: it.ToolCall.ID,
				Name: it.ToolCall.Name, Arguments: args})
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			add(respFunctionOutput{Type: "function_call_output", CallID: it.ToolResult.CallID, Output: it.ToolResult.Content})
		case it.Type == item.TypeReasoning && it.Reasoning != nil && it.Reasoning.Provider == ReasoningProvider && json.Valid(it.Reasoning.Opaque):
			add(json.RawMessage(it.Reasoning.Opaque))
		case it.Type == item.TypeRaw && it.Raw != nil && it.Raw.Provider == ReasoningProvider && json.Valid(it.Raw.Value):
			add(it.Raw.Value)
		}
	}
	flush()
	return json.Marshal(body)
}

// respObject is a Responses API response object.
type respObject struct {
	ID                string            `json:"id"`
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	Usage             *respUsage        `json:"usage"`
	Error             *apiError         `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *respUsage) usage() item.Usage {
	out := item.Usage{Requests: 1}
	if u == nil {
		return out
	}
	out.InputTokens, out.OutputTokens = u.InputTokens, u.OutputTokens
	if u.InputTokensDetails != nil {
		out.CachedInputTokens = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		out.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	return out
}

// respOutputItem is one entry of "output".
type respOutputItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Role      string `json:"role"`
	Content   []struct {
		Type        string            `json:"type"`
		Text        string            `json:"text"`
		Refusal     string            `json:"refusal"`
		Annotations []json.RawMessage `json:"annotations"`
		Logprobs    []json.RawMessage `json:"logprobs"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// outputItems maps one output entry to transcript items. args, when not
// nil, replaces an empty "arguments" (joined from deltas).
func outputItems(raw json.RawMessage, args *string) ([]item.Item, *respOutputItem, bool) {
	var oi respOutputItem
	if json.Unmarshal(raw, &oi) != nil {
		return nil, nil, true
	}
	switch oi.Type {
	case "message":
		var out []item.Item
		for i, c := range oi.Content {
			var it item.Item
			switch c.Type {
			case "output_text":
				it = item.AssistantText(c.Text)
			case "refusal":
				it = item.Item{Type: item.TypeRefusal, Role: item.RoleAssistant, Text: c.Refusal}
			default:
				continue
			}
			if len(c.Annotations) > 0 || len(c.Logprobs) > 0 {
				it.Original = &item.Raw{Provider: ReasoningProvider, Value: messagePart(raw, i)}
			}
			out = append(out, it)
		}
		return out, &oi, true
	case "function_call":
		a := oi.Arguments
		if a == "" && args != nil {
			a = *args
		}
		oi.Arguments = a
		parsed, ok := wire.ParseArguments(a)
		if !ok || oi.Name == "" {
			return nil, &oi, false
		}
		tc := item.NewToolCall(oi.CallID, oi.Name, parsed)
		tc.ToolCall.ProviderID = oi.ID
		return []item.Item{tc}, &oi, true
	case "reasoning":
		var sum []string
		for _, s := range oi.Summary {
			sum = append(sum, s.Text)
		}
		return []item.Item{{Type: item.TypeReasoning, Role: item.RoleAssistant, Reasoning: &item.Reasoning{
			Summary: strings.Join(sum, "\n\n"), Provider: ReasoningProvider, Opaque: bytes.Clone(raw)}}}, &oi, true
	}
	return []item.Item{{Type: item.TypeRaw, Role: item.RoleAssistant, Raw: &item.Raw{Provider: ReasoningProvider, Value: compactJSON(raw)}}}, &oi, true
}

// messagePart is the output message raw holding only its content part i,
// so that each text item can go back with its own annotations. Only the
// first part keeps the message's id: two input items must not share one.
func messagePart(raw json.RawMessage, i int) json.RawMessage {
	var fields map[string]json.RawMessage
	var parts []json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || json.Unmarshal(fields["content"], &parts) != nil || i >= len(parts) {
		return compactJSON(raw)
	}
	enc, _ := json.Marshal([]json.RawMessage{parts[i]})
	fields["content"] = enc
	if i > 0 {
		delete(fields, "id")
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return compactJSON(raw)
	}
	return b
}

func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return append([]byte(nil), b...)
	}
	return buf.Bytes()
}

// respStop maps the response status and incomplete reason.
func respStop(r *respObject, hasCalls bool) llm.StopReason {
	switch r.Status {
	case "incomplete":
		if r.IncompleteDetails != nil {
			switch r.IncompleteDetails.Reason {
			case "max_output_tokens":
				return llm.StopMaxTokens
			case "content_filter":
				return llm.StopRefusal
			}
		}
		return llm.StopOther
	case "completed", "":
		if hasCalls {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	}
	return llm.StopOther
}
