package actoviq

import (
	"strconv"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/tool"
)

// marshalToolCallData encodes d as json.Marshal does, byte for byte, for
// the common case (arguments already compact and free of the characters
// json.Marshal escapes), without reflection: every ledger transition
// encodes one. It reports false for anything else, and the caller uses
// json.Marshal.
func marshalToolCallData(d *ToolCallData) ([]byte, bool) {
	if !d.Effect.Valid() || !jsonenc.Plain(d.Args) { // MarshalText's error, and its text: String
		return nil, false
	}
	effect := d.Effect.String()
	b := make([]byte, 0, 128+len(d.CallID)+len(d.Tool)+len(d.IdempotencyKey)+len(d.Args)+len(d.Resolution))
	b = append(b, `{"call_id":`...)
	b = jsonenc.AppendString(b, d.CallID)
	b = append(b, `,"tool":`...)
	b = jsonenc.AppendString(b, d.Tool)
	b = append(b, `,"effect":`...)
	b = jsonenc.AppendString(b, effect)
	b = append(b, `,"state":`...)
	b = jsonenc.AppendString(b, string(d.State))
	b = append(b, `,"idempotency_key":`...)
	b = jsonenc.AppendString(b, d.IdempotencyKey)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	if len(d.Args) > 0 {
		b = append(b, `,"args":`...)
		b = append(b, d.Args...)
	}
	if d.IsError {
		b = append(b, `,"is_error":true`...)
	}
	if d.Resolution != "" {
		b = append(b, `,"resolution":`...)
		b = jsonenc.AppendString(b, d.Resolution)
	}
	return append(b, '}'), true
}

// marshalResult encodes a tool result as json.Marshal does, byte for byte,
// without reflection, when its Data is valid JSON (the caller checked:
// boundResult) that json.Marshal would copy as it is, and its Content is
// valid UTF-8 (so that decoding the bytes gives r back exactly). It
// reports false for anything else, and the caller uses json.Marshal.
func marshalResult(r *tool.Result) ([]byte, bool) {
	if !jsonenc.Plain(r.Data) || !utf8.ValidString(r.Content) {
		return nil, false
	}
	b := make([]byte, 0, 32+len(r.Content)+len(r.Data))
	b = append(b, `{"content":`...)
	b = jsonenc.AppendString(b, r.Content)
	if len(r.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, r.Data...)
	}
	if r.IsError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}'), true
}
