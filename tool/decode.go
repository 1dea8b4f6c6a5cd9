package tool

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// decodeInstance decodes JSON into the value jsonschema validates (maps,
// slices, strings, json.Number, bools, nil), as jsonschema.UnmarshalJSON
// does, without a json.Decoder and its buffers: a call's arguments and
// result are validated on every call. Invalid JSON is an error (and
// validateJSON then asks jsonschema.UnmarshalJSON for its message).
func decodeInstance(raw []byte) (any, error) {
	if !jsonenc.Valid(raw) {
		return nil, errInvalid
	}
	d := instanceDecoder{in: raw}
	v, err := d.value(d.space(0))
	if err != nil {
		return nil, err
	}
	return v, nil
}

var errInvalid = errors.New("not valid JSON")

// instanceDecoder walks JSON that json.Valid accepted, so it only needs to
// find where each value starts and ends.
type instanceDecoder struct {
	in  []byte
	pos int
}

func (d *instanceDecoder) space(i int) int {
	for i < len(d.in) {
		switch d.in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value decodes the value at i and leaves d.pos just after it.
func (d *instanceDecoder) value(i int) (any, error) {
	switch c := d.in[i]; c {
	case '{':
		m := map[string]any{}
		i = d.space(i + 1)
		if d.in[i] == '}' {
			d.pos = i + 1
			return m, nil
		}
		for {
			k, err := d.str(i)
			if err != nil {
				return nil, err
			}
			i = d.space(d.space(d.pos) + 1) // past ':'
			v, err := d.value(i)
			if err != nil {
				return nil, err
			}
			m[k] = v
			i = d.space(d.pos)
			if d.in[i] == '}' {
				d.pos = i + 1
				return m, nil
			}
			i = d.space(i + 1) // past ','
		}
	case '[':
		a := []any{}
		i = d.space(i + 1)
		if d.in[i] == ']' {
			d.pos = i + 1
			return a, nil
		}
		for {
			v, err := d.value(i)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			i = d.space(d.pos)
			if d.in[i] == ']' {
				d.pos = i + 1
				return a, nil
			}
			i = d.space(i + 1) // past ','
		}
	case '"':
		return d.str(i)
	case 't':
		d.pos = i + 4
		return true, nil
	case 'f':
		d.pos = i + 5
		return false, nil
	case 'n':
		d.pos = i + 4
		return nil, nil
	default: // a number
		j := i
		for j < len(d.in) {
			c := d.in[j]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				j++
				continue
			}
			break
		}
		d.pos = j
		return json.Number(d.in[i:j]), nil
	}
}

// str decodes the string whose opening quote is at i. A string with an
// escape or with bytes that are not UTF-8 is decoded by encoding/json (which
// replaces such bytes with U+FFFD), as jsonschema.UnmarshalJSON would.
func (d *instanceDecoder) str(i int) (string, error) {
	escaped := false
	j := i + 1
	for ; d.in[j] != '"'; j++ {
		if d.in[j] == '\\' {
			escaped = true
			j++
		}
	}
	d.pos = j + 1
	if !escaped && utf8.Valid(d.in[i+1:j]) {
		return string(d.in[i+1 : j]), nil
	}
	var s string
	err := json.Unmarshal(d.in[i:j+1], &s)
	return s, err
}
