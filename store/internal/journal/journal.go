// Package journal is the row format of session journals in the SQL
// stores: one row per append, holding the append's items joined by
// U+001E. Valid JSON text never contains that byte (control characters
// are escaped inside strings and are not whitespace), so the items split
// back exactly.
package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Sep separates the items of one row.
const Sep = '\x1e'

// Join returns the row text of items (valid JSON each).
func Join(items []json.RawMessage) string {
	if len(items) == 1 {
		return string(items[0])
	}
	n := len(items) - 1
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	for i, it := range items {
		if i > 0 {
			b = append(b, Sep)
		}
		b = append(b, it...)
	}
	return string(b)
}

// Split returns the n items of a row, each checked to be valid JSON. The
// items share the row's bytes.
func Split(row []byte, n int) ([]json.RawMessage, error) {
	if n < 1 {
		return nil, fmt.Errorf("row holds %d items", n)
	}
	if k := bytes.Count(row, []byte{Sep}) + 1; k != n {
		return nil, fmt.Errorf("row holds %d items, want %d", k, n)
	}
	out := make([]json.RawMessage, 0, n)
	for range n {
		part := row
		if i := bytes.IndexByte(row, Sep); i >= 0 {
			part, row = row[:i], row[i+1:]
		}
		if !json.Valid(part) {
			return nil, fmt.Errorf("item %d of the row is not valid JSON", len(out)+1)
		}
		out = append(out, json.RawMessage(part))
	}
	return out, nil
}
