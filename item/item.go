package item

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// Type names the variant an [Item] holds.
type Type string

// The item types. Their string values are part of the persisted format.
const (
	TypeText       Type = "text"
	TypeImage      Type = "image"
	TypeToolCall   Type = "tool_call"
	TypeToolResult Type = "tool_result"
	TypeReasoning  Type = "reasoning"
	TypeStructured Type = "structured"
	TypeRefusal    Type = "refusal"
	TypeError      Type = "error"
	TypeRaw        Type = "raw"
)

// Known reports whether t is one of the types this package defines.
func (t Type) Known() bool {
	switch t {
	case TypeText, TypeImage, TypeToolCall, TypeToolResult, TypeReasoning,
		TypeStructured, TypeRefusal, TypeError, TypeRaw:
		return true
	}
	return false
}

// Role says who produced an item. Tool calls, reasoning, structured output and
// refusals come from the assistant; tool results from the runtime.
type Role string

// The roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Item is one entry of a transcript. Exactly the field that matches Type is set
// (Text for text and refusal items).
type Item struct {
	// Type says which payload field is set.
	Type Type `json:"type"`
	// Role is who produced the item; empty for items that have none.
	Role Role `json:"role,omitempty"`

	// Text is the content of a text or refusal item.
	Text string `json:"text,omitempty"`

	// Image is set for an image item.
	Image *Image `json:"image,omitempty"`
	// ToolCall is set for a tool_call item.
	ToolCall *ToolCall `json:"tool_call,omitempty"`
	// ToolResult is set for a tool_result item.
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	// Reasoning is set for a reasoning item.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// Structured is a JSON value produced under an output schema.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Error is set for an error item.
	Error *Error `json:"error,omitempty"`
	// Raw is set for a raw item: a provider value with no canonical form.
	Raw *Raw `json:"raw,omitempty"`

	// Original is the provider's own form of a text or refusal item, kept
	// when it carries more than Text holds: citations on an Anthropic text
	// block, annotations on an OpenAI output message. The adapter that
	// made it (Original.Provider) sends it back as it came; other
	// providers read Text. Nil means the typed fields say it all.
	Original *Raw `json:"original,omitempty"`
}

// Image is an image given either by URL or by its bytes.
type Image struct {
	// URL locates the image; empty when Data holds it.
	URL string `json:"url,omitempty"`
	// MediaType is the MIME type of Data, such as "image/png".
	MediaType string `json:"media_type,omitempty"`
	// Data is the image itself, when it is not given by URL.
	Data []byte `json:"data,omitempty"`
	// Detail is a provider hint such as "low" or "high"; empty means default.
	Detail string `json:"detail,omitempty"`
}

// ToolCall is the model's request to run a tool.
type ToolCall struct {
	// ID is the provider's call id (for OpenAI Responses, the call_id, not
	// the item id). It may be empty; the runtime then assigns one.
	ID string `json:"id"`
	// Name is the tool the model asks for.
	Name string `json:"name"`
	// Arguments is the JSON object the model produced.
	Arguments json.RawMessage `json:"arguments"`
	// ProviderID is a provider's own id for the call item when it differs
	// from ID (OpenAI Responses' fc_ id). Informational.
	ProviderID string `json:"provider_id,omitempty"`
}

// ToolResult is the outcome of a tool call as the model will see it.
type ToolResult struct {
	// CallID is the id of the tool call this result answers.
	CallID string `json:"call_id"`
	// Content is the text shown to the model.
	Content string `json:"content"`
	// Data is the tool's structured output, when it has one.
	Data json.RawMessage `json:"data,omitempty"`
	// IsError marks a result that reports a failure to the model.
	IsError bool `json:"is_error,omitempty"`
}

// Reasoning is model reasoning. Opaque holds the provider's own value
// (a signature, encrypted content, a whole provider item), kept byte for byte.
type Reasoning struct {
	// Summary is the readable reasoning summary, when the provider gives one.
	Summary string `json:"summary,omitempty"`
	// Provider names the adapter that produced Opaque; only it can send Opaque back.
	Provider string `json:"provider,omitempty"`
	// Opaque is the provider's own value, sent back unchanged.
	Opaque []byte `json:"opaque,omitempty"`
}

