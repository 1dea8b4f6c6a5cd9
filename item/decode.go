package item

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// decodeCommon decodes b into it in one pass over the bytes, without
// reflection or a json.Decoder, for the items a transcript and a session
// are made of. It reports false, leaving it unspecified, for anything it
// is not sure to decode exactly as the strict decoder (unmarshalStrict)
// does: a key that is not a field's exact name, a key given twice, a null,
// a string with an escaped surrogate or invalid UTF-8, a base64 string
// with escapes, nesting deeper than maxDepth, an item Validate refuses,
// or input that is not JSON. UnmarshalJSON then runs the strict decoder,
// which gives the same item, or the error. FuzzDecodeCommon compares the
// two on arbitrary input.
func (it *Item) decodeCommon(b []byte) bool {
	d := decoder{b: b}
	d.space()
	if !d.item(it) {
		return false
	}
	d.space()
	if d.i != len(d.b) {
		return false
	}
	// As canonicalize: empty byte strings decode as nil.
	if it.Image != nil && len(it.Image.Data) == 0 {
		it.Image.Data = nil
	}
	if it.Reasoning != nil && len(it.Reasoning.Opaque) == 0 {
		it.Reasoning.Opaque = nil
	}
	// The raw values were checked as they were read: Validate need not
	// check them again.
	return it.validate(false) == nil
}

// maxDepth bounds the nesting of a raw value the one-pass decoder reads;
// deeper values go to the strict decoder (encoding/json allows 10,000).
const maxDepth = 512

type decoder struct {
	b []byte
	i int
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c, after any space.
func (d *decoder) byte(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// members reads an object's members: open is called first (it consumes
// the '{'); next returns the next key (its raw bytes, unescaped keys only)
// with the ':' consumed, or done at the '}'.
func (d *decoder) open() bool { return d.byte('{') }

func (d *decoder) next(first bool) (key []byte, done, ok bool) {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil, true, true
	}
	if !first && !d.byte(',') {
		return nil, false, false
	}
	d.space()
	span, esc, ok := d.stringSpan()
	if !ok || esc || !d.byte(':') {
		return nil, false, false
	}
	d.space()
	return span, false, true
}

// stringSpan reads a JSON string at d.i and returns its bytes between the
// quotes, whether it holds escapes, and whether it is a valid JSON string
// (no control character, well-formed escapes).
func (d *decoder) stringSpan() (span []byte, esc, ok bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false, false
	}
	start := d.i + 1
	for i := start; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			return d.b[start:i], esc, true
		case c == '\\':
			esc = true
			if i+1 >= len(d.b) {
				return nil, false, false
			}
			switch d.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(d.b) || !hex4(d.b[i+2:i+6]) {
					return nil, false, false
				}
				i += 5
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func unhex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// str reads a JSON string value as encoding/json decodes it. It refuses
// (false) what it would decode otherwise than by plain copying and
// unescaping: invalid UTF-8 (replaced there), escaped surrogates.
func (d *decoder) str() (string, bool) {
	span, esc, ok := d.stringSpan()
	if !ok || !utf8.Valid(span) {
		return "", false
	}
	if !esc {
		return string(span), true
	}
	out := make([]byte, 0, len(span))
	for i := 0; i < len(span); i++ {
		c := span[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch span[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := unhex4(span[i+1 : i+5])
			if 0xD800 <= r && r < 0xE000 { // a surrogate: encoding/json pairs or replaces it
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default: // '"', '\\', '/'
			out = append(out, span[i])
		}
	}
	return string(out), true
}

// bytes reads a base64 string as encoding/json decodes a []byte field.
func (d *decoder) bytes() ([]byte, bool) {
	span, esc, ok := d.stringSpan()
	if !ok || esc {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(span)))
	n, err := base64.StdEncoding.Decode(out, span)
	if err != nil {
		return nil, false
	}
	return out[:n], true
}

// boolean reads true or false.
func (d *decoder) boolean() (v, ok bool) {
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return true, true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

// raw reads any JSON value other than null, checking it, and returns it
// in the form json.Marshal gives a json.RawMessage (compact,
// HTML-escaped), as canonicalize makes it: a copy of the bytes when they
// are that form already.
func (d *decoder) raw() (json.RawMessage, bool) {
	start := d.i
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		return nil, false
	}
	if !d.value(0) {
		return nil, false
	}
	v := d.b[start:d.i]
	if jsonenc.Plain(v) {
		return append(json.RawMessage(nil), v...), true
	}
	out, err := json.Marshal(json.RawMessage(v))
	return out, err == nil
}

// value skips a valid JSON value at d.i (space before it is skipped).
func (d *decoder) value(depth int) bool {
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, ok := d.stringSpan()
		return ok
	case c == '{':
		if depth >= maxDepth {
			return false
		}
		d.i++
		d.space()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return true
		}
		for {
			d.space()
			if _, _, ok := d.stringSpan(); !ok || !d.byte(':') || !d.value(depth+1) {
				return false
			}
			d.space()
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case '}':
				d.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		if depth >= maxDepth {
			return false
		}
		d.i++
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return true
		}
		for {
			if !d.value(depth + 1) {
				return false
			}
			d.space()
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return true
			default:
				return false
			}
		}
	case c == 't':
		return d.word("true")
	case c == 'f':
		return d.word("false")
	case c == 'n':
		return d.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return false
}

func (d *decoder) word(w string) bool {
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return true
}

