package actoviq

import (
	"encoding/json"
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
	// Sized exactly (strings that need escapes aside): the store keeps
	// these bytes as they are, so room left over would be kept with them.
	n := len(`{"call_id":"","tool":"","effect":"","state":"","idempotency_key":"","attempt":}`) +
		len(d.CallID) + len(d.Tool) + len(effect) + len(d.State) + len(d.IdempotencyKey) + intLen(int64(d.Attempt))
	if len(d.Args) > 0 {
		n += len(`,"args":`) + len(d.Args)
	}
	if d.IsError {
		n += len(`,"is_error":true`)
	}
	if d.Resolution != "" {
		n += len(`,"resolution":""`) + len(d.Resolution)
	}
	b := make([]byte, 0, n)
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
	n := len(`{"content":""}`) + len(r.Content) // sized exactly, escapes aside (see marshalToolCallData)
	if len(r.Data) > 0 {
		n += len(`,"data":`) + len(r.Data)
	}
	if r.IsError {
		n += len(`,"is_error":true`)
	}
	b := make([]byte, 0, n)
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

// recordedData returns the bytes of r.Data inside b, what marshalResult(r)
// encoded (it copies Data as it is), capped there: the recorded copy, not
// the memory the tool returned.
func recordedData(b []byte, r *tool.Result) json.RawMessage {
	n := len(r.Data)
	if n == 0 {
		return r.Data
	}
	end := len(b) - len(`}`)
	if r.IsError {
		end -= len(`,"is_error":true`)
	}
	return json.RawMessage(b[end-n : end : end])
}

// intLen is the length of v in decimal.
func intLen(v int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], v, 10))
}
