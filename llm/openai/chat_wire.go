package openai

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// ChatProvider tags the item.Raw values the Chat adapter keeps (a text's
// annotations). Chat Completions has no place for them in a request.
const ChatProvider = "openai.chat"

// Chat Completions request body. Field order is the order of the golden
// files.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// chatMessage is one message. Content is a string, a []contentPart, or
// null (an assistant message that only calls tools).
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	Refusal    string         `json:"refusal,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatCallFunction `json:"function"`
}

type chatCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// imageRef is an image as a URL: the URL itself, or a data: URL built from
// the bytes.
func imageRef(im *item.Image) string {
	if im.URL != "" {
		return im.URL
	}
	mt := im.MediaType
	if mt == "" {
		mt = "image/png"
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}

// chatBody maps a request onto the Chat Completions wire format:
//   - the system prompt and system items become role "system" messages;
//   - consecutive user items become one user message (a plain string for a
//     lone text, content parts otherwise);
//   - consecutive assistant text, refusal and tool-call items become one
//     assistant message with tool_calls;
//   - each tool result becomes a role "tool" message with tool_call_id
//     (Chat Completions has no error flag; the content says it);
//   - reasoning, error and raw items, and a text's annotations, are not
//     sent: Chat Completions has no place for them.
func (c *client) chatBody(req *llm.Request, stream bool) ([]byte, error) {
	body := chatRequest{Model: req.Model, Temperature: req.Temperature, Messages: []chatMessage{}}
	if req.MaxOutputTokens > 0 {
		if c.legacy {
			body.MaxTokens = req.MaxOutputTokens
		} else {
			body.MaxCompletionTokens = req.MaxOutputTokens
		}
	}
	if stream {
		body.Stream = true
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, chatTool{Type: "function",
			Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: schemaOrEmpty(t.InputSchema)}})
	}
	if len(req.OutputSchema) > 0 {
		body.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: "output", Schema: req.OutputSchema}}
	}
	if req.System != "" {
		body.Messages = append(body.Messages, chatMessage{Role: "system", Content: req.System})
	}
	var user []contentPart
	var asst *chatMessage
	flush := func() {
		if len(user) > 0 {
			m := chatMessage{Role: "user", Content: user}
			if len(user) == 1 && user[0].Type == "text" {
				m.Content = user[0].Text
			}
			body.Messages = append(body.Messages, m)
			user = nil
		}
		if asst != nil {
			body.Messages = append(body.Messages, *asst)
			asst = nil
		}
	}
	assistant := func() *chatMessage {
		if len(user) > 0 {
			flush()
		}
		if asst == nil {
			asst = &chatMessage{Role: "assistant"}
		}
		return asst
	}
	appendText := func(m *chatMessage, s string) {
		if prev, ok := m.Content.(string); ok {
			m.Content = prev + s
		} else {
			m.Content = s
		}
	}
	for _, it := range req.Items {
		switch {
		case it.Type == item.TypeText && it.Role == item.RoleSystem:
			flush()
			body.Messages = append(body.Messages, chatMessage{Role: "system", Content: it.Text})
		case it.Type == item.TypeText && it.Role == item.RoleAssistant:
			appendText(assistant(), it.Text)
		case it.Type == item.TypeText:
			if asst != nil {
				flush()
			}
			user = append(user, contentPart{Type: "text", Text: it.Text})
		case it.Type == item.TypeImage && it.Image != nil:
			if asst != nil {
				flush()
			}
			user = append(user, contentPart{Type: "image_url", ImageURL: &imageURL{URL: imageRef(it.Image), Detail: it.Image.Detail}})
		case it.Type == item.TypeRefusal:
			a := assistant()
			a.Refusal += it.Text
		case it.Type == item.TypeStructured:
			appendText(assistant(), string(it.Structured))
		case it.Type == item.TypeToolCall && it.ToolCall != nil:
			a := assistant()
			args := string(it.ToolCall.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: it.ToolCall.ID, Type: "function",
				Function: chatCallFunction{Name: it.ToolCall.Name, Arguments: args}})
		case it.Type == item.TypeToolResult && it.ToolResult != nil:
			flush()
			content := it.ToolResult.Content
			if it.ToolResult.IsError && !strings.HasPrefix(content, "Error") {
				// Chat Completions has no error flag on a tool message: say it.
				content = "Error: " + content
			}
			body.Messages = append(body.Messages, chatMessage{Role: "tool", ToolCallID: it.ToolResult.CallID, Content: content})
		}
	}
	flush()
	return json.Marshal(body)
}

// Chat Completions response (non-streaming) and chunk (streaming).
type chatResponse struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      *chatOutMsg `json:"message"`
	Delta        *chatOutMsg `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type chatOutMsg struct {
	Content     *string           `json:"content"`
	Refusal     *string           `json:"refusal"`
	ToolCalls   []chatCallDelta   `json:"tool_calls"`
	Annotations []json.RawMessage `json:"annotations"`
}

type chatCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) usage() item.Usage {
	out := item.Usage{Requests: 1}
	if u == nil {
		return out
	}
	out.InputTokens, out.OutputTokens = u.PromptTokens, u.CompletionTokens
	if u.PromptTokensDetails != nil {
		out.CachedInputTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// chatStop maps finish_reason. Some compatible servers say "stop" for a
// turn that called tools; a response with tool calls is tool_use.
func chatStop(reason string, hasCalls bool) llm.StopReason {
	switch reason {
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	case "stop", "":
		if hasCalls {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	}
	return llm.StopOther
}