// known returns the constant for a type or role name, so that decoding
// one allocates nothing.
func knownType(s []byte) (Type, bool) {
	switch string(s) {
	case "text":
		return TypeText, true
	case "image":
		return TypeImage, true
	case "tool_call":
		return TypeToolCall, true
	case "tool_result":
		return TypeToolResult, true
	case "reasoning":
		return TypeReasoning, true
	case "structured":
		return TypeStructured, true
	case "refusal":
		return TypeRefusal, true
	case "error":
		return TypeError, true
	case "raw":
		return TypeRaw, true
	}
	return "", false
}

func knownRole(s []byte) (Role, bool) {
	switch string(s) {
	case "system":
		return RoleSystem, true
	case "user":
		return RoleUser, true
	case "assistant":
		return RoleAssistant, true
	case "tool":
		return RoleTool, true
	}
	return "", false
}

// item reads an item's object. Each key must be a field's exact name and
// appear once.
func (d *decoder) item(it *Item) bool {
	if !d.open() {
		return false
	}
	var seen uint16
	for first := true; ; first = false {
		key, done, ok := d.next(first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		var bit uint16
		switch string(key) {
		case "type":
			bit = 1 << 0
			span, esc, ok := d.stringSpan()
			if !ok || esc {
				return false
			}
			t, known := knownType(span)
			if !known {
				return false // an unknown type: the strict decoder says so
			}
			it.Type = t
		case "role":
			bit = 1 << 1
			save := d.i
			span, esc, ok := d.stringSpan()
			if !ok {
				return false
			}
			if r, known := knownRole(span); known && !esc {
				it.Role = r
			} else {
				d.i = save
				s, ok := d.str()
				if !ok {
					return false
				}
				it.Role = Role(s)
			}
		case "text":
			bit = 1 << 2
			s, ok := d.str()
			if !ok {
				return false
			}
			it.Text = s
		case "image":
			bit = 1 << 3
			it.Image = new(Image)
			ok = d.image(it.Image)
		case "tool_call":
			bit = 1 << 4
			it.ToolCall = new(ToolCall)
			ok = d.toolCall(it.ToolCall)
		case "tool_result":
			bit = 1 << 5
			it.ToolResult = new(ToolResult)
			ok = d.toolResult(it.ToolResult)
		case "reasoning":
			bit = 1 << 6
			it.Reasoning = new(Reasoning)
			ok = d.reasoning(it.Reasoning)
		case "structured":
			bit = 1 << 7
			it.Structured, ok = d.raw()
		case "error":
			bit = 1 << 8
			it.Error = new(Error)
			ok = d.errorValue(it.Error)
		case "raw":
			bit = 1 << 9
			it.Raw = new(Raw)
			ok = d.rawValue(it.Raw)
		case "original":
			bit = 1 << 10
			it.Original = new(Raw)
			ok = d.rawValue(it.Original)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// fields reads an object whose members are named by names (exact, once
// each), calling read with the index of each.
func (d *decoder) fields(names []string, read func(i int) bool) bool {
	if !d.open() {
		return false
	}
	var seen uint8
	for first := true; ; first = false {
		key, done, ok := d.next(first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		i := 0
		for i < len(names) && names[i] != string(key) {
			i++
		}
		if i == len(names) || seen&(1<<i) != 0 || !read(i) {
			return false
		}
		seen |= 1 << i
	}
}

var (
	imageFields      = []string{"url", "media_type", "data", "detail"}
	toolCallFields   = []string{"id", "name", "arguments", "provider_id"}
	toolResultFields = []string{"call_id", "content", "data", "is_error"}
	reasoningFields  = []string{"summary", "provider", "opaque"}
	errorFields      = []string{"code", "message"}
	rawFields        = []string{"provider", "value"}
)

func (d *decoder) image(v *Image) bool {
	return d.fields(imageFields, func(i int) (ok bool) {
		switch i {
		case 0:
			v.URL, ok = d.str()
		case 1:
			v.MediaType, ok = d.str()
		case 2:
			v.Data, ok = d.bytes()
		default:
			v.Detail, ok = d.str()
		}
		return ok
	})
}

func (d *decoder) toolCall(v *ToolCall) bool {
	return d.fields(toolCallFields, func(i int) (ok bool) {
		switch i {
		case 0:
			v.ID, ok = d.str()
		case 1:
			v.Name, ok = d.str()
		case 2:
			v.Arguments, ok = d.raw()
		default:
			v.ProviderID, ok = d.str()
		}
		return ok
	})
}

func (d *decoder) toolResult(v *ToolResult) bool {
	return d.fields(toolResultFields, func(i int) (ok bool) {
		switch i {
		case 0:
			v.CallID, ok = d.str()
		case 1:
			v.Content, ok = d.str()
		case 2:
			v.Data, ok = d.raw()
		default:
			v.IsError, ok = d.boolean()
		}
		return ok
	})
}

func (d *decoder) reasoning(v *Reasoning) bool {
	return d.fields(reasoningFields, func(i int) (ok bool) {
		switch i {
		case 0:
			v.Summary, ok = d.str()
		case 1:
			v.Provider, ok = d.str()
		default:
			v.Opaque, ok = d.bytes()
		}
		return ok
	})
}

func (d *decoder) errorValue(v *Error) bool {
	return d.fields(errorFields, func(i int) (ok bool) {
		if i == 0 {
			v.Code, ok = d.str()
		} else {
			v.Message, ok = d.str()
		}
		return ok
	})
}

func (d *decoder) rawValue(v *Raw) bool {
	return d.fields(rawFields, func(i int) (ok bool) {
		if i == 0 {
			v.Provider, ok = d.str()
		} else {
			v.Value, ok = d.raw()
		}
		return ok
	})
}