// Error is an error reported inside a transcript (a model-behaviour error, a
// provider error shown to a person).
type Error struct {
	// Code is a stable machine-readable code.
	Code string `json:"code"`
	// Message says what went wrong, for a person.
	Message string `json:"message"`
}

// Raw carries a provider value that has no canonical form.
type Raw struct {
	// Provider names the adapter the value came from.
	Provider string `json:"provider"`
	// Value is the provider's JSON, byte for byte.
	Value json.RawMessage `json:"value"`
}

// ErrUnknownType matches an [*UnknownTypeError].
var ErrUnknownType = errors.New("item: unknown type")

// ErrInvalid matches an [*InvalidError].
var ErrInvalid = errors.New("item: invalid item")

// UnknownTypeError is returned when decoding an item whose type this version
// does not know.
type UnknownTypeError struct {
	// Type is the type found.
	Type string
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("item: unknown type %q", e.Type)
}

// Is reports whether target is [ErrUnknownType].
func (e *UnknownTypeError) Is(target error) bool { return target == ErrUnknownType }

// InvalidError is returned for an item whose payload does not match its type.
type InvalidError struct {
	// Type is the item type the payload was checked against.
	Type Type
	// Reason says what is wrong with the payload.
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("item: invalid %s item: %s", e.Type, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Validate checks that exactly the payload matching the item's type is set.
func (it *Item) Validate() error { return it.validate(true) }

// validate is Validate; checkJSON false skips checking that the raw JSON
// values are JSON, for an item whose decoder checked them already.
func (it *Item) validate(checkJSON bool) error {
	valid := jsonenc.Valid
	if !checkJSON {
		// A decoded raw value is valid JSON; an absent one is nil.
		valid = func(b []byte) bool { return len(b) > 0 }
	}
	if !it.Type.Known() {
		return &UnknownTypeError{Type: string(it.Type)}
	}
	bad := func(reason string) error { return &InvalidError{Type: it.Type, Reason: reason} }
	for _, p := range [...]struct {
		t   Type
		set bool
	}{
		{TypeImage, it.Image != nil},
		{TypeToolCall, it.ToolCall != nil},
		{TypeToolResult, it.ToolResult != nil},
		{TypeReasoning, it.Reasoning != nil},
		{TypeStructured, it.Structured != nil},
		{TypeError, it.Error != nil},
		{TypeRaw, it.Raw != nil},
	} {
		if p.set && p.t != it.Type {
			return bad(fmt.Sprintf("carries a %s payload", p.t))
		}
	}
	if it.Text != "" && it.Type != TypeText && it.Type != TypeRefusal {
		return bad("carries text")
	}
	if it.Original != nil {
		if it.Type != TypeText && it.Type != TypeRefusal {
			return bad("carries an original form (only text and refusal items do)")
		}
		if it.Original.Provider == "" {
			return bad("original form without a provider")
		}
		if !valid(it.Original.Value) {
			return bad("original form is not JSON")
		}
	}
	switch it.Type {
	case TypeText, TypeRefusal:
		// Empty text is allowed: models do answer with nothing.
	case TypeImage:
		if it.Image == nil || (it.Image.URL == "") == (len(it.Image.Data) == 0) {
			return bad("needs exactly one of url or data")
		}
	case TypeToolCall:
		if it.ToolCall == nil {
			return bad("missing tool_call")
		}
		if it.ToolCall.Name == "" {
			return bad("missing tool name")
		}
		if !isJSONObject(it.ToolCall.Arguments, valid) {
			return bad("arguments are not a JSON object")
		}
	case TypeToolResult:
		if it.ToolResult == nil {
			return bad("missing tool_result")
		}
		if it.ToolResult.CallID == "" {
			return bad("missing call_id")
		}
		if it.ToolResult.Data != nil && !valid(it.ToolResult.Data) {
			return bad("data is not JSON")
		}
	case TypeReasoning:
		if it.Reasoning == nil {
			return bad("missing reasoning")
		}
	case TypeStructured:
		if !valid(it.Structured) {
			return bad("structured value is not JSON")
		}
	case TypeError:
		if it.Error == nil {
			return bad("missing error")
		}
	case TypeRaw:
		if it.Raw == nil || it.Raw.Provider == "" {
			return bad("missing provider")
		}
		if !valid(it.Raw.Value) {
			return bad("value is not JSON")
		}
	}
	return nil
}

// isJSONObject reports whether b is one JSON object, with no more around it
// than JSON's own whitespace (space, tab, CR, LF: bytes.TrimSpace would also
// pass a form feed or a vertical tab, which json.Marshal then refuses).
func isJSONObject(b json.RawMessage, valid func([]byte) bool) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && valid(b)
}

// MarshalJSON encodes a valid item. An invalid item is an error, so nothing
// malformed is ever persisted.
func (it Item) MarshalJSON() ([]byte, error) {
	if err := it.Validate(); err != nil {
		return nil, err
	}
	if b, ok := it.appendCommon(nil); ok {
		return b, nil
	}
	type plain Item
	return json.Marshal(plain(it))
}

// appendCommon appends a valid item as json.Marshal encodes it, byte for
// byte, without reflection, for the items of every turn: text, tool calls
// and tool results whose raw JSON json.Marshal would copy as it is
// (jsonenc.Plain). It reports false for any other item, and appends
// nothing then. Every run write encodes its new items.
func (it *Item) appendCommon(b []byte) ([]byte, bool) {
	if it.Image != nil || it.Reasoning != nil || it.Structured != nil || it.Error != nil || it.Raw != nil || it.Original != nil {
		return b, false
	}
	if tc := it.ToolCall; tc != nil && (len(tc.Arguments) == 0 || !jsonenc.Plain(tc.Arguments)) {
		return b, false
	}
	if tr := it.ToolResult; tr != nil && len(tr.Data) > 0 && !jsonenc.Plain(tr.Data) {
		return b, false
	}
	if b == nil {
		// Sized exactly, escapes aside: one allocation, and no room left
		// over for a store that keeps the bytes as they are.
		n := len(`{"type":""}`) + len(it.Type)
		if it.Role != "" {
			n += len(`,"role":""`) + len(it.Role)
		}
		if it.Text != "" {
			n += len(`,"text":""`) + len(it.Text)
		}
		if tc := it.ToolCall; tc != nil {
			n += len(`,"tool_call":{"id":"","name":"","arguments":}`) + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
			if tc.ProviderID != "" {
				n += len(`,"provider_id":""`) + len(tc.ProviderID)
			}
		}
		if tr := it.ToolResult; tr != nil {
			n += len(`,"tool_result":{"call_id":"","content":""}`) + len(tr.CallID) + len(tr.Content)
			if len(tr.Data) > 0 {
				n += len(`,"data":`) + len(tr.Data)
			}
			if tr.IsError {
				n += len(`,"is_error":true`)
			}
		}
		b = make([]byte, 0, n)
	}
	b = append(b, `{"type":`...)
	b = jsonenc.AppendString(b, string(it.Type))
	if it.Role != "" {
		b = append(b, `,"role":`...)
		b = jsonenc.AppendString(b, string(it.Role))
	}
	if it.Text != "" {
		b = append(b, `,"text":`...)
		b = jsonenc.AppendString(b, it.Text)
	}
	if tc := it.ToolCall; tc != nil {
		b = append(b, `,"tool_call":{"id":`...)
		b = jsonenc.AppendString(b, tc.ID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, tc.Name)
		b = append(b, `,"arguments":`...)
		b = append(b, tc.Arguments...)
		if tc.ProviderID != "" {
			b = append(b, `,"provider_id":`...)
			b = jsonenc.AppendString(b, tc.ProviderID)
		}
		b = append(b, '}')
	}
	if tr := it.ToolResult; tr != nil {
		b = append(b, `,"tool_result":{"call_id":`...)
		b = jsonenc.AppendString(b, tr.CallID)
		b = append(b, `,"content":`...)
		b = jsonenc.AppendString(b, tr.Content)
		if len(tr.Data) > 0 {
			b = append(b, `,"data":`...)
			b = append(b, tr.Data...)
		}
		if tr.IsError {
			b = append(b, `,"is_error":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// UnmarshalJSON decodes an item strictly: unknown types and fields that do
// not belong to the type are errors. Common items are decoded in one pass
// over b (decodeCommon); anything else, errors included, by
// encoding/json, with the same result.
func (it *Item) UnmarshalJSON(b []byte) error {
	var v Item
	if v.decodeCommon(b) {
		*it = v
		return nil
	}
	return it.unmarshalStrict(b)
}

// unmarshalStrict decodes an item with encoding/json: its type first, then
// the item with a json.Decoder that refuses unknown fields, then its raw
// values in their canonical form, then Validate. It is the definition of
// what decodeCommon does faster.
func (it *Item) unmarshalStrict(b []byte) error {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("item: %w", err)
	}
	if head.Type == nil {
		return &InvalidError{Reason: "missing type"}
	}
	if !Type(*head.Type).Known() {
		return &UnknownTypeError{Type: *head.Type}
	}
	type plain Item
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return &InvalidError{Type: Type(*head.Type), Reason: err.Error()}
	}
	v := Item(p)
	v.canonicalize()
	if err := v.Validate(); err != nil {
		return err
	}
	*it = v
	return nil
}

// canonicalize rewrites embedded JSON values into the form encoding/json
// emits (compact, HTML-escaped), so that a decoded item already equals what
// decoding its own encoding gives: decode∘encode is a fixpoint.
func (it *Item) canonicalize() {
	canon := func(r json.RawMessage) json.RawMessage {
		if r == nil {
			return nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			return r // invalid JSON; Validate reports it
		}
		return b
	}
	it.Structured = canon(it.Structured)
	// Empty byte strings are omitted when encoding; decode them as nil.
	if it.Image != nil && len(it.Image.Data) == 0 {
		it.Image.Data = nil
	}
	if it.Reasoning != nil && len(it.Reasoning.Opaque) == 0 {
		it.Reasoning.Opaque = nil
	}
	if it.ToolCall != nil {
		it.ToolCall.Arguments = canon(it.ToolCall.Arguments)
	}
	if it.ToolResult != nil {
		it.ToolResult.Data = canon(it.ToolResult.Data)
	}
	if it.Raw != nil {
		it.Raw.Value = canon(it.Raw.Value)
	}
	if it.Original != nil {
		it.Original.Value = canon(it.Original.Value)
	}
}

// NewText returns a text item with the given role.
func NewText(role Role, text string) Item { return Item{Type: TypeText, Role: role, Text: text} }

// UserText returns a user text item.
func UserText(text string) Item { return NewText(RoleUser, text) }

// AssistantText returns an assistant text item.
func AssistantText(text string) Item { return NewText(RoleAssistant, text) }

// NewToolCall returns an assistant tool-call item.
func NewToolCall(id, name string, args json.RawMessage) Item {
	return Item{Type: TypeToolCall, Role: RoleAssistant, ToolCall: &ToolCall{ID: id, Name: name, Arguments: args}}
}

// NewToolResult returns a tool-result item.
func NewToolResult(callID, content string, isError bool) Item {
	return Item{Type: TypeToolResult, Role: RoleTool, ToolResult: &ToolResult{CallID: callID, Content: content, IsError: isError}}
}

// Usage counts tokens. Cached and reasoning tokens are included in the input
// and output counts respectively, as the providers report them.
type Usage struct {
	// InputTokens counts prompt tokens, cached ones included.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts generated tokens, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens is the part of InputTokens read from the provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	// CacheWriteTokens counts input tokens written to the prompt cache (Anthropic).
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens spent on reasoning.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// Requests counts the model calls summed into this usage.
	Requests int64 `json:"requests,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		Requests:          u.Requests + v.Requests,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }
