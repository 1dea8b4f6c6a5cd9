package actoviq

import (
	"encoding/json"
	"strconv"
)

// marshalToolCallData encodes d as json.Marshal does, byte for byte, for
// the common case (every string plain ASCII that JSON need not escape,
// arguments already compact and free of the characters json.Marshal
// escapes), without reflection: every ledger transition encodes one. It
// reports false for anything else, and the caller uses json.Marshal.
func marshalToolCallData(d *ToolCallData) ([]byte, bool) {
	effect, err := d.Effect.MarshalText()
	if err != nil || !plainArgs(d.Args) {
		return nil, false
	}
	b := make([]byte, 0, 128+len(d.CallID)+len(d.Tool)+len(d.IdempotencyKey)+len(d.Args))
	ok := true
	str := func(key, v string) {
		b = append(b, key...)
		b = append(b, '"')
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				ok = false
				return
			}
		}
		b = append(b, v...)
		b = append(b, '"')
	}
	str(`{"call_id":`, d.CallID)
	str(`,"tool":`, d.Tool)
	str(`,"effect":`, string(effect))
	str(`,"state":`, string(d.State))
	str(`,"idempotency_key":`, d.IdempotencyKey)
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
		str(`,"resolution":`, d.Resolution)
	}
	b = append(b, '}')
	return b, ok
}

// plainArgs reports whether json.Marshal would copy args as they are: no
// insignificant space to compact away, nothing it escapes (<, >, &, and
// U+2028 and U+2029, whose UTF-8 starts with 0xE2).
func plainArgs(args json.RawMessage) bool {
	inString := false
	for i := 0; i < len(args); i++ {
		switch c := args[i]; {
		case c == '<' || c == '>' || c == '&' || c == 0xE2:
			return false
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}
