package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// ErrInvalidJSON is returned (wrapped) by [Redactor.JSON] for input that is
// not valid JSON.
var ErrInvalidJSON = errors.New("redact: invalid JSON")

// quotedPlaceholder is Placeholder as a JSON string.
const quotedPlaceholder = `"` + Placeholder + `"`

// JSON returns b with the value of every secret key, at any depth and of
// any type (string, number, object, array, null), replaced by the string
// [Placeholder], and every other string value cleaned by [Redactor.Text]
// ("password=…" inside a string, a URL's password, a PEM private key, a
// Bearer credential). Everything else is kept byte for byte: key order,
// duplicate keys, number spelling (12345678901234567890, 1.0, 1e3),
// whitespace, and every string Text leaves alone. A value that already is the placeholder is left alone, so
// redacting twice gives the same bytes as redacting once.
//
// changed reports whether anything was replaced; when it is false, out is
// b itself, not a copy. Empty input is returned as is with no error (there
// is nothing to redact); any other input that is not valid JSON gives an
// error matching [ErrInvalidJSON] and no output, so a caller cannot
// persist unredacted bytes by ignoring the error.
func (r *Redactor) JSON(b json.RawMessage) (out json.RawMessage, changed bool, err error) {
	if len(b) == 0 {
		return b, false, nil
	}
	if !jsonenc.Valid(b) {
		// json.Valid does not say where; Unmarshal does, for the message.
		var v any
		if uerr := json.Unmarshal(b, &v); uerr != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrInvalidJSON, uerr)
		}
		return nil, false, ErrInvalidJSON
	}
	return r.walk(b)
}

// MarshaledJSON is JSON for b known to be valid JSON (json.Marshal has
// just produced it, or the caller validated it where it came in): it
// skips the validity check that JSON makes and otherwise redacts the
// same way. When nothing is replaced, it returns b itself.
func (r *Redactor) MarshaledJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	out, _, _ := r.walk(b)
	return out
}

// walk redacts b, which is valid JSON.
func (r *Redactor) walk(b json.RawMessage) (json.RawMessage, bool, error) {
	w := walker{r: r, in: b}
	w.value(skipSpace(b, 0))
	if len(w.spans) == 0 {
		return b, false, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	last := 0
	for _, s := range w.spans {
		buf.Write(b[last:s.start])
		if s.with != nil {
			buf.Write(s.with)
		} else {
			buf.WriteString(quotedPlaceholder)
		}
		last = s.end
	}
	buf.Write(b[last:])
	return buf.Bytes(), true, nil
}

// span is a value to replace: by with, or by the quoted placeholder when
// with is nil.
type span struct {
	start, end int
	with       []byte
}

// walker finds the values to replace in input already checked by
// json.Valid, so it does not re-validate: it only needs to find where each
// value starts and ends. Recursion depth is bounded by encoding/json's own
// nesting limit, which json.Valid enforces.
type walker struct {
	r     *Redactor
	in    []byte
	spans []span // in input order, non-overlapping
}

// value walks the value starting at i and returns the index just after it.
func (w *walker) value(i int) int {
	switch w.in[i] {
	case '{':
		i = skipSpace(w.in, i+1)
		if w.in[i] == '}' {
			return i + 1
		}
		for {
			ke := stringEnd(w.in, i)
			key := decodeString(w.in[i:ke])
			i = skipSpace(w.in, ke) // at ':'
			i = skipSpace(w.in, i+1)
			if w.r.IsSecretKey(key) {
				end := skipValue(w.in, i)
				if !isPlaceholder(w.in[i:end]) {
					w.spans = append(w.spans, span{start: i, end: end})
				}
				i = end
			} else {
				i = w.value(i)
			}
			i = skipSpace(w.in, i)
			if w.in[i] == '}' {
				return i + 1
			}
			i = skipSpace(w.in, i+1) // past ','
		}
	case '[':
		i = skipSpace(w.in, i+1)
		if w.in[i] == ']' {
			return i + 1
		}
		// In an argument vector (["login", "--password", "hunter2"]) the
		// element after a secret flag is the secret.
		afterFlag := false
		for {
			next := afterFlag
			afterFlag = false
			switch {
			case w.in[i] != '"':
				i = w.value(i)
			case next && !isFlagElement(w.in, i):
				end := stringEnd(w.in, i)
				if !isPlaceholder(w.in[i:end]) {
					w.spans = append(w.spans, span{start: i, end: end})
				}
				i = end
			default:
				end := stringEnd(w.in, i)
				afterFlag = isFlagElement(w.in, i) && w.r.SecretFlag(decodeString(w.in[i:end]))
				i = w.value(i)
			}
			i = skipSpace(w.in, i)
			if w.in[i] == ']' {
				return i + 1
			}
			i = skipSpace(w.in, i+1) // past ','
		}
	case '"':
		end := stringEnd(w.in, i)
		w.text(i, end)
		return end
	}
	return scalarEnd(w.in, i)
}

// text cleans the string value in[start:end] with [Redactor.Text]. Only a
// string that may hold a secret is decoded.
func (w *walker) text(start, end int) {
	raw := w.in[start:end]
	if bytes.IndexByte(raw, '\\') < 0 && !mayHoldSecret(string(raw[1:len(raw)-1])) {
		return
	}
	s := decodeString(raw)
	t := w.r.Text(s)
	if t == s {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		w.spans = append(w.spans, span{start: start, end: end})
		return
	}
	w.spans = append(w.spans, span{start: start, end: end, with: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))})
}

// skipValue returns the index just after the value starting at i, without
// looking inside it.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	return scalarEnd(b, i)
}

// stringEnd returns the index just after the string whose opening quote is
// at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// scalarEnd returns the index just after the number, true, false or null
// starting at i.
func scalarEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// decodeString decodes a JSON string token; escapes ("api\u005fkey") must
// not hide a secret key.
func decodeString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Unreachable for input that passed json.Valid; fall back to the
		// raw text, which can only make a key look more secret, not less.
		return string(raw)
	}
	return s
}

// isFlagElement reports whether the JSON string at b[i] starts with a dash
// (possibly escaped), as a command-line flag does.
func isFlagElement(b []byte, i int) bool {
	return i+1 < len(b) && (b[i+1] == '-' || bytes.HasPrefix(b[i+1:], []byte(`\u002d`)) || bytes.HasPrefix(b[i+1:], []byte(`\u002D`)))
}

func isPlaceholder(raw []byte) bool {
	if string(raw) == quotedPlaceholder {
		return true
	}
	return len(raw) > 0 && raw[0] == '"' && decodeString(raw) == Placeholder
}
