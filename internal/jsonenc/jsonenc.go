// Package jsonenc appends JSON as encoding/json's Marshal writes it, byte
// for byte, for the few shapes the engine encodes on every write (strings,
// compact raw values). Hand-written encoders of the hot path use it instead
// of reflection; the fuzz tests of each of them, and of this package,
// compare the bytes with encoding/json. [Valid] is json.Valid in one pass,
// for the checks every store makes on every JSON field it is given.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as json.Marshal encodes
// a Go string: quotes, backslashes and control characters escaped, <, >
// and & escaped as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped,
// and each byte of invalid UTF-8 replaced by \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	from := 0 // s[from:i] is still to copy
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[from:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, and <, >, &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			from = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[from:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[from:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += n
			continue
		}
		i += n
		from = i
	}
	b = append(b, s[from:]...)
	return append(b, '"')
}

// Plain reports whether json.Marshal copies raw, a valid JSON value held
// in a json.RawMessage, as it is: raw has no insignificant space for it to
// compact away and none of the characters it escapes (<, >, & and U+2028,
// U+2029, whose UTF-8 starts with 0xE2; any 0xE2 is refused). Plain does
// not check that raw is valid JSON: the caller has.
func Plain(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
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

// ReplaceInvalidUTF8 returns b, valid JSON, with each byte that is not
// part of valid UTF-8 replaced by the escape \ufffd, as json.Marshal
// replaces it in a Go string, and how many bytes it replaced. Such bytes
// can only be inside strings of valid JSON, where the escape is valid. b
// itself is returned when it is valid UTF-8.
func ReplaceInvalidUTF8(b []byte) ([]byte, int) {
	if utf8.Valid(b) {
		return b, 0
	}
	out := make([]byte, 0, len(b)+16)
	n := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...)
			n++
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out, n
}

// ValidString returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD: the string that s encoded by AppendString (or
// json.Marshal) decodes to. s itself is returned when it is valid UTF-8.
func ValidString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
